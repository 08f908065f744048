//! The program around exercise 7's TODOs: everything `exercises/exercise-7` and
//! `solutions/exercise-7` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
//!
//! The program asks whether a P90 TTFT target still holds at twice the traffic, against a
//! running OpenAI-compatible server (`gpt2 serve` or any other). It calibrates (a lone
//! request's TTFT gives the target, a sweep of open-loop rates gives the knee), picks the rate R
//! by the exercise's rule, sends the same load at R and at 2R, writes each run's bench.json
//! under results/, and hands what it measured to the learner's `fill_in_answers`.
//!
//! The exercise's `main` is one call: [`main`] with the exercise's folder and that function.

mod args;
mod calibration;
mod load;
mod question;
mod rate;
mod results;
mod run;
mod server;

use anyhow::Result;
use bench::intervals::Interval;
use bench::sweep::Sweep;
use std::path::Path;
use std::process::ExitCode;

/// One run's P90 TTFT in ms with its 95% interval; `None` where the run has none (every
/// request failed).
pub type P90Ttft = Option<(f64, Interval)>;

/// The learner's `fill_in_answers(target, knee, p90, dir)`, called after the runs: the P90
/// TTFT target in ms, the calibration sweep (its knee with the interval), each run's P90 TTFT
/// (at R, then at 2R), and the exercise's folder, whose answers.toml the answers go in.
pub type FillInAnswers = fn(f64, &Sweep, &[P90Ttft], &Path) -> Result<()>;

/// Exercise 7's `main`: parses the command line, runs the program and ends with
/// `fill_in_answers`, exiting by the course's rule (`course_model::exercise::main`).
/// `manifest_dir` is the exercise's `env!("CARGO_MANIFEST_DIR")`: its folder, and the `src`
/// whose panics mean "not passed yet".
pub fn main(manifest_dir: &str, fill_in_answers: FillInAnswers) -> ExitCode {
    course_model::exercise::main(manifest_dir, |args: args::Args, dir: &Path| {
        run::run(fill_in_answers, &args, dir)
    })
}
