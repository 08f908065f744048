//! The two statistics this exercise asks you to write, and the comparison built on them.
//!
//! Solution: `percentile` and `verdict` written; the tests at the bottom pass.

use bench::intervals::{self, Estimate};
use bench::stats::{self, Better, Comparison, Stat, Verdict};

/// The `p`-th percentile (`p` from 0 to 100) of `samples`, which may come in any order.
///
/// Use linear interpolation between the two nearest ranks, numpy's default: sort a copy of the
/// samples, take the fractional rank `r = p / 100 × (n − 1)` (0 is the smallest sample, n − 1
/// the largest), and go the fraction `r − ⌊r⌋` of the way from the sample at rank `⌊r⌋` to the
/// one at rank `⌈r⌉`. So P50 of [1, 2, 3, 4] is 2.5 and P90 of 1..=10 is 9.1. Return `None`
/// for an empty slice or a `p` outside 0..=100.
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
    let below = ci_high < 1.0 - min_effect;
    let above = ci_low > 1.0 + min_effect;
    let inside = ci_low >= 1.0 - min_effect && ci_high <= 1.0 + min_effect;
    match better {
        Better::Higher if above => Verdict::Faster,
        Better::Higher if below => Verdict::Slower,
        Better::Lower if below => Verdict::Faster,
        Better::Lower if above => Verdict::Slower,
        _ if inside => Verdict::Same,
        _ => Verdict::Inconclusive,
    }
}

/// `stat` of the pooled `runs` with its 95% interval, by your percentile (the bench crate's
/// intervals, over independent runs: crates/bench/src/intervals.rs).
pub fn estimate(stat: Stat, runs: &[Vec<f64>]) -> Option<Estimate> {
    match stat.percentile() {
        None => intervals::mean(runs),
        Some(p) => intervals::percentile_with(runs, p, &|sorted, p| percentile(sorted, p)),
    }
}

/// Compares B against A on `stat`: `a` and `b` hold each side's samples, one group per
/// independent run. The ratio stat(b) / stat(a) and its 95% interval (from each side's interval
/// over its runs, by the bench crate), with your verdict. `None` when a side has too few
/// samples or stat(a) is 0.
pub fn compare(
    metric: &str,
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    stat: Stat,
    better: Better,
    min_effect: f64,
) -> Option<Comparison> {
    let mut c = stats::compare(
        metric,
        &estimate(stat, a)?,
        &estimate(stat, b)?,
        better,
        min_effect,
    )?;
    c.verdict = verdict(c.ci_low, c.ci_high, min_effect, better);
    Some(c)
}

// These tests call your functions only. Their cases are not the ones the chapter or the doc
// comments above work through: a function that merely fits those examples fails here.
#[cfg(test)]
mod tests {
    use super::*;

    fn close(got: Option<f64>, want: f64) -> bool {
        got.is_some_and(|g| (g - want).abs() < 1e-9)
    }

    #[test]
    fn percentile_of_one_sample_is_that_sample_at_every_p() {
        for p in [0.0, 12.5, 50.0, 90.0, 100.0] {
            assert_eq!(percentile(&[42.0], p), Some(42.0), "P{p} of [42]");
        }
    }

    #[test]
    fn percentile_zero_and_hundred_are_the_extremes() {
        let v = [3.5, -2.0, 8.25, 0.0, 8.0];
        assert_eq!(
            percentile(&v, 0.0),
            Some(-2.0),
            "P0 is the smallest sample, negatives included"
        );
        assert_eq!(
            percentile(&v, 100.0),
            Some(8.25),
            "P100 is the largest sample"
        );
    }

    #[test]
    fn percentile_uses_the_rank_p_times_n_minus_one_and_interpolates() {
        // [0, 10, 20, 30]: P70 has rank 0.7 × 3 = 2.1, a tenth of the way from 20 to 30. A rank of
        // p × n (2.8) would give 28; the nearest rank, 30; rounding down, 20.
        assert!(
            close(percentile(&[30.0, 0.0, 20.0, 10.0], 70.0), 21.0),
            "P70 of [0, 10, 20, 30] is 21, got {:?}",
            percentile(&[30.0, 0.0, 20.0, 10.0], 70.0)
        );
        // Five samples: P90 has rank 3.6, so 40 + 0.6 × (50 − 40).
        assert!(
            close(percentile(&[50.0, 10.0, 40.0, 20.0, 30.0], 90.0), 46.0),
            "P90 of 10..=50 step 10 is 46"
        );
        // Two samples: P25 is a quarter of the way from one to the other.
        assert!(
            close(percentile(&[4.0, 2.0], 25.0), 2.5),
            "P25 of [2, 4] is 2.5"
        );
        // A rank that lands on a sample gives that sample exactly.
        assert!(
            close(percentile(&[9.0, 1.0, 5.0], 50.0), 5.0),
            "P50 of [1, 5, 9] is 5"
        );
    }

    #[test]
    fn percentile_with_ties() {
        // Sorted: [1, 5, 5, 5]. P50 has rank 1.5, between two fives; P25 has rank 0.75.
        let v = [5.0, 5.0, 1.0, 5.0];
        assert!(close(percentile(&v, 50.0), 5.0), "P50 of [5, 5, 1, 5] is 5");
        assert!(
            close(percentile(&v, 25.0), 4.0),
            "P25 of [5, 5, 1, 5] is 1 + 0.75 × 4 = 4"
        );
        assert!(
            close(percentile(&[7.0; 6], 83.0), 7.0),
            "every percentile of equal samples is that value"
        );
    }

    #[test]
    fn percentile_refuses_what_has_no_percentile() {
        assert_eq!(
            percentile(&[], 0.0),
            None,
            "an empty sample has no percentile"
        );
        assert_eq!(percentile(&[1.0, 2.0], -0.5), None, "p below 0");
        assert_eq!(percentile(&[1.0, 2.0], 100.5), None, "p above 100");
        assert_eq!(percentile(&[1.0, 2.0], f64::NAN), None, "p is not a number");
    }

    #[test]
    fn percentile_leaves_the_samples_in_their_order() {
        let v = [0.3, 0.1, 0.2];
        let _ = percentile(&v, 90.0);
        assert_eq!(v, [0.3, 0.1, 0.2]);
    }

    #[test]
    fn verdict_on_a_throughput_needs_the_whole_interval_above_the_band() {
        // Higher is better; the band is [0.75, 1.25] with a minimum effect of 0.25.
        assert_eq!(verdict(1.3, 1.6, 0.25, Better::Higher), Verdict::Faster);
        assert_eq!(
            verdict(1.25, 1.6, 0.25, Better::Higher),
            Verdict::Inconclusive,
            "an interval that touches the band is not a difference"
        );
        assert_eq!(
            verdict(1.1, 1.6, 0.25, Better::Higher),
            Verdict::Inconclusive,
            "a ratio of 1.35 whose interval straddles 1.25"
        );
        assert_eq!(
            verdict(0.4, 0.7, 0.25, Better::Higher),
            Verdict::Slower,
            "fewer tokens per second is slower"
        );
        assert_eq!(
            verdict(1.3, f64::INFINITY, 0.25, Better::Higher),
            Verdict::Faster,
            "no upper bound, but surely above the band"
        );
    }

    #[test]
    fn verdict_on_a_latency_points_the_other_way() {
        // Lower is better: a ratio below 1 is the faster one.
        assert_eq!(
            verdict(0.4, 0.7, 0.25, Better::Lower),
            Verdict::Faster,
            "a smaller P90 latency is faster"
        );
        assert_eq!(
            verdict(1.3, 1.6, 0.25, Better::Lower),
            Verdict::Slower,
            "a larger P90 latency is slower"
        );
        assert_eq!(
            verdict(0.5, 0.75, 0.25, Better::Lower),
            Verdict::Inconclusive,
            "touching 1 − min_effect is not enough"
        );
    }

    #[test]
    fn verdict_tells_the_same_from_cannot_tell() {
        for better in [Better::Higher, Better::Lower] {
            assert_eq!(
                verdict(0.9, 1.1, 0.25, better),
                Verdict::Same,
                "an interval inside the band, {better:?}"
            );
            assert_eq!(
                verdict(0.75, 1.25, 0.25, better),
                Verdict::Same,
                "the band's edges are inside it, {better:?}"
            );
            assert_eq!(
                verdict(0.5, 1.5, 0.25, better),
                Verdict::Inconclusive,
                "an interval wider than the band, {better:?}"
            );
            assert_eq!(
                verdict(0.97, 1.08, 0.05, better),
                Verdict::Inconclusive,
                "across 1 and past an edge, {better:?}"
            );
            assert_eq!(
                verdict(0.80, 0.97, 0.05, better),
                Verdict::Inconclusive,
                "leaves out 1, not surely by 5%, {better:?}"
            );
            assert_eq!(
                verdict(0.8, f64::INFINITY, 0.25, better),
                Verdict::Inconclusive,
                "no upper bound, {better:?}"
            );
        }
    }

    #[test]
    fn verdict_with_no_band_still_needs_the_whole_interval_on_one_side() {
        assert_eq!(verdict(1.001, 1.002, 0.0, Better::Higher), Verdict::Faster);
        assert_eq!(verdict(1.001, 1.002, 0.0, Better::Lower), Verdict::Slower);
        assert_eq!(
            verdict(0.999, 1.002, 0.0, Better::Higher),
            Verdict::Inconclusive,
            "an interval that contains 1"
        );
        assert_eq!(
            verdict(1.0, 1.0, 0.0, Better::Higher),
            Verdict::Same,
            "exactly 1"
        );
    }

    #[test]
    fn percentile_and_verdict_are_written_here_not_borrowed() {
        // The code above the tests may use the bench crate's types and its intervals (which take
        // your percentile), not its percentile or its verdict.
        let source = include_str!("stats.rs");
        let code = source.split("#[cfg(test)]").next().unwrap_or(source);
        for statement in code.split("bench::").skip(1) {
            let statement = statement.split(';').next().unwrap_or(statement);
            for borrowed in ["percentile", "verdict", "compare", "*", " as "] {
                assert!(
                    !statement.contains(borrowed),
                    "src/stats.rs uses `bench::{statement}`: write percentile and verdict yourself (the bench crate's types are fine)"
                );
            }
        }
        for call in [
            "intervals::percentile(",
            "verdict::verdict(",
            "stats::percentile(",
        ] {
            assert!(
                !code.contains(call),
                "src/stats.rs calls `{call}…)`: write percentile and verdict yourself"
            );
        }
    }

    #[test]
    fn compare_with_your_functions_finds_a_clear_latency_win_and_cannot_tell_equal_samples_apart() {
        // Three runs of 200 latencies spread over 180..220 ms in an order with no trend.
        let slow: Vec<Vec<f64>> = (0..3)
            .map(|k| {
                (0..200)
                    .map(|i| 180.0 + 40.0 * f64::from((i * 37 + k * 11) % 200) / 200.0)
                    .collect()
            })
            .collect();
        let fast: Vec<Vec<f64>> = slow
            .iter()
            .map(|run| run.iter().map(|x| x / 2.0).collect())
            .collect();
        let c = compare("ttft_ms.p90", &slow, &fast, Stat::P90, Better::Lower, 0.05).unwrap();
        assert!(
            (c.ratio - 0.5).abs() < 1e-9,
            "P90 halves: ratio {}",
            c.ratio
        );
        assert_eq!(
            c.verdict,
            Verdict::Faster,
            "half the latency, interval [{}, {}]",
            c.ci_low,
            c.ci_high
        );
        let same = compare("ttft_ms.p90", &slow, &slow, Stat::P90, Better::Lower, 0.05).unwrap();
        assert!(
            same.ci_low <= 1.0 && 1.0 <= same.ci_high,
            "a sample against itself: {same:?}"
        );
        assert!(
            !matches!(same.verdict, Verdict::Faster | Verdict::Slower),
            "a sample against itself: {same:?}"
        );
    }
}
