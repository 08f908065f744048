//! The savings arithmetic of a profile read as a budget.
//!
//! A profile's lines add up to the step time, like the lines of a budget add up to its total.
//! Removing part of one line saves at most that line; what you save is the part you remove.
//!
//! Solution: the five functions written; the tests at the bottom pass.

/// A line's share of the step, in percent: 5 ms of a 25 ms step is 20%.
pub fn share_pct(line_ms: f64, step_ms: f64) -> f64 {
    100.0 * line_ms / step_ms
}

/// Milliseconds saved when a fix removes `removed_fraction` (0 to 1) of a line's time.
pub fn saving_ms(line_ms: f64, removed_fraction: f64) -> f64 {
    line_ms * removed_fraction
}

/// That saving as a share of the step, in percent.
pub fn saving_pct(saving_ms: f64, step_ms: f64) -> f64 {
    100.0 * saving_ms / step_ms
}

/// The step time once the saving is made.
pub fn new_step_ms(step_ms: f64, saving_ms: f64) -> f64 {
    step_ms - saving_ms
}

/// The step-time saving in percent when a fix removes `removed_fraction` of an op whose share of
/// the step is `op_share_pct` (percent): what you apply to your own profile, where you know
/// shares rather than milliseconds.
pub fn step_saving_pct(op_share_pct: f64, removed_fraction: f64) -> f64 {
    op_share_pct * removed_fraction
}

#[cfg(test)]
mod tests {
    use super::*;
    use course_model::illustrative_step::IllustrativeStep;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_small_step_worked_by_hand() {
        // A 25 ms step (smaller than any step the course draws for a learner): a 5 ms line is
        // 20% of it; removing two fifths of that line saves 2 ms, 8% of the step.
        assert!(
            close(share_pct(5.0, 25.0), 20.0),
            "5 ms of 25 ms is 20%, got {}",
            share_pct(5.0, 25.0)
        );
        let saved = saving_ms(5.0, 0.4);
        assert!(
            close(saved, 2.0),
            "removing two fifths of 5 ms saves 2 ms, got {saved}"
        );
        assert!(
            close(saving_pct(saved, 25.0), 8.0),
            "2 ms of 25 ms is 8%, got {}",
            saving_pct(saved, 25.0)
        );
        assert!(
            close(new_step_ms(25.0, saved), 23.0),
            "25 ms − 2 ms is 23 ms, got {}",
            new_step_ms(25.0, saved)
        );
    }

    /// Steps as the course draws them for learners (these ids are nobody's in particular).
    fn steps() -> Vec<IllustrativeStep> {
        ["ada", "grace", "linus", "barbara", "edsger"]
            .iter()
            .map(|id| IllustrativeStep::for_learner(id))
            .collect()
    }

    #[test]
    fn the_shares_of_a_whole_step_add_up_to_100() {
        for step in steps() {
            let total: f64 = step
                .lines_ms
                .iter()
                .map(|ms| share_pct(*ms, step.step_ms()))
                .sum();
            assert!(
                (total - 100.0).abs() < 1e-9,
                "the shares of {:?} add up to {total}%, not 100%",
                step.lines_ms
            );
        }
    }

    #[test]
    fn working_in_shares_gives_the_same_answer_as_working_in_ms() {
        for step in steps() {
            let (line, total, fraction) =
                (step.activations_ms(), step.step_ms(), step.removed.value());
            let via_ms = saving_pct(saving_ms(line, fraction), total);
            let via_share = step_saving_pct(share_pct(line, total), fraction);
            assert!(close(via_ms, via_share), "{line} ms of {total} ms, removing {fraction}: {via_ms}% in ms, {via_share}% in shares");
            let saved = saving_ms(line, fraction);
            assert!(
                close(new_step_ms(total, saved) + saved, total),
                "the new step and the saving make the old step"
            );
        }
    }

    #[test]
    fn a_saving_never_exceeds_its_line() {
        for step in steps() {
            let (line, total) = (step.activations_ms(), step.step_ms());
            assert!(
                saving_ms(line, step.removed.value()) <= line,
                "a fix saves at most the line it removes time from"
            );
            assert!(
                close(saving_ms(line, 1.0), line),
                "removing all of a line saves the whole line"
            );
            assert!(
                close(
                    step_saving_pct(share_pct(line, total), 1.0),
                    share_pct(line, total)
                ),
                "the ceiling is the line's share"
            );
        }
        assert!(
            close(saving_ms(6.0, 0.0), 0.0),
            "removing nothing saves nothing"
        );
        assert!(close(new_step_ms(40.0, 0.0), 40.0));
    }
}
