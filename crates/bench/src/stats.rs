//! Descriptive statistics with noise bounds.
//!
//! Percentiles use numpy's default ("linear") interpolation so that a figure printed here can be
//! checked against `np.percentile` digit for digit. Intervals are percentile bootstrap intervals
//! under a fixed seed: the same samples and seed always give the same interval.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// Resamples drawn for every bootstrap interval unless the caller asks otherwise.
pub const DEFAULT_RESAMPLES: usize = 2000;
/// Seed for every bootstrap interval unless the caller asks otherwise.
pub const DEFAULT_SEED: u64 = 0x5EED;

/// The `p`-th percentile (0..=100) of `samples`, interpolated linearly between the two nearest
/// ranks exactly as `numpy.percentile(samples, p)` does. `None` for an empty slice or a `p`
/// outside 0..=100. NaN samples are sorted last, as numpy does.
pub fn percentile(samples: &[f64], p: f64) -> Option<f64> {
    let sorted = sorted_copy(samples);
    percentile_sorted(&sorted, p)
}

/// [`percentile`] for a slice the caller has already sorted ascending.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let rank = p / 100.0 * (sorted.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let hi = rank.ceil() as usize;
    let frac = rank - lo as f64;
    let (a, b) = (sorted[lo], sorted[hi]);
    // numpy's `_lerp` evaluates from the nearer end so the result never leaves [a, b].
    Some(if frac >= 0.5 {
        b - (b - a) * (1.0 - frac)
    } else {
        a + (b - a) * frac
    })
}

/// Arithmetic mean; `None` when empty.
pub fn mean(samples: &[f64]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    Some(samples.iter().sum::<f64>() / samples.len() as f64)
}

/// Population standard deviation (numpy's default, `ddof=0`, which vLLM's benchmark reports).
pub fn std_dev(samples: &[f64]) -> Option<f64> {
    let m = mean(samples)?;
    let var = samples.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / samples.len() as f64;
    Some(var.sqrt())
}

pub(crate) fn sorted_copy(samples: &[f64]) -> Vec<f64> {
    let mut v = samples.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    v
}

/// Which samples lie outside Tukey's fences, `[Q1 − k·IQR, Q3 + k·IQR]` with k = 1.5.
///
/// Outliers are flagged, never dropped: a slow request is a real request, and the reader decides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outliers {
    pub low_fence: f64,
    pub high_fence: f64,
    /// Indices into the original (unsorted) samples.
    pub low: Vec<usize>,
    pub high: Vec<usize>,
}

impl Outliers {
    pub fn count(&self) -> usize {
        self.low.len() + self.high.len()
    }
}

/// Tukey-fence outlier flags for `samples`; `None` when empty.
pub fn tukey_outliers(samples: &[f64]) -> Option<Outliers> {
    let sorted = sorted_copy(samples);
    let q1 = percentile_sorted(&sorted, 25.0)?;
    let q3 = percentile_sorted(&sorted, 75.0)?;
    let iqr = q3 - q1;
    let low_fence = q1 - 1.5 * iqr;
    let high_fence = q3 + 1.5 * iqr;
    let mut out = Outliers { low_fence, high_fence, low: vec![], high: vec![] };
    for (i, &x) in samples.iter().enumerate() {
        if x < low_fence {
            out.low.push(i);
        } else if x > high_fence {
            out.high.push(i);
        }
    }
    Some(out)
}

/// Percentile bootstrap: draw `resamples` samples of the same size with replacement, compute
/// `statistic` on each, and return the 2.5th and 97.5th percentiles of those values.
/// `None` when `samples` is empty or `resamples` is zero.
pub fn bootstrap_ci(
    samples: &[f64],
    statistic: impl Fn(&mut [f64]) -> f64,
    resamples: usize,
    seed: u64,
) -> Option<[f64; 2]> {
    if samples.is_empty() || resamples == 0 {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut buf = vec![0.0; samples.len()];
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in buf.iter_mut() {
            *slot = samples[rng.random_range(0..samples.len())];
        }
        stats.push(statistic(&mut buf));
    }
    interval_of(&mut stats)
}

/// The central 95% of a set of bootstrap replicates.
fn interval_of(stats: &mut [f64]) -> Option<[f64; 2]> {
    stats.sort_by(|a, b| a.total_cmp(b));
    Some([percentile_sorted(stats, 2.5)?, percentile_sorted(stats, 97.5)?])
}

/// Statistic helper for [`bootstrap_ci`]: the `p`-th percentile of a scratch buffer.
pub fn percentile_of(p: f64) -> impl Fn(&mut [f64]) -> f64 {
    move |buf: &mut [f64]| {
        buf.sort_by(|a, b| a.total_cmp(b));
        percentile_sorted(buf, p).unwrap_or(f64::NAN)
    }
}

/// Statistic helper for [`bootstrap_ci`]: the mean of a scratch buffer.
pub fn mean_of(buf: &mut [f64]) -> f64 {
    mean(buf).unwrap_or(f64::NAN)
}

/// One metric summarised the way the results table and `bench.json` print it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    pub std: f64,
    pub min: f64,
    pub max: f64,
    pub median: f64,
    pub p90: f64,
    pub p99: f64,
    /// 95% bootstrap interval of the median.
    pub ci95_median: [f64; 2],
    /// 95% bootstrap interval of the 90th percentile.
    pub ci95_p90: [f64; 2],
    /// Samples outside Tukey's fences (flagged, still counted above).
    pub outliers: usize,
}

impl Summary {
    /// Summarise `samples`; `None` when there are none (e.g. TPOT when every request produced a
    /// single token).
    pub fn of(samples: &[f64], seed: u64) -> Option<Summary> {
        let sorted = sorted_copy(samples);
        Some(Summary {
            n: samples.len(),
            mean: mean(samples)?,
            std: std_dev(samples)?,
            min: *sorted.first()?,
            max: *sorted.last()?,
            median: percentile_sorted(&sorted, 50.0)?,
            p90: percentile_sorted(&sorted, 90.0)?,
            p99: percentile_sorted(&sorted, 99.0)?,
            ci95_median: bootstrap_ci(samples, percentile_of(50.0), DEFAULT_RESAMPLES, seed)?,
            ci95_p90: bootstrap_ci(samples, percentile_of(90.0), DEFAULT_RESAMPLES, seed ^ 0x90)?,
            outliers: tukey_outliers(samples)?.count(),
        })
    }

    /// The value of a named statistic: `mean`, `median`, `p90` or `p99`.
    pub fn get(&self, stat: Stat) -> f64 {
        match stat {
            Stat::Mean => self.mean,
            Stat::Median => self.median,
            Stat::P90 => self.p90,
            Stat::P99 => self.p99,
        }
    }
}

/// A statistic an A/B comparison can be made on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stat {
    Mean,
    Median,
    P90,
    P99,
}

impl Stat {
    pub fn parse(s: &str) -> Option<Stat> {
        match s {
            "mean" => Some(Stat::Mean),
            "median" | "p50" => Some(Stat::Median),
            "p90" => Some(Stat::P90),
            "p99" => Some(Stat::P99),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Stat::Mean => "mean",
            Stat::Median => "median",
            Stat::P90 => "p90",
            Stat::P99 => "p99",
        }
    }

    /// Compute this statistic on a scratch buffer (reorders it).
    pub fn compute(self, buf: &mut [f64]) -> f64 {
        match self {
            Stat::Mean => mean_of(buf),
            Stat::Median => percentile_of(50.0)(buf),
            Stat::P90 => percentile_of(90.0)(buf),
            Stat::P99 => percentile_of(99.0)(buf),
        }
    }
}

/// Whether a bigger value of the compared metric is better (throughput) or worse (latency).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Lower,
    Higher,
}

/// What an A/B comparison concludes about B relative to A.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within_noise",
        }
    }
}

/// The result of comparing B against A on one statistic of one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// e.g. `ttft_ms.p90` or `output_tokens_per_s`.
    pub metric: String,
    /// statistic(B) / statistic(A).
    pub ratio: f64,
    /// 95% bootstrap interval of the ratio.
    pub ci_low: f64,
    pub ci_high: f64,
    /// Relative change treated as noise: 0.05 means "a 5% difference is not a difference".
    pub threshold: f64,
    pub better: Better,
    pub verdict: Verdict,
    pub a: f64,
    pub b: f64,
}

/// Decide faster / slower / within noise from a ratio interval.
///
/// B is called faster only when the *whole* 95% interval of the ratio lies beyond the noise
/// threshold in the good direction (for latency: `ci_high < 1 − threshold`; for throughput:
/// `ci_low > 1 + threshold`), slower when the whole interval lies beyond it in the bad
/// direction, and within noise otherwise. An interval that straddles the threshold is not a
/// result, however good the point estimate looks.
pub fn verdict(ci_low: f64, ci_high: f64, threshold: f64, better: Better) -> Verdict {
    let below = ci_high < 1.0 - threshold;
    let above = ci_low > 1.0 + threshold;
    match (better, below, above) {
        (Better::Lower, true, _) | (Better::Higher, _, true) => Verdict::Faster,
        (Better::Lower, _, true) | (Better::Higher, true, _) => Verdict::Slower,
        _ => Verdict::WithinNoise,
    }
}

/// Compare `b` against `a` on `stat`: the ratio stat(b)/stat(a), a 95% interval from resampling
/// each side independently, and the verdict. `None` when either side is empty or stat(a) is 0.
pub fn compare(
    metric: &str,
    a: &[f64],
    b: &[f64],
    stat: Stat,
    better: Better,
    threshold: f64,
    seed: u64,
) -> Option<Comparison> {
    if a.is_empty() || b.is_empty() {
        return None;
    }
    let stat_a = stat.compute(&mut a.to_vec());
    let stat_b = stat.compute(&mut b.to_vec());
    if stat_a == 0.0 || !stat_a.is_finite() || !stat_b.is_finite() {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let (mut buf_a, mut buf_b) = (vec![0.0; a.len()], vec![0.0; b.len()]);
    let mut ratios = Vec::with_capacity(DEFAULT_RESAMPLES);
    for _ in 0..DEFAULT_RESAMPLES {
        for slot in buf_a.iter_mut() {
            *slot = a[rng.random_range(0..a.len())];
        }
        for slot in buf_b.iter_mut() {
            *slot = b[rng.random_range(0..b.len())];
        }
        let denominator = stat.compute(&mut buf_a);
        if denominator != 0.0 {
            ratios.push(stat.compute(&mut buf_b) / denominator);
        }
    }
    let [ci_low, ci_high] = interval_of(&mut ratios)?;
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
    fn percentile_endpoints_and_midpoints() {
        let v = [3.0, 1.0, 2.0, 4.0];
        assert_eq!(percentile(&v, 0.0), Some(1.0));
        assert_eq!(percentile(&v, 100.0), Some(4.0));
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&v, 101.0), None);
    }

    #[test]
    fn verdict_needs_the_whole_interval_beyond_the_threshold() {
        assert_eq!(verdict(0.80, 0.90, 0.05, Better::Lower), Verdict::Faster);
        assert_eq!(verdict(0.80, 0.97, 0.05, Better::Lower), Verdict::WithinNoise);
        assert_eq!(verdict(1.10, 1.20, 0.05, Better::Lower), Verdict::Slower);
        assert_eq!(verdict(1.10, 1.20, 0.05, Better::Higher), Verdict::Faster);
        assert_eq!(verdict(0.80, 0.90, 0.05, Better::Higher), Verdict::Slower);
    }
}
