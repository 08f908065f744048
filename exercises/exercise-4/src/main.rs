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
use driver_exercise_4::{Args, IllustrativeStep, Learner};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    driver_exercise_4::main(
        env!("CARGO_MANIFEST_DIR"),
        Learner {
            share_pct: budget::share_pct,
            saving_ms: budget::saving_ms,
            saving_pct: budget::saving_pct,
            new_step_ms: budget::new_step_ms,
            step_saving_pct: budget::step_saving_pct,
            fill_in_answers,
        },
    )
}

/// The answers to `[illustrative]`, `[own]`, `[lines]` and `[bytes]`.
fn fill_in_answers(step: &IllustrativeStep, profile: &Path, args: &Args, dir: &Path) -> Result<()> {
    // TODO: you fill in answers.toml from what this printed (this program leaves it to you).
    let _ = (step, profile, args, dir);
    println!("\nNext: fill in answers.toml ([illustrative], [own], [lines] and [bytes]), then `course check 4`.");
    Ok(())
}
