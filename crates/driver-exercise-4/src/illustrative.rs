//! The learner's illustrative step as a budget, computed with their functions: what the
//! `[illustrative]` answers ask.

use crate::Learner;
use course_model::illustrative_step::{IllustrativeStep, ACTIVATIONS, LINES};

/// A bar of one block per 2% of the step.
fn bar(pct: f64) -> String {
    "█".repeat((pct / 2.0).round().max(0.0) as usize)
}

/// Prints `step`'s lines with their shares, and what removing the part of its activations line
/// it names saves.
pub(crate) fn print(learner: &Learner, id: &str, step: &IllustrativeStep) {
    let step_ms = step.step_ms();
    println!("Your illustrative {step_ms} ms decode step (learner `{id}`; not measured):");
    for (name, ms) in LINES.iter().zip(step.lines_ms) {
        let share = (learner.share_pct)(ms, step_ms);
        println!("  {name:<28} {ms:>5.1} ms {share:>6.2}%  {}", bar(share));
    }
    let line_ms = step.activations_ms();
    let saved = (learner.saving_ms)(line_ms, step.removed.value());
    println!(
        "Removing {} of \"{}\" saves {saved:.2} ms = {:.2}% of the step; the step becomes {:.2} ms.\n",
        step.removed.words(),
        LINES[ACTIVATIONS],
        (learner.saving_pct)(saved, step_ms),
        (learner.new_step_ms)(step_ms, saved)
    );
}
