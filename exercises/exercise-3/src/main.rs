//! Exercise 3: Profile a forward pass — the PyTorch Profiler recipe's "try it", in candle.
//!
//! Loads GPT-2 (the real checkpoint by default; offline, the synthetic one with GPT-2 small's
//! shapes, with a notice), runs forward passes under the profiler, prints the top-ops table
//! sorted by self CPU time (self CUDA time on a GPU) with each op's roofline (against this
//! machine's measured ceilings) and saves the profile to results/report.json, the file
//! `course check 3` grades your answers against.
//!
//! Before the profile runs, in a terminal, it asks for your prediction (which op will top the
//! table, and its share) when answers.toml holds none yet, and records it there with the time.
//!
//! This file holds what you write: the functions below, which the program calls before the
//! profile and after it (the program is crates/driver-exercise-3; its profile.rs reads top to
//! bottom).
//!
//! TODO (you): run it (`cargo run -p exercise-3`), read the table, and fill in answers.toml:
//! the three ops with the largest self time with their shares, and your plan to cut the step
//! time by 10%: the op to attack, the cut you expect, the mechanism, and why.

use std::path::Path;
use std::process::ExitCode;

use driver_exercise_3::{Learner, Result};

fn main() -> ExitCode {
    driver_exercise_3::main(
        env!("CARGO_MANIFEST_DIR"),
        Learner::new(predict, fill_in_answers),
    )
}

/// Your prediction, before the profile runs: asked in a terminal when answers.toml holds none
/// yet, and recorded there with the time (without a terminal it says how to make one).
fn predict(dir: &Path) -> Result<()> {
    // TODO: you type your prediction when asked (or run `course run 3`, which asks too).
    answers_file::prediction::top_op_first(dir, "exercise-3", 3);
    Ok(())
}

/// The answers: the top three rows with their shares, and the plan.
fn fill_in_answers(report: &Path, dir: &Path, on_cuda: bool) -> Result<()> {
    // TODO: you fill in answers.toml from the table (this program leaves it to you).
    let _ = (report, dir);
    println!(
        "Next: copy the first three rows' names and {} shares into answers.toml; for your plan, read the \
         op's Roofline % and Reading before you choose a mechanism; then `course check 3`.",
        if on_cuda { "Self CUDA %" } else { "Self CPU %" }
    );
    Ok(())
}
