//! The two statistics this exercise asks you to write. The comparison built on them is the
//! program's (crates/driver-exercise-2/src/comparison.rs).
//!
//! TODO (you): implement `percentile` and `verdict`. The tests at the bottom of this file call
//! your two functions and say which one is still wrong: `cargo test -p exercise-2`.
//! Write them yourself: the tests check cases of their own, and `course grade` can run them.

use bench::stats::{Better, Verdict};

/// The `p`-th percentile (`p` from 0 to 100) of `samples`, which may come in any order.
///
/// Use linear interpolation between the two nearest ranks, numpy's default: sort a copy of the
/// samples, take the fractional rank `r = p / 100 × (n − 1)` (0 is the smallest sample, n − 1
/// the largest), and go the fraction `r − ⌊r⌋` of the way from the sample at rank `⌊r⌋` to the
/// one at rank `⌈r⌉`. So P50 of [1, 2, 3, 4] is 2.5 and P90 of 1..=10 is 9.1. Return `None`
/// for an empty slice or a `p` outside 0..=100.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    // TODO: sort a copy of the samples (f64::total_cmp orders floats), then interpolate.
    let _ = (samples, p);
    todo!("percentile: write it in exercises/exercise-2/src/stats.rs (see the comment above it)")
}

/// The verdict on B against A, from the 95% interval `[ci_low, ci_high]` of the ratio
/// statistic(B) / statistic(A) and the minimum effect (0.05: a 5% change is the smallest that
/// matters). `ci_high` is `f64::INFINITY` when the interval has no upper bound.
///
/// The band is `[1 − min_effect, 1 + min_effect]`, its edges included.
/// - `Faster`: the *whole* interval lies beyond the band in the good direction (for a
///   throughput, where `Better::Higher`: `ci_low > 1 + min_effect`; for a latency, where
///   `Better::Lower`: `ci_high < 1 − min_effect`);
/// - `Slower`: the whole interval lies beyond the band in the bad direction;
/// - `Same`: the whole interval lies inside the band (whatever the difference, it is smaller
///   than the minimum effect);
/// - `Inconclusive`: anything else: the interval reaches across an edge of the band, so this
///   run cannot tell, however good the ratio looks.
pub fn verdict(ci_low: f64, ci_high: f64, min_effect: f64, better: Better) -> Verdict {
    // TODO: decide from the interval and the minimum effect, in the direction `better` says.
    let _ = (ci_low, ci_high, min_effect, better);
    todo!("verdict: write it in exercises/exercise-2/src/stats.rs (see the comment above it)")
}

// The tests of your two functions; their cases are in crates/driver-exercise-2/src/checks.rs,
// and they are not the ones the chapter or the doc comments above work through: a function that
// merely fits those examples fails there.
#[cfg(test)]
mod tests {
    driver_exercise_2::tests_of_your_statistics!(
        super::percentile,
        super::verdict,
        include_str!("stats.rs")
    );
}
