//! Exercise 5: Fuse, then judge.
//!
//! The whole story in one run, on your machine: predict what fusing will do; check your ops
//! (src/fused.rs) against candle's unfused ones; profile a forward pass with the stock, unfused
//! ops, with your fusion (stage 1) and with your kernel fix (stage 2), printing what moved in the
//! roofline columns at each stage; then benchmark generation end to end, your final op against
//! the unfused ops, and let the comparison judge whether the system got faster. That program is
//! crates/driver-exercise-5; it calls your ops and the two functions this file passes it.
//!
//! TODO (you): the two stages of src/fused.rs, then run this and fill in answers.toml.

use answers_file::prediction::{self, Outcome};
mod fused;

use anyhow::Result;
use driver_exercise_5::{Learner, Measured};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let ops = (fused::FusedBiasGelu, fused::FastFusedBiasGelu);
    let learner = Learner::new(ops, predict_first, fill_in_answers);
    driver_exercise_5::main(env!("CARGO_MANIFEST_DIR"), learner)
}

/// Your prediction, written down before the first profile runs (asked once, in a terminal). A
/// file it cannot record in is said, and the exercise runs anyway.
fn predict_first(dir: &Path, first_report: &Path) {
    // TODO: you type your prediction when asked (or run `course run 5`, which asks too).
    let answers = dir.join("answers.toml");
    match prediction::FUSION.before_the_profile(&answers, first_report) {
        Ok(Outcome::AlreadyRecorded(p)) => println!("Your prediction (in {}): {}.", answers.display(), p.describe()),
        Ok(Outcome::Made { .. }) => println!("Recorded in {}; now the measurements.", answers.display()),
        Ok(Outcome::Declined) => println!("No prediction made; the next run in a terminal asks again."),
        Ok(Outcome::NoTerminal) => eprintln!(
            "note: not asking for your prediction, as standard input is not a terminal. To make one before the first \
             profile, run `cargo run -p exercise-5` (or `course run 5`) in a terminal, after deleting results/ if it \
             exists; until then the prediction question stays unanswered."
        ),
        Ok(Outcome::AskedByCourse) => {}
        Err(e) => eprintln!("warning: {e:#}; profiling without a prediction."),
    }
}

/// The answers: the fused ops' error, the benchmark's verdict, and what each stage did to its
/// row's roofline and by which mechanism.
fn fill_in_answers(measured: &Measured) -> Result<()> {
    // TODO: you fill in answers.toml from what moved above (this program leaves it to you).
    let _ = measured;
    println!("Next: fill in answers.toml from what moved above, then `course check 5`.");
    Ok(())
}
