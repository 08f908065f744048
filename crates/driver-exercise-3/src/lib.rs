//! The program around exercise 3's TODOs: everything `exercises/exercise-3` and
//! `solutions/exercise-3` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
//!
//! The program loads GPT-2 (the real checkpoint by default; offline, the synthetic one with GPT-2
//! small's shapes, with a notice), asks for the learner's prediction of the top op, runs forward
//! passes under the profiler, prints the top-ops table sorted by self CPU time (self CUDA time on
//! a GPU) with each op's roofline against this machine's measured ceilings, saves the profile to
//! results/report.json (the file `course check 3` grades against), then hands the report to the
//! learner's answers.
//!
//! - [`args`]: the command line (`--model`, the schedule, `--row-limit`, `--profile-memory`).
//! - [`profile`]: the load, the profile and the files it writes, in the order a run does them.

pub mod args;
pub mod profile;

use std::path::Path;
use std::process::ExitCode;

pub use anyhow::Result;

/// Counts allocations, so that a profile can record memory (the profiler's memory columns).
#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

/// The functions the learner writes: the exercise's TODOs, called by the run in this order.
#[derive(Clone, Copy)]
pub struct Learner {
    pub(crate) predict: fn(dir: &Path) -> Result<()>,
    pub(crate) fill_in_answers: fn(report: &Path, dir: &Path, on_cuda: bool) -> Result<()>,
}

impl Learner {
    /// `predict` runs before the profile, with the exercise's folder: the prediction of the
    /// top op. `fill_in_answers` runs after it, with results/report.json's path, the exercise's
    /// folder, and whether the table was ranked by CUDA time: the answers.
    pub fn new(
        predict: fn(dir: &Path) -> Result<()>,
        fill_in_answers: fn(report: &Path, dir: &Path, on_cuda: bool) -> Result<()>,
    ) -> Self {
        Self {
            predict,
            fill_in_answers,
        }
    }
}

/// Exercise 3's `main`: parses the command line, runs the profile around the `learner`'s functions
/// and exits by the course's rule (`course_model::exercise::main`). `manifest_dir` is the
/// exercise's own folder, `env!("CARGO_MANIFEST_DIR")` in its crate: its answers.toml and
/// results/ by default, and where a panic counts as the learner's (a `todo!()` left).
pub fn main(manifest_dir: &str, learner: Learner) -> ExitCode {
    course_model::exercise::main(manifest_dir, |args, dir| profile::run(args, dir, learner))
}
