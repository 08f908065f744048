//! The program around exercise 2's TODOs: everything `exercises/exercise-2` and
//! `solutions/exercise-2` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
//!
//! The program asks whether batch size 16 is faster than batch size 8 for some traffic. It
//! starts the course's `serve` at both batch sizes, calibrates each one's saturation with a
//! closed loop, then sends the same open-loop traffic below and above saturation and compares
//! batch 16 with batch 8 on output tokens/s, P90 TTFT and P90 TPOT, by the learner's
//! `percentile` and `verdict`. It writes results/bench.json and results/latency.svg, and hands
//! the report to the learner's `fill_in_answers`.
//!
//! The exercise's `main` is one call: [`main`] with the exercise's folder and a [`Learner`].

mod args;
mod calibration;
pub mod checks;
pub mod comparison;
mod measure;
mod run;
mod server;
mod summary;

use anyhow::Result;
use bench::report::Report;
use bench::stats::{Better, Verdict};
use std::path::Path;
use std::process::ExitCode;

pub use comparison::Statistics;

/// The two scenarios' names in bench.json (each comparison's `scenario`): below batch A's
/// saturation (0.6 of it), and above both (twice the larger).
pub const SCENARIOS: [&str; 2] = ["below", "above"];

/// `percentile(samples, p)`: the `p`-th percentile (0 to 100) of `samples`, interpolated
/// between the two nearest ranks; `None` for no samples or a `p` outside 0..=100.
pub type Percentile = fn(&[f64], f64) -> Option<f64>;

/// `verdict(ci_low, ci_high, min_effect, better)`: the verdict on B against A from the 95%
/// interval of the ratio B / A and the band of the minimum effect.
pub type VerdictRule = fn(f64, f64, f64, Better) -> Verdict;

/// `fill_in_answers(report, dir)`: called last with the report results/bench.json holds and the
/// exercise's folder; the exercise's leaves answers.toml to the learner, the solution's fills it
/// in.
pub type FillInAnswers = fn(&Report, &Path) -> Result<()>;

/// What the learner writes, handed to the program: the two functions of src/stats.rs and
/// `fill_in_answers` of src/main.rs.
#[derive(Clone, Copy)]
pub struct Learner {
    /// src/stats.rs's `percentile`, which every percentile of the comparisons goes through.
    pub percentile: Percentile,
    /// src/stats.rs's `verdict`, which decides every comparison.
    pub verdict: VerdictRule,
    /// src/main.rs's `fill_in_answers`, called last.
    pub fill_in_answers: FillInAnswers,
}

impl Learner {
    /// The learner's `percentile`, `verdict` and `fill_in_answers`, in that order.
    pub fn new(
        percentile: Percentile,
        verdict: VerdictRule,
        fill_in_answers: FillInAnswers,
    ) -> Learner {
        Learner {
            percentile,
            verdict,
            fill_in_answers,
        }
    }

    /// The learner's two statistics, which the comparisons are built on.
    pub fn statistics(&self) -> Statistics {
        Statistics {
            percentile: self.percentile,
            verdict: self.verdict,
        }
    }
}

/// Exercise 2's `main`: parses the command line, runs the program with the learner's
/// functions and exits by the course's rule (`course_model::exercise::main`). `manifest_dir`
/// is the exercise's `env!("CARGO_MANIFEST_DIR")`: its folder, and the `src` whose panics (a
/// `todo!()` left) mean "not passed yet".
pub fn main(manifest_dir: &str, learner: Learner) -> ExitCode {
    course_model::exercise::main(manifest_dir, |args: args::Args, dir: &Path| {
        run::run(&learner, &args, dir)
    })
}
