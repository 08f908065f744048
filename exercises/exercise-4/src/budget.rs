//! The savings arithmetic of a profile read as a budget.
//!
//! A profile's lines add up to the step time, like the lines of a budget add up to its total.
//! Removing part of one line saves at most that line; what you save is the part you remove.
//!
//! TODO (you): implement the five functions below. The tests at the bottom pin the chapter's
//! illustrative case: `cargo test --release -p exercise-4`.

/// A line's share of the step, in percent: 6 ms of a 40 ms step is 15%.
pub fn share_pct(line_ms: f64, step_ms: f64) -> f64 {
    // TODO
    let _ = (line_ms, step_ms);
    todo!("share_pct: write it in exercises/exercise-4/src/budget.rs")
}

/// Milliseconds saved when a fix removes `removed_fraction` (0 to 1) of a line's time.
pub fn saving_ms(line_ms: f64, removed_fraction: f64) -> f64 {
    // TODO
    let _ = (line_ms, removed_fraction);
    todo!("saving_ms: write it in exercises/exercise-4/src/budget.rs")
}

/// That saving as a share of the step, in percent.
pub fn saving_pct(saving_ms: f64, step_ms: f64) -> f64 {
    // TODO
    let _ = (saving_ms, step_ms);
    todo!("saving_pct: write it in exercises/exercise-4/src/budget.rs")
}

/// The step time once the saving is made.
pub fn new_step_ms(step_ms: f64, saving_ms: f64) -> f64 {
    // TODO
    let _ = (step_ms, saving_ms);
    todo!("new_step_ms: write it in exercises/exercise-4/src/budget.rs")
}

/// The step-time saving in percent when a fix removes `removed_fraction` of an op whose share of
/// the step is `op_share_pct` (percent): what you apply to your own profile, where you know
/// shares rather than milliseconds.
pub fn step_saving_pct(op_share_pct: f64, removed_fraction: f64) -> f64 {
    // TODO
    let _ = (op_share_pct, removed_fraction);
    todo!("step_saving_pct: write it in exercises/exercise-4/src/budget.rs")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn the_illustrative_activations_line() {
        // The chapter's 40 ms decode step: activations and elementwise take 6 ms.
        assert!(close(share_pct(6.0, 40.0), 15.0), "6 ms of 40 ms is 15%, got {}", share_pct(6.0, 40.0));
        let saved = saving_ms(6.0, 2.0 / 3.0);
        assert!(close(saved, 4.0), "removing two thirds of 6 ms saves 4 ms, got {saved}");
        assert!(close(saving_pct(saved, 40.0), 10.0), "4 ms of 40 ms is 10%, got {}", saving_pct(saved, 40.0));
        assert!(close(new_step_ms(40.0, saved), 36.0), "40 ms − 4 ms is 36 ms, got {}", new_step_ms(40.0, saved));
    }

    #[test]
    fn every_line_of_the_illustrative_table() {
        let lines = [(22.0, 55.0), (10.0, 25.0), (6.0, 15.0), (2.0, 5.0)];
        for (ms, pct) in lines {
            assert!(close(share_pct(ms, 40.0), pct), "{ms} ms of 40 ms is {pct}%, got {}", share_pct(ms, 40.0));
        }
        let total: f64 = lines.iter().map(|(ms, _)| share_pct(*ms, 40.0)).sum();
        assert!(close(total, 100.0), "the shares of a whole budget add up to 100%, got {total}");
    }

    #[test]
    fn working_in_shares_gives_the_same_answer_as_working_in_ms() {
        // Two thirds of a 15% line is 10% of the step, as in milliseconds above.
        assert!(close(step_saving_pct(15.0, 2.0 / 3.0), 10.0), "got {}", step_saving_pct(15.0, 2.0 / 3.0));
        for (line, step, fraction) in [(6.0, 40.0, 0.5), (22.0, 40.0, 0.1), (3.3, 12.0, 1.0)] {
            let via_ms = saving_pct(saving_ms(line, fraction), step);
            let via_share = step_saving_pct(share_pct(line, step), fraction);
            assert!(close(via_ms, via_share), "{via_ms} vs {via_share}");
        }
    }

    #[test]
    fn a_saving_never_exceeds_its_line() {
        assert!(close(saving_ms(6.0, 1.0), 6.0), "removing all of a line saves the whole line");
        assert!(close(saving_ms(6.0, 0.0), 0.0), "removing nothing saves nothing");
        assert!(close(step_saving_pct(15.0, 1.0), 15.0), "the ceiling is the line's share");
        assert!(close(new_step_ms(40.0, 0.0), 40.0));
    }
}
