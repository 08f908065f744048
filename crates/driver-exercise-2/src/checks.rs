//! The tests of the learner's `percentile` and `verdict`, which src/stats.rs runs with
//! [`tests_of_your_statistics!`](crate::tests_of_your_statistics): each is a function of the
//! learner's functions, so the exercise and its solution run the same cases on their own code.
//! Their cases are not the ones the chapter or the doc comments of src/stats.rs work through: a
//! function that merely fits those examples fails here.

use crate::{Percentile, Statistics, VerdictRule};
use bench::stats::{Better, Stat, Verdict};
use verdict::cases::{Topic, CASES};

fn close(got: Option<f64>, want: f64) -> bool {
    got.is_some_and(|g| (g - want).abs() < 1e-9)
}

/// One sample is every percentile of itself.
pub fn percentile_of_one_sample_is_that_sample_at_every_p(percentile: Percentile) {
    for p in [0.0, 12.5, 50.0, 90.0, 100.0] {
        assert_eq!(percentile(&[42.0], p), Some(42.0), "P{p} of [42]");
    }
}

/// P0 and P100 are the smallest and the largest sample.
pub fn percentile_zero_and_hundred_are_the_extremes(percentile: Percentile) {
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

/// The rank is p / 100 × (n − 1), and a fractional rank interpolates between its neighbours.
pub fn percentile_uses_the_rank_p_times_n_minus_one_and_interpolates(percentile: Percentile) {
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

/// Equal samples interpolate like any others.
pub fn percentile_with_ties(percentile: Percentile) {
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

/// No samples, or a `p` outside 0..=100 (or not a number), has no percentile.
pub fn percentile_refuses_what_has_no_percentile(percentile: Percentile) {
    assert_eq!(
        percentile(&[], 0.0),
        None,
        "an empty sample has no percentile"
    );
    assert_eq!(percentile(&[1.0, 2.0], -0.5), None, "p below 0");
    assert_eq!(percentile(&[1.0, 2.0], 100.5), None, "p above 100");
    assert_eq!(percentile(&[1.0, 2.0], f64::NAN), None, "p is not a number");
}

/// The caller's samples are sorted in a copy, never in place.
pub fn percentile_leaves_the_samples_in_their_order(percentile: Percentile) {
    let v = [0.3, 0.1, 0.2];
    let _ = percentile(&v, 90.0);
    assert_eq!(v, [0.3, 0.1, 0.2]);
}

/// The learner's rule on every worked case of `topic` (the verdict crate's table, which the
/// course's own rule is tested on too).
fn check_cases(verdict: VerdictRule, topic: Topic) {
    for case in CASES.iter().filter(|c| c.topic == topic) {
        let (low, high) = case.ci;
        for better in case.directions() {
            assert_eq!(
                verdict(low, high, case.min_effect, better),
                case.expect,
                "interval [{low}, {high}], minimum effect {}, {better:?} is better: {}",
                case.min_effect,
                case.why
            );
        }
    }
}

/// Where higher is better, `faster` needs the whole interval above the band.
pub fn verdict_on_a_throughput_needs_the_whole_interval_above_the_band(verdict: VerdictRule) {
    check_cases(verdict, Topic::Throughput);
}

/// Where lower is better, a ratio below the band is `faster`.
pub fn verdict_on_a_latency_points_the_other_way(verdict: VerdictRule) {
    check_cases(verdict, Topic::Latency);
}

/// `same` is an interval inside the band (edges included); one across an edge is `inconclusive`.
pub fn verdict_tells_the_same_from_cannot_tell(verdict: VerdictRule) {
    check_cases(verdict, Topic::SameOrCannotTell);
}

/// A minimum effect of 0 still needs the whole interval on one side of 1.
pub fn verdict_with_no_band_still_needs_the_whole_interval_on_one_side(verdict: VerdictRule) {
    check_cases(verdict, Topic::NoBand);
}

/// `source`, the learner's src/stats.rs, writes `percentile` and `verdict` itself rather than calling the bench crate's.
pub fn percentile_and_verdict_are_written_here_not_borrowed(source: &str) {
    // The learner's code (above its tests) may use the bench crate's types, not its percentile
    // or its verdict.
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

/// The comparison built on the learner's two functions finds a halved P90 faster, and cannot tell a sample from itself.
pub fn compare_with_your_functions_finds_a_clear_latency_win_and_cannot_tell_equal_samples_apart(
    percentile: Percentile,
    verdict: VerdictRule,
) {
    let statistics = Statistics {
        percentile,
        verdict,
    };
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
    let c = statistics
        .compare("ttft_ms.p90", &slow, &fast, Stat::P90, Better::Lower, 0.05)
        .unwrap();
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
    let same = statistics
        .compare("ttft_ms.p90", &slow, &slow, Stat::P90, Better::Lower, 0.05)
        .unwrap();
    assert!(
        same.ci_low <= 1.0 && 1.0 <= same.ci_high,
        "a sample against itself: {same:?}"
    );
    assert!(
        !matches!(same.verdict, Verdict::Faster | Verdict::Slower),
        "a sample against itself: {same:?}"
    );
}

/// The tests of the learner's two functions, as `#[test]` functions named for what they check:
/// `tests_of_your_statistics!(percentile, verdict, include_str!("stats.rs"))` inside a
/// `#[cfg(test)]` module, with the learner's `percentile` and `verdict` and the text of the
/// file that writes them. `cargo test -p exercise-2` then says which one is still wrong.
#[macro_export]
macro_rules! tests_of_your_statistics {
    ($percentile:path, $verdict:path, $source:expr) => {
        #[test]
        fn percentile_of_one_sample_is_that_sample_at_every_p() {
            $crate::checks::percentile_of_one_sample_is_that_sample_at_every_p($percentile)
        }

        #[test]
        fn percentile_zero_and_hundred_are_the_extremes() {
            $crate::checks::percentile_zero_and_hundred_are_the_extremes($percentile)
        }

        #[test]
        fn percentile_uses_the_rank_p_times_n_minus_one_and_interpolates() {
            $crate::checks::percentile_uses_the_rank_p_times_n_minus_one_and_interpolates($percentile)
        }

        #[test]
        fn percentile_with_ties() {
            $crate::checks::percentile_with_ties($percentile)
        }

        #[test]
        fn percentile_refuses_what_has_no_percentile() {
            $crate::checks::percentile_refuses_what_has_no_percentile($percentile)
        }

        #[test]
        fn percentile_leaves_the_samples_in_their_order() {
            $crate::checks::percentile_leaves_the_samples_in_their_order($percentile)
        }

        #[test]
        fn verdict_on_a_throughput_needs_the_whole_interval_above_the_band() {
            $crate::checks::verdict_on_a_throughput_needs_the_whole_interval_above_the_band($verdict)
        }

        #[test]
        fn verdict_on_a_latency_points_the_other_way() {
            $crate::checks::verdict_on_a_latency_points_the_other_way($verdict)
        }

        #[test]
        fn verdict_tells_the_same_from_cannot_tell() {
            $crate::checks::verdict_tells_the_same_from_cannot_tell($verdict)
        }

        #[test]
        fn verdict_with_no_band_still_needs_the_whole_interval_on_one_side() {
            $crate::checks::verdict_with_no_band_still_needs_the_whole_interval_on_one_side($verdict)
        }

        #[test]
        fn percentile_and_verdict_are_written_here_not_borrowed() {
            $crate::checks::percentile_and_verdict_are_written_here_not_borrowed($source)
        }

        #[test]
        fn compare_with_your_functions_finds_a_clear_latency_win_and_cannot_tell_equal_samples_apart() {
            $crate::checks::compare_with_your_functions_finds_a_clear_latency_win_and_cannot_tell_equal_samples_apart($percentile, $verdict)
        }
    };
}

// The checks themselves: a right answer (written differently from the reference) passes each,
// and wrong answers that look right fail the one meant to catch them.
#[cfg(test)]
mod tests {
    use super::*;
    use std::panic::{catch_unwind, RefUnwindSafe, UnwindSafe};

    /// Numpy's linear percentile, by the integer part of the rank and the step to the next.
    fn lerp_percentile(samples: &[f64], p: f64) -> Option<f64> {
        if samples.is_empty() || p.clamp(0.0, 100.0) != p {
            return None;
        }
        let mut v = samples.to_vec();
        v.sort_unstable_by(|x, y| x.partial_cmp(y).unwrap_or(std::cmp::Ordering::Equal));
        let rank = (v.len() - 1) as f64 * p / 100.0;
        let low = rank as usize;
        let next = v[(low + 1).min(v.len() - 1)];
        Some(v[low] + (rank - low as f64) * (next - v[low]))
    }

    /// The four verdicts, by which side of the band the interval lies on.
    fn side_verdict(ci_low: f64, ci_high: f64, min_effect: f64, better: Better) -> Verdict {
        let (up, down) = (ci_low > 1.0 + min_effect, ci_high < 1.0 - min_effect);
        if up || down {
            if up == (better == Better::Higher) {
                Verdict::Faster
            } else {
                Verdict::Slower
            }
        } else if ci_low >= 1.0 - min_effect && ci_high <= 1.0 + min_effect {
            Verdict::Same
        } else {
            Verdict::Inconclusive
        }
    }

    /// A percentile whose rank is p / 100 × n, a common slip.
    fn rank_times_n(samples: &[f64], p: f64) -> Option<f64> {
        let mut v = samples.to_vec();
        v.sort_by(f64::total_cmp);
        let rank = (p / 100.0 * v.len() as f64).min((v.len() - 1) as f64);
        let low = rank.floor() as usize;
        let high = rank.ceil() as usize;
        Some(v.get(low)? + (rank - rank.floor()) * (v[high] - v[low]))
    }

    /// A verdict that reads the midpoint of the interval, not the whole of it.
    fn midpoint_verdict(ci_low: f64, ci_high: f64, min_effect: f64, better: Better) -> Verdict {
        let mid = (ci_low + ci_high) / 2.0;
        side_verdict(mid, mid, min_effect, better)
    }

    fn fails(check: impl FnOnce() + UnwindSafe) -> bool {
        catch_unwind(check).is_err()
    }

    fn every_check(percentile: Percentile, verdict: VerdictRule) -> impl Fn() + RefUnwindSafe {
        move || {
            percentile_of_one_sample_is_that_sample_at_every_p(percentile);
            percentile_zero_and_hundred_are_the_extremes(percentile);
            percentile_uses_the_rank_p_times_n_minus_one_and_interpolates(percentile);
            percentile_with_ties(percentile);
            percentile_refuses_what_has_no_percentile(percentile);
            percentile_leaves_the_samples_in_their_order(percentile);
            verdict_on_a_throughput_needs_the_whole_interval_above_the_band(verdict);
            verdict_on_a_latency_points_the_other_way(verdict);
            verdict_tells_the_same_from_cannot_tell(verdict);
            verdict_with_no_band_still_needs_the_whole_interval_on_one_side(verdict);
            compare_with_your_functions_finds_a_clear_latency_win_and_cannot_tell_equal_samples_apart(
                percentile, verdict,
            );
        }
    }

    #[test]
    fn a_right_answer_in_other_words_passes_every_check() {
        every_check(lerp_percentile, side_verdict)();
    }

    #[test]
    fn a_percentile_ranked_by_p_times_n_fails() {
        assert!(fails(|| {
            percentile_uses_the_rank_p_times_n_minus_one_and_interpolates(rank_times_n)
        }));
        assert!(fails(every_check(rank_times_n, side_verdict)));
    }

    #[test]
    fn a_verdict_from_the_midpoint_fails() {
        assert!(fails(|| {
            verdict_on_a_throughput_needs_the_whole_interval_above_the_band(midpoint_verdict)
        }));
        assert!(fails(|| verdict_tells_the_same_from_cannot_tell(
            midpoint_verdict
        )));
    }

    #[test]
    fn a_verdict_that_ignores_the_direction_fails() {
        let higher_always = |lo, hi, m, _| side_verdict(lo, hi, m, Better::Higher);
        assert!(fails(|| verdict_on_a_latency_points_the_other_way(
            higher_always
        )));
    }

    #[test]
    fn borrowing_the_bench_crates_statistics_is_caught() {
        percentile_and_verdict_are_written_here_not_borrowed(
            "use bench::stats::{Better, Verdict};\npub fn percentile() {}\n",
        );
        for borrowed in [
            "use bench::stats::{Better, Verdict};\nuse bench::stats::verdict;\n",
            "use bench::intervals as i;\n",
            "fn f() { bench::intervals::percentile(&[], 1.0); }\n",
        ] {
            assert!(
                fails(|| percentile_and_verdict_are_written_here_not_borrowed(borrowed)),
                "{borrowed}"
            );
        }
        // What the tests themselves call is not the learner's code.
        percentile_and_verdict_are_written_here_not_borrowed(
            "fn f() {}\n#[cfg(test)]\nmod tests { use bench::stats::verdict; }\n",
        );
    }
}
