//! Exercise 7's rules, shared by its program and the grader: the P90 TTFT target a lone
//! request's TTFT sets ([`target_for`]), the rule that picks the rate R ([`RATE_RULE`],
//! [`RateRule`]), and what a P90's interval says about the target ([`Verdict`]). The program
//! computes with them; `course check 7` checks the learner's runs and answers by them.

use crate::text::show;

/// The exercise page's rule, used when the key sets no target: P90 TTFT at most this many
/// times a lone request's median TTFT (queueing may add three times the work itself), in whole
/// ms. Measured on the learner's machine, so a knee exists on any machine; a learner never
/// chooses it, and their calibration must have used it.
pub const TARGET_PER_LONE_TTFT: f64 = 4.0;

/// The target the rule gives for a lone request's median TTFT.
pub fn target_for(lone_median_ttft_ms: f64) -> f64 {
    (TARGET_PER_LONE_TTFT * lone_median_ttft_ms)
        .round()
        .max(1.0)
}

/// Exercise 7's rule for its rate R, in the words the exercise page, its README and its program
/// use.
pub const RATE_RULE: &str =
    "R is the highest rate at which the calibration sweep's target held, so that 2R is above it";

/// The rule for R, from the calibration sweep: the highest rate that held (the sweep stops at
/// the first rate that fails).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateRule {
    /// The highest rate of the sweep at which the target held, req/s.
    pub highest_held: f64,
}

impl RateRule {
    /// The rule from a sweep's rates, in the order tried, and whether the target held at each.
    pub fn from_sweep(points: impl IntoIterator<Item = (f64, bool)>) -> Result<RateRule, String> {
        let mut highest = None;
        let mut first = None;
        for (rate, holds) in points {
            first.get_or_insert(rate);
            if !holds {
                break;
            }
            highest = Some(rate);
        }
        match (highest, first) {
            (Some(highest_held), _) => Ok(RateRule { highest_held }),
            (None, Some(r)) => Err(format!(
                "the target failed already at {} req/s, the lowest rate the sweep tried, so no rate held: give lower rates with --sweep-rates (e.g. {}) or check the server is not busy with something else",
                show(r),
                [0.25, 0.5, 1.0].map(|f| show(f * r)).join(",")
            )),
            (None, None) => Err("the sweep tried no rate".to_string()),
        }
    }

    /// R by the rule.
    pub fn rate(&self) -> f64 {
        self.highest_held
    }

    /// Whether R = `rate` follows the rule: at or below the highest rate that held, with 2R
    /// above it. `Err` says what is wrong.
    pub fn check_rate(&self, rate: f64) -> Result<(), String> {
        let h = self.highest_held;
        if rate > h && !close(rate, h) {
            Err(format!(
                "R = {} req/s is above {} req/s, the highest rate at which the sweep's target held",
                show(rate),
                show(h)
            ))
        } else if 2.0 * rate <= h {
            Err(format!(
                "2R = {} req/s is not above {} req/s, the highest rate at which the sweep's target held",
                show(2.0 * rate),
                show(h)
            ))
        } else {
            Ok(())
        }
    }

    /// Whether runs at `rate` and `double` follow the rule: R by [`RateRule::check_rate`], and
    /// the second run at twice it.
    pub fn check(&self, rate: f64, double: f64) -> Result<(), String> {
        self.check_rate(rate)?;
        if close(double, 2.0 * rate) {
            Ok(())
        } else {
            Err(format!(
                "the second run was at {} req/s, not 2R = {} req/s",
                show(double),
                show(2.0 * rate)
            ))
        }
    }
}

/// Equal but for rounding.
fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// What a P90 and its interval say about a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Holds,
    Fails,
    CannotTell,
}

impl Verdict {
    /// The verdict of a 95% interval `[low, high]` against `target`.
    pub fn of(ci: [f64; 2], target: f64) -> Verdict {
        let [low, high] = ci;
        if high <= target {
            Verdict::Holds
        } else if low > target {
            Verdict::Fails
        } else {
            Verdict::CannotTell
        }
    }

    /// The answer written in answers.toml.
    pub fn as_answer(self) -> &'static str {
        match self {
            Verdict::Holds => "yes",
            Verdict::Fails => "no",
            Verdict::CannotTell => "cannot tell",
        }
    }

    /// Reads an answer: yes / no / cannot tell, in a few phrasings. Anything else (a list of
    /// all three, a hedge that names two) is not an answer.
    pub fn from_answer(text: &str) -> Option<Verdict> {
        let words: String = text
            .to_lowercase()
            .replace(['’', '\''], "")
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { ' ' })
            .collect();
        let phrase = words.split_whitespace().collect::<Vec<_>>().join(" ");
        let holds = [
            "yes",
            "y",
            "true",
            "holds",
            "it holds",
            "the target holds",
            "yes it holds",
            "met",
            "it is met",
        ];
        let fails = [
            "no",
            "n",
            "false",
            "fails",
            "it fails",
            "the target fails",
            "does not hold",
            "it does not hold",
            "doesnt hold",
            "it doesnt hold",
            "no it does not hold",
            "not met",
            "missed",
        ];
        let cannot = [
            "cannot tell",
            "can not tell",
            "cant tell",
            "cannot tell at this sample size",
            "cannot be told",
            "inconclusive",
            "undecided",
            "too close to call",
            "not enough data",
            "unknown",
        ];
        if holds.contains(&phrase.as_str()) {
            Some(Verdict::Holds)
        } else if fails.contains(&phrase.as_str()) {
            Some(Verdict::Fails)
        } else if cannot.contains(&phrase.as_str()) {
            Some(Verdict::CannotTell)
        } else {
            None
        }
    }
}
