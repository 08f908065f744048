//! The program around exercise 4's TODOs: everything `exercises/exercise-4` and
//! `solutions/exercise-4` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
//!
//! What it does: applies the learner's savings arithmetic (their `src/budget.rs`, passed in as a
//! [`Learner`]) to their own illustrative decode step, drawn from their learner id, and to their
//! own exercise-3 profile; groups that profile into the chapter's budget lines
//! (`results/budget.json`, which `course check 4` grades); prints the inputs of the
//! memory-traffic prediction; and hands over to the learner's `fill_in_answers`.

mod args;
mod budget_lines;
mod illustrative;
mod own_profile;
mod run;

use std::path::Path;
use std::process::ExitCode;

pub use args::Args;
// What a `fill_in_answers` reads: the learner's step, and the one grouping of a profile into
// budget lines (the one `course check 4` grades by).
pub use bench::budget::from_report;
pub use course_model::illustrative_step::IllustrativeStep;

/// The step-time cut the exercise asks for, in %.
pub const TARGET_PCT: f64 = 10.0;

/// The learner's code, which the program calls: the five functions of `src/budget.rs` and the
/// `fill_in_answers` of `src/main.rs`.
pub struct Learner {
    /// A line's share of the step, in percent.
    pub share_pct: fn(line_ms: f64, step_ms: f64) -> f64,
    /// Milliseconds saved when a fix removes a fraction (0 to 1) of a line's time.
    pub saving_ms: fn(line_ms: f64, removed_fraction: f64) -> f64,
    /// That saving as a share of the step, in percent.
    pub saving_pct: fn(saving_ms: f64, step_ms: f64) -> f64,
    /// The step time once the saving is made.
    pub new_step_ms: fn(step_ms: f64, saving_ms: f64) -> f64,
    /// The step-time saving in percent when a fix removes a fraction of an op's share.
    pub step_saving_pct: fn(op_share_pct: f64, removed_fraction: f64) -> f64,
    /// The answers to `[illustrative]`, `[own]`, `[lines]`, `[bytes]` and `[quantized]`: the learner's step,
    /// the profile read, the command line and the exercise's folder.
    pub fill_in_answers:
        fn(step: &IllustrativeStep, profile: &Path, args: &Args, dir: &Path) -> anyhow::Result<()>,
}

/// The [`Learner`] of a package: the five functions of its module `$budget` (src/budget.rs), named
/// as [`Learner`]'s fields, and its `$fill_in_answers`.
#[macro_export]
macro_rules! learner {
    ($budget:ident, $fill_in_answers:ident) => {
        $crate::Learner {
            share_pct: $budget::share_pct,
            saving_ms: $budget::saving_ms,
            saving_pct: $budget::saving_pct,
            new_step_ms: $budget::new_step_ms,
            step_saving_pct: $budget::step_saving_pct,
            fill_in_answers: $fill_in_answers,
        }
    };
}

/// Exercise 4's program, for the package whose folder is `manifest_dir` (its
/// `env!("CARGO_MANIFEST_DIR")`): parses the command line, runs, and exits as every exercise does
/// (`course_model::exercise::main`).
pub fn main(manifest_dir: &str, learner: Learner) -> ExitCode {
    course_model::exercise::main(manifest_dir, |args: Args, dir: &Path| {
        run::run(&learner, args, dir)
    })
}
