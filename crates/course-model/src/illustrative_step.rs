//! Exercise 4's illustrative decode step, drawn per learner: milliseconds per budget line
//! and the part of the activations line a fix removes (not measured). Exercise 4 prints the
//! learner's step and its tests work it; `course check 4` grades the answers against the same
//! draw ([`IllustrativeStep::for_learner`]), so both take it from here.

use crate::text::show;
use rand::Rng;

/// The exercise whose variant this is (the seed mixes it with the id).
const EXERCISE: u32 = 4;

/// The four lines of a step, in the chapter's order; the names `bench::budget::Line::name`
/// gives them (a test holds the two together).
pub const LINES: [&str; 4] = [
    "matmuls",
    "attention",
    "activations and elementwise",
    "everything else",
];

/// The line whose saving is asked: the activations, which a fused kernel attacks.
pub const ACTIVATIONS: usize = 2;

/// A part of a line a fix removes, as a learner reads it ("two thirds").
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Fraction {
    pub numerator: u32,
    pub denominator: u32,
}

/// The fractions a variant asks about: each below 1, so a saving never exceeds its line.
const FRACTIONS: [(u32, u32); 9] = [
    (1, 4),
    (1, 3),
    (1, 2),
    (2, 3),
    (3, 4),
    (1, 5),
    (2, 5),
    (3, 5),
    (4, 5),
];

impl Fraction {
    pub fn value(self) -> f64 {
        f64::from(self.numerator) / f64::from(self.denominator)
    }

    /// In words: "a quarter", "two thirds", "half".
    pub fn words(self) -> String {
        let count = ["zero", "a", "two", "three", "four"]
            .get(self.numerator as usize)
            .copied()
            .unwrap_or("some");
        let (one, many) = match self.denominator {
            2 => ("half", "halves"),
            3 => ("third", "thirds"),
            4 => ("quarter", "quarters"),
            5 => ("fifth", "fifths"),
            _ => return format!("{}/{}", self.numerator, self.denominator),
        };
        match (self.numerator, self.denominator) {
            (1, 2) => "half".to_string(),
            (1, _) => format!("{count} {one}"),
            _ => format!("{count} {many}"),
        }
    }
}

/// An illustrative decode step (not measured): milliseconds per line, and the part of the
/// activations line a fix removes. A learner's is drawn from their id; the chapter's worked
/// example is [`IllustrativeStep::example`], which no learner is ever asked.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct IllustrativeStep {
    /// Whole milliseconds per line, in the order of [`LINES`].
    pub lines_ms: [f64; 4],
    pub removed: Fraction,
}

/// The answers of an illustrative step, by `answers.toml` field, in the template's order.
pub const FIELDS: [&str; 4] = [
    "activations_share_pct",
    "saving_ms",
    "saving_pct",
    "new_step_ms",
];

/// How far every answer of a learner's variant stays from the worked example's: far more than
/// any tolerance a key sets, so the chapter's numbers never pass for a learner's.
const APART_FROM_EXAMPLE: f64 = 0.5;

impl IllustrativeStep {
    /// The chapter's worked example: a 40 ms step (22, 10, 6 and 2 ms), two thirds of the
    /// activations removed. The book and `course bench budget` show it (bench's ILLUSTRATIVE).
    pub fn example() -> IllustrativeStep {
        IllustrativeStep {
            lines_ms: [22.0, 10.0, 6.0, 2.0],
            removed: Fraction {
                numerator: 2,
                denominator: 3,
            },
        }
    }

    /// `learner_id`'s step: `course check 4`, `course grade` and the exercise draw the same one.
    /// Whole milliseconds that add up to the step; the activations line a multiple of the
    /// fraction's denominator (so the saving is whole milliseconds too), 8% to 30% of the step;
    /// the matmuls the largest line, as in a GPU decode step; every answer well apart from the
    /// worked example's.
    pub fn for_learner(learner_id: &str) -> IllustrativeStep {
        let mut rng = crate::variant::rng(learner_id, EXERCISE);
        let example = IllustrativeStep::example().answers();
        // A draw near the example is drawn again; the bound only makes the loop total (one in
        // three draws is near it, so 64 in a row do not happen).
        let mut step = IllustrativeStep::draw(&mut rng);
        for _ in 0..64 {
            if step
                .answers()
                .iter()
                .zip(&example)
                .all(|(a, e)| (a.1 - e.1).abs() > APART_FROM_EXAMPLE)
            {
                break;
            }
            step = IllustrativeStep::draw(&mut rng);
        }
        step
    }

    fn draw(rng: &mut crate::variant::VariantRng) -> IllustrativeStep {
        let step: u32 = rng.random_range(30..=90);
        let (numerator, denominator) = FRACTIONS[rng.random_range(0..FRACTIONS.len())];
        // From 30 ms up, 8% to 30% of the step holds a multiple of every denominator (≤ 5).
        let lowest = (8 * step).div_ceil(100 * denominator);
        let highest = (30 * step) / (100 * denominator);
        let activations = denominator * rng.random_range(lowest..=highest.max(lowest));
        let other = rng.random_range(1..=(8 * step / 100).max(1));
        let attention = rng.random_range(15 * step / 100..=25 * step / 100);
        // At least 37% of the step is left: more than attention (≤ 25%) or activations (≤ 30%).
        let matmuls = step - activations - other - attention;
        IllustrativeStep {
            lines_ms: [matmuls, attention, activations, other].map(f64::from),
            removed: Fraction {
                numerator,
                denominator,
            },
        }
    }

    pub fn step_ms(&self) -> f64 {
        self.lines_ms.iter().sum()
    }

    pub fn activations_ms(&self) -> f64 {
        self.lines_ms[ACTIVATIONS]
    }

    /// The expected answers, by field ([`FIELDS`]).
    pub fn answers(&self) -> [(&'static str, f64); 4] {
        let step = self.step_ms();
        let saving = self.activations_ms() * self.removed.value();
        [
            (FIELDS[0], 100.0 * self.activations_ms() / step),
            (FIELDS[1], saving),
            (FIELDS[2], 100.0 * saving / step),
            (FIELDS[3], step - saving),
        ]
    }

    /// The step in one sentence, as the exercise prints it and the feedback shows it.
    pub fn describe(&self) -> String {
        let lines: Vec<String> = LINES
            .iter()
            .zip(self.lines_ms)
            .map(|(name, ms)| format!("{name} {} ms", show(ms)))
            .collect();
        let ms = show(self.step_ms());
        // "an 80 ms step", "an 18 ms step": the article follows the spoken number.
        let article = if ms.starts_with('8') || ms == "11" || ms == "18" {
            "an"
        } else {
            "a"
        };
        format!(
            "{article} {ms} ms decode step (illustrative, not measured): {}; a fix removes {} of the activations line",
            lines.join(", "),
            self.removed.words()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids() -> impl Iterator<Item = String> {
        (0..2000).map(|i| format!("learner-{i}"))
    }

    #[test]
    fn a_learner_always_gets_the_same_step_and_two_learners_different_ones() {
        assert_eq!(
            IllustrativeStep::for_learner("alice"),
            IllustrativeStep::for_learner(" Alice")
        );
        assert_ne!(
            IllustrativeStep::for_learner("alice"),
            IllustrativeStep::for_learner("bob")
        );
        let distinct: std::collections::BTreeSet<String> = ids()
            .map(|id| format!("{:?}", IllustrativeStep::for_learner(&id)))
            .collect();
        assert!(
            distinct.len() > 1800,
            "2000 learners share few steps: {} distinct",
            distinct.len()
        );
    }

    #[test]
    fn every_variant_is_honest_and_none_is_the_worked_example() {
        let example = IllustrativeStep::example().answers();
        for id in ids() {
            let step = IllustrativeStep::for_learner(&id);
            let [matmuls, attention, activations, other] = step.lines_ms;
            let total = step.step_ms();
            assert!(
                step.lines_ms
                    .iter()
                    .all(|ms| *ms >= 1.0 && ms.fract() == 0.0),
                "{id}: whole milliseconds: {step:?}"
            );
            assert!((30.0..=90.0).contains(&total), "{id}: {step:?}");
            let shares: f64 = step.lines_ms.iter().map(|ms| 100.0 * ms / total).sum();
            assert!(
                (shares - 100.0).abs() < 1e-9,
                "{id}: the shares add up to the step: {shares}"
            );
            let share = 100.0 * activations / total;
            assert!(
                (8.0..=30.0).contains(&share),
                "{id}: activations at {share}%"
            );
            assert!(
                matmuls > attention && matmuls > activations && matmuls > other,
                "{id}: the matmuls lead: {step:?}"
            );
            let [(_, got_share), (_, saving), (_, saving_pct), (_, new_step)] = step.answers();
            assert_eq!(got_share, share);
            assert!(
                step.removed.value() > 0.0 && step.removed.value() < 1.0,
                "{id}"
            );
            assert!(
                saving < activations && saving_pct < share,
                "{id}: the ceiling rule: a line saves at most its share"
            );
            assert!(
                (saving - saving.round()).abs() < 1e-9,
                "{id}: the saving is whole milliseconds: {saving}"
            );
            assert!((new_step + saving - total).abs() < 1e-9);
            for ((field, a), (_, e)) in step.answers().iter().zip(&example) {
                assert!(
                    (a - e).abs() > APART_FROM_EXAMPLE,
                    "{id}: {field} = {a} is the worked example's {e}"
                );
            }
        }
    }

    #[test]
    fn fractions_read_as_words() {
        let words = |n, d| {
            Fraction {
                numerator: n,
                denominator: d,
            }
            .words()
        };
        assert_eq!(words(2, 3), "two thirds");
        assert_eq!(words(1, 4), "a quarter");
        assert_eq!(words(1, 2), "half");
        assert_eq!(words(3, 5), "three fifths");
        for (n, d) in FRACTIONS {
            assert!(!words(n, d).contains('/'), "{n}/{d}");
        }
    }

    #[test]
    fn the_description_names_every_line_and_the_fraction() {
        let step = IllustrativeStep::example();
        assert_eq!(
            step.describe(),
            "a 40 ms decode step (illustrative, not measured): matmuls 22 ms, attention 10 ms, activations and elementwise 6 ms, \
             everything else 2 ms; a fix removes two thirds of the activations line"
        );
    }
}
