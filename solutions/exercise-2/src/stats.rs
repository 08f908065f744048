//! The two statistics this exercise asks you to write, and the comparison built on them.
//!
//! Solution: `percentile` and `verdict` written; the tests at the bottom pass.

use bench::stats::{Better, Comparison, Verdict};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The `p`-th percentile (`p` from 0 to 100) of `samples`, which may come in any order.
///
/// Use linear interpolation between the two nearest ranks, numpy's default: sort the samples,
/// take the fractional rank `r = p / 100 × (n − 1)`, and go the fraction `r − ⌊r⌋` of the way
/// from the sample at rank `⌊r⌋` to the one at rank `⌈r⌉`. So P50 of [1, 2, 3, 4] is 2.5 and
/// P90 of 1..=10 is 9.1. Return `None` for an empty slice or a `p` outside 0..=100.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    if samples.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    let (a, b) = (sorted[lo], sorted[hi]);
    Some(a + (b - a) * (rank - lo as f64))
}

/// The verdict on B against A, from the 95% interval `[ci_low, ci_high]` of the ratio
/// statistic(B) / statistic(A) and the noise threshold (0.05 means "a 5% difference is noise").
///
/// B is `Faster` only when the *whole* interval lies beyond the threshold in the good direction
/// (for a throughput, where `Better::Higher`: `ci_low > 1 + threshold`; for a latency, where
/// `Better::Lower`: `ci_high < 1 − threshold`), `Slower` when the whole interval lies beyond it
/// in the bad direction, and `WithinNoise` otherwise: an interval that reaches into the noise
/// band is not a result, however good the ratio looks.
pub fn verdict(ci_low: f64, ci_high: f64, threshold: f64, better: Better) -> Verdict {
    // The whole interval below the band, or above it; anything touching the band is noise.
    let below = ci_high < 1.0 - threshold;
    let above = ci_low > 1.0 + threshold;
    match better {
        Better::Higher if above => Verdict::Faster,
        Better::Higher if below => Verdict::Slower,
        Better::Lower if below => Verdict::Faster,
        Better::Lower if above => Verdict::Slower,
        _ => Verdict::WithinNoise,
    }
}

/// Bootstrap resamples behind every interval, and their seed (the same data always gives the
/// same interval).
pub const RESAMPLES: usize = 2000;

/// Compares sample `b` against sample `a` on their `p`-th percentile: the ratio P(b) / P(a),
/// its 95% bootstrap interval (resample each side with replacement, take the ratio, keep the
/// central 95% of the ratios), and the verdict. `None` when a side is empty or P(a) is 0.
pub fn compare(metric: &str, a: &[f64], b: &[f64], p: f64, better: Better, threshold: f64, seed: u64) -> Option<Comparison> {
    let stat_a = percentile(a, p)?;
    let stat_b = percentile(b, p)?;
    if stat_a == 0.0 {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let resample = |rng: &mut StdRng, from: &[f64]| -> Vec<f64> { (0..from.len()).map(|_| from[rng.random_range(0..from.len())]).collect() };
    let mut ratios = Vec::with_capacity(RESAMPLES);
    for _ in 0..RESAMPLES {
        let (ra, rb) = (resample(&mut rng, a), resample(&mut rng, b));
        if let (Some(pa), Some(pb)) = (percentile(&ra, p), percentile(&rb, p)) {
            if pa != 0.0 {
                ratios.push(pb / pa);
            }
        }
    }
    let ci_low = percentile(&ratios, 2.5)?;
    let ci_high = percentile(&ratios, 97.5)?;
    Some(Comparison {
        metric: metric.to_string(),
        ratio: stat_b / stat_a,
        ci_low,
        ci_high,
        threshold,
        better,
        verdict: verdict(ci_low, ci_high, threshold, better),
        a: stat_a,
        b: stat_b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_interpolates_between_the_nearest_ranks() {
        assert_eq!(percentile(&[3.0, 1.0, 2.0, 4.0], 50.0), Some(2.5));
        let one_to_ten: Vec<f64> = (1..=10).map(f64::from).collect();
        let p90 = percentile(&one_to_ten, 90.0).unwrap();
        assert!((p90 - 9.1).abs() < 1e-12, "P90 of 1..=10 is 9.1, got {p90}");
        assert_eq!(percentile(&[7.0], 90.0), Some(7.0));
    }

    #[test]
    fn percentile_ends_and_bad_input() {
        let v = [5.0, 1.0, 4.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0), "P0 is the smallest sample");
        assert_eq!(percentile(&v, 100.0), Some(5.0), "P100 is the largest sample");
        assert_eq!(percentile(&[], 50.0), None, "an empty sample has no percentile");
        assert_eq!(percentile(&v, 101.0), None, "p must be within 0..=100");
        assert_eq!(percentile(&v, -1.0), None, "p must be within 0..=100");
    }

    #[test]
    fn percentile_agrees_with_numpy_via_the_bench_crate() {
        // bench::stats::percentile is checked digit for digit against numpy.percentile.
        let samples = [12.5, 3.25, 9.0, 41.0, 7.75, 7.75, 0.5, 19.0, 23.5, 5.0, 11.0];
        for p in [1.0, 10.0, 25.0, 33.3, 50.0, 66.7, 90.0, 95.0, 99.0] {
            let mine = percentile(&samples, p).unwrap();
            let reference = bench::stats::percentile(&samples, p).unwrap();
            assert!((mine - reference).abs() < 1e-9, "P{p}: yours {mine}, numpy's {reference}");
        }
    }

    #[test]
    fn percentile_leaves_the_input_alone() {
        let v = [3.0, 1.0, 2.0];
        percentile(&v, 50.0);
        assert_eq!(v, [3.0, 1.0, 2.0]);
    }

    #[test]
    fn verdict_needs_the_whole_interval_beyond_the_threshold() {
        // Throughput: higher is better.
        assert_eq!(verdict(1.10, 1.30, 0.05, Better::Higher), Verdict::Faster);
        assert_eq!(verdict(1.02, 1.30, 0.05, Better::Higher), Verdict::WithinNoise, "the interval reaches into the noise band");
        assert_eq!(verdict(0.70, 0.90, 0.05, Better::Higher), Verdict::Slower);
        // Latency: lower is better.
        assert_eq!(verdict(0.70, 0.90, 0.05, Better::Lower), Verdict::Faster);
        assert_eq!(verdict(0.80, 0.97, 0.05, Better::Lower), Verdict::WithinNoise);
        assert_eq!(verdict(1.10, 1.20, 0.05, Better::Lower), Verdict::Slower);
        // An interval straddling 1 is noise in either direction.
        assert_eq!(verdict(0.90, 1.10, 0.05, Better::Higher), Verdict::WithinNoise);
        assert_eq!(verdict(0.90, 1.10, 0.05, Better::Lower), Verdict::WithinNoise);
    }

    #[test]
    fn verdict_agrees_with_the_bench_crate() {
        for better in [Better::Higher, Better::Lower] {
            for low in [0.5, 0.8, 0.94, 0.96, 1.0, 1.04, 1.06, 1.2] {
                for width in [0.0, 0.01, 0.05, 0.2] {
                    let high = low + width;
                    assert_eq!(
                        verdict(low, high, 0.05, better),
                        bench::stats::verdict(low, high, 0.05, better),
                        "interval [{low}, {high}], threshold 0.05, {better:?} is better"
                    );
                }
            }
        }
    }

    #[test]
    fn compare_finds_a_clear_difference_and_calls_equal_samples_noise() {
        let a = [100.0, 102.0, 98.0, 101.0, 99.0];
        let b = [150.0, 152.0, 148.0, 151.0, 149.0];
        let c = compare("output_tokens_per_s.p50", &a, &b, 50.0, Better::Higher, 0.05, 1).unwrap();
        assert_eq!(c.verdict, Verdict::Faster);
        assert!((c.ratio - 1.5).abs() < 1e-9);
        assert!(c.ci_low <= c.ratio && c.ratio <= c.ci_high);
        let same = compare("output_tokens_per_s.p50", &a, &a, 50.0, Better::Higher, 0.05, 1).unwrap();
        assert_eq!(same.verdict, Verdict::WithinNoise);
    }
}
