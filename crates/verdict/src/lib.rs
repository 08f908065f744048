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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beyond_the_band_is_a_difference_in_the_direction_the_metric_says() {
        assert_eq!(verdict(0.80, 0.90, 0.05, Better::Lower), Verdict::Faster);
        assert_eq!(verdict(0.80, 0.90, 0.05, Better::Higher), Verdict::Slower);
        assert_eq!(verdict(1.10, 1.20, 0.05, Better::Lower), Verdict::Slower);
        assert_eq!(verdict(1.10, 1.20, 0.05, Better::Higher), Verdict::Faster);
        assert_eq!(
            verdict(1.10, f64::INFINITY, 0.05, Better::Lower),
            Verdict::Slower,
            "no upper bound, but surely above the band"
        );
    }

    #[test]
    fn inside_the_band_is_the_same_and_across_an_edge_is_inconclusive() {
        for better in [Better::Lower, Better::Higher] {
            assert_eq!(verdict(0.97, 1.04, 0.05, better), Verdict::Same);
            assert_eq!(
                verdict(0.95, 1.05, 0.05, better),
                Verdict::Same,
                "the edges are inside"
            );
            assert_eq!(
                verdict(0.80, 0.97, 0.05, better),
                Verdict::Inconclusive,
                "excludes 1, not surely by 5%"
            );
            assert_eq!(
                verdict(0.49, 1.14, 0.05, better),
                Verdict::Inconclusive,
                "cannot tell"
            );
            assert_eq!(
                verdict(0.90, f64::INFINITY, 0.05, better),
                Verdict::Inconclusive
            );
            assert_eq!(
                verdict(0.80, 0.95, 0.05, better),
                Verdict::Inconclusive,
                "touching 1 - t is not beyond it"
            );
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
