//! The verdict of comparing B against A, from the 95% interval of the ratio statistic(B) /
//! statistic(A) and a **minimum effect** *t*: the smallest relative change worth acting on
//! (5% by default), a choice the reader makes, not a property of the noise.
//!
//! - **faster** / **slower**: the whole interval lies beyond the band [1 − t, 1 + t], on the good
//!   or the bad side;
//! - **same**: the whole interval lies inside the band: whatever the difference is, it is smaller
//!   than t;
//! - **inconclusive**: the interval reaches across an edge of the band: this run cannot tell.
//!   It may still exclude 1 ([`excludes_one`]): B differs, but not surely by t.
//!
//! One rule, here, for everything that writes or checks a verdict: `course bench --compare`,
//! exercises 2, 5 and 7 (through the bench crate) and the grader's readers.

use serde::{Deserialize, Serialize};

/// Whether a bigger value of the compared metric is better (throughput) or worse (latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Lower,
    Higher,
}

/// What a comparison concludes about B relative to A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    Same,
    Inconclusive,
}

impl Verdict {
    pub const ALL: [Verdict; 4] = [
        Verdict::Faster,
        Verdict::Slower,
        Verdict::Same,
        Verdict::Inconclusive,
    ];

    /// The name written to `bench.json` and asked for in answer files.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::Same => "same",
            Verdict::Inconclusive => "inconclusive",
        }
    }

    /// `faster` or `slower`: a claim that B differs from A by at least the minimum effect.
    pub fn is_a_difference(self) -> bool {
        matches!(self, Verdict::Faster | Verdict::Slower)
    }
}

// ANCHOR: verdict
/// The verdict for an interval `[ci_low, ci_high]` of B/A (`ci_high` may be `f64::INFINITY`:
/// no upper bound) against the band `[1 − min_effect, 1 + min_effect]`.
///
/// Edges count as inside the band: an interval that ends exactly at 1 − t is not beyond it.
pub fn verdict(ci_low: f64, ci_high: f64, min_effect: f64, better: Better) -> Verdict {
    let below = ci_high < 1.0 - min_effect;
    let above = ci_low > 1.0 + min_effect;
    let inside = ci_low >= 1.0 - min_effect && ci_high <= 1.0 + min_effect;
    match (better, below, above) {
        (Better::Lower, true, _) | (Better::Higher, _, true) => Verdict::Faster,
        (Better::Lower, _, true) | (Better::Higher, true, _) => Verdict::Slower,
        _ if inside => Verdict::Same,
        _ => Verdict::Inconclusive,
    }
}
// ANCHOR_END: verdict

/// Whether the interval leaves out 1: the run shows *some* difference, whatever its size.
pub fn excludes_one(ci_low: f64, ci_high: f64) -> bool {
    ci_high < 1.0 || ci_low > 1.0
}

/// Worked cases of [`verdict`], one table for the crate's own tests and for exercise 2's
/// checks of the learner's rule (crates/driver-exercise-2), so both hold the rule to the same
/// cases.
pub mod cases {
    use super::{Better, Verdict};

    /// What a case shows, as exercise 2's checks group them.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Topic {
        /// Higher is better: `faster` needs the whole interval above the band.
        Throughput,
        /// Lower is better: a ratio below the band is `faster`.
        Latency,
        /// `same` is an interval inside the band, edges included; across an edge, `inconclusive`.
        SameOrCannotTell,
        /// A minimum effect of 0 still needs the whole interval on one side of 1.
        NoBand,
    }

    /// One interval of B/A, its minimum effect, the direction (`None`: either), and the verdict.
    #[derive(Debug, Clone, Copy)]
    pub struct Case {
        pub topic: Topic,
        pub ci: (f64, f64),
        pub min_effect: f64,
        pub better: Option<Better>,
        pub expect: Verdict,
        pub why: &'static str,
    }

    impl Case {
        /// The directions the case holds in.
        pub fn directions(&self) -> Vec<Better> {
            self.better
                .map_or(vec![Better::Higher, Better::Lower], |b| vec![b])
        }
    }

    const fn case(
        topic: Topic,
        ci: (f64, f64),
        min_effect: f64,
        better: Option<Better>,
        expect: Verdict,
        why: &'static str,
    ) -> Case {
        Case {
            topic,
            ci,
            min_effect,
            better,
            expect,
            why,
        }
    }

    use Better::{Higher, Lower};
    use Topic::{Latency, NoBand, SameOrCannotTell, Throughput};
    use Verdict::{Faster, Inconclusive, Same, Slower};
    const INF: f64 = f64::INFINITY;
    const HIGHER: Option<Better> = Some(Higher);
    const LOWER: Option<Better> = Some(Lower);
    const EITHER: Option<Better> = None;

    /// Every case, each with what it shows.
    #[rustfmt::skip]
    pub const CASES: &[Case] = &[
        case(Throughput, (1.3, 1.6), 0.25, HIGHER, Faster, "the whole interval above the band"),
        case(Throughput, (1.25, 1.6), 0.25, HIGHER, Inconclusive, "touching the band is not a difference"),
        case(Throughput, (1.1, 1.6), 0.25, HIGHER, Inconclusive, "1.35 whose interval straddles 1.25"),
        case(Throughput, (0.4, 0.7), 0.25, HIGHER, Slower, "fewer tokens per second is slower"),
        case(Throughput, (1.3, INF), 0.25, HIGHER, Faster, "no upper bound, but surely above the band"),
        case(Throughput, (1.10, 1.20), 0.05, HIGHER, Faster, "above a 5% band"),
        case(Throughput, (0.80, 0.90), 0.05, HIGHER, Slower, "below a 5% band"),
        case(Latency, (0.4, 0.7), 0.25, LOWER, Faster, "a smaller P90 latency is faster"),
        case(Latency, (1.3, 1.6), 0.25, LOWER, Slower, "a larger P90 latency is slower"),
        case(Latency, (0.5, 0.75), 0.25, LOWER, Inconclusive, "touching 1 - min_effect is not enough"),
        case(Latency, (0.80, 0.90), 0.05, LOWER, Faster, "below a 5% band"),
        case(Latency, (1.10, INF), 0.05, LOWER, Slower, "no upper bound, but surely above the band"),
        case(SameOrCannotTell, (0.9, 1.1), 0.25, EITHER, Same, "an interval inside the band"),
        case(SameOrCannotTell, (0.75, 1.25), 0.25, EITHER, Same, "the band's edges are inside it"),
        case(SameOrCannotTell, (0.97, 1.04), 0.05, EITHER, Same, "inside a 5% band"),
        case(SameOrCannotTell, (0.5, 1.5), 0.25, EITHER, Inconclusive, "an interval wider than the band"),
        case(SameOrCannotTell, (0.97, 1.08), 0.05, EITHER, Inconclusive, "across 1 and past an edge"),
        case(SameOrCannotTell, (0.80, 0.97), 0.05, EITHER, Inconclusive, "leaves out 1, not surely by 5%"),
        case(SameOrCannotTell, (0.8, INF), 0.25, EITHER, Inconclusive, "no upper bound"),
        case(SameOrCannotTell, (0.80, 0.95), 0.05, EITHER, Inconclusive, "touching 1 - t is not beyond it"),
        case(NoBand, (1.001, 1.002), 0.0, HIGHER, Faster, "above 1, however little"),
        case(NoBand, (1.001, 1.002), 0.0, LOWER, Slower, "above 1, however little"),
        case(NoBand, (0.999, 1.002), 0.0, HIGHER, Inconclusive, "an interval that contains 1"),
        case(NoBand, (1.0, 1.0), 0.0, HIGHER, Same, "exactly 1"),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_worked_case_gets_its_verdict() {
        for case in cases::CASES {
            for better in case.directions() {
                let (low, high) = case.ci;
                assert_eq!(
                    verdict(low, high, case.min_effect, better),
                    case.expect,
                    "{case:?} {better:?}: {}",
                    case.why
                );
            }
        }
    }

    #[test]
    fn excluding_one_is_reported_apart_from_the_verdict() {
        assert!(excludes_one(0.80, 0.97));
        assert!(excludes_one(1.01, 1.30));
        assert!(!excludes_one(0.97, 1.04));
        assert!(
            !excludes_one(0.5, 1.0),
            "an interval that ends at 1 contains it"
        );
    }
}
