//! Exercise 4: Read a profile as a budget.
//!
//! Applies your savings arithmetic (src/budget.rs) twice: to your own illustrative decode step
//! (explicitly not measured; drawn from your learner id in exercises/learner.toml, so a
//! classmate's step is not yours), and to your own profile from exercise 3
//! (exercise-3/results/report.json), ranked by the column its device is ranked by. The program
//! around your code (the tables, results/budget.json) is crates/driver-exercise-4; it calls the
//! functions this file passes it.
//!
//! TODO (you): the functions in src/budget.rs, then run this and fill in answers.toml.

mod budget;

use anyhow::Result;
use driver_exercise_4::{Args, IllustrativeStep};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Your five functions in src/budget.rs, and fill_in_answers below.
    let learner = driver_exercise_4::learner!(budget, fill_in_answers);
    driver_exercise_4::main(env!("CARGO_MANIFEST_DIR"), learner)
}

/// The answers to `[illustrative]`, `[own]`, `[lines]`, `[bytes]` and `[quantized]`.
fn fill_in_answers(step: &IllustrativeStep, profile: &Path, args: &Args, dir: &Path) -> Result<()> {
    // TODO: you fill in answers.toml from what this printed (this program leaves it to you).
    let _ = (step, profile, args, dir);
    println!("\nNext: fill in answers.toml ([illustrative], [own], [lines], [bytes] and [quantized]), then `course check 4`.");
    Ok(())
}
