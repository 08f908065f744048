//! Descriptive statistics with noise bounds.
//!
//! Percentiles come from crate::percentile (numpy's definition), intervals from crate::intervals
//! (over independent runs, or over one run's quarters), verdicts from the `verdict` crate.

use serde::{Deserialize, Serialize};

use crate::intervals::{self, Estimate, Interval, Method};
use crate::percentile::sorted_copy;
pub use crate::percentile::{percentile, percentile_sorted};
pub use verdict::{excludes_one, verdict, Better, Verdict};

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
    let mut out = Outliers {
        low_fence,
        high_fence,
        low: vec![],
        high: vec![],
    };
    for (i, &x) in samples.iter().enumerate() {
        if x < low_fence {
            out.low.push(i);
        } else if x > high_fence {
            out.high.push(i);
        }
    }
    Some(out)
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
    /// 95% interval of the median (crate::intervals: over runs, or over one run's quarters).
    pub ci95_median: Option<Interval>,
    /// 95% interval of the 90th percentile.
    pub ci95_p90: Option<Interval>,
    /// Samples outside Tukey's fences (flagged, still counted above).
    pub outliers: usize,
}

impl Summary {
    /// Summarise the samples of one or more independent runs (`runs`, each in arrival order);
    /// `None` when there are none (e.g. TPOT when every request produced a single token). The
    /// intervals are `None` with fewer than four samples.
    pub fn of(runs: &[Vec<f64>]) -> Option<Summary> {
        let pooled = runs.concat();
        let sorted = sorted_copy(&pooled);
        Some(Summary {
            n: pooled.len(),
            mean: mean(&pooled)?,
            std: std_dev(&pooled)?,
            min: *sorted.first()?,
            max: *sorted.last()?,
            median: percentile_sorted(&sorted, 50.0)?,
            p90: percentile_sorted(&sorted, 90.0)?,
            p99: percentile_sorted(&sorted, 99.0)?,
            ci95_median: intervals::percentile(runs, 50.0).map(|e| e.interval),
            ci95_p90: intervals::percentile(runs, 90.0).map(|e| e.interval),
            outliers: tukey_outliers(&pooled)?.count(),
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

    /// The percentile this statistic is, or `None` for the mean.
    pub fn percentile(self) -> Option<f64> {
        match self {
            Stat::Mean => None,
            Stat::Median => Some(50.0),
            Stat::P90 => Some(90.0),
            Stat::P99 => Some(99.0),
        }
    }

    /// This statistic of the pooled `runs`, with its interval (crate::intervals).
    pub fn estimate(self, runs: &[Vec<f64>]) -> Option<Estimate> {
        match self.percentile() {
            None => intervals::mean(runs),
            Some(p) => intervals::percentile(runs, p),
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
    /// 95% interval of the ratio (crate::intervals::ratio); `ci_high` is `null` when open.
    pub ci_low: f64,
    #[serde(with = "crate::intervals::open_bound")]
    pub ci_high: f64,
    /// The smallest relative change worth acting on: 0.05 means "a 5% difference matters".
    pub min_effect: f64,
    pub better: Better,
    pub verdict: Verdict,
    /// Whether the interval leaves out 1 (a difference of some size, even where the verdict is
    /// inconclusive).
    pub excludes_one: bool,
    /// `sections` when either side is one run (the interval covers those runs only).
    pub method: Method,
    /// Independent runs behind A and behind B.
    pub runs: [usize; 2],
    /// Effective sample size of A's and B's statistic.
    pub effective_n: [f64; 2],
    /// Open-loop throughput only: both runs kept up with the offered rate, so what they
    /// measured is the arrival rate, not the servers; the verdict is then `inconclusive`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub set_by_arrivals: bool,
    /// Where the comparison was made, when a report holds several sets of comparisons of the
    /// same metrics (exercise 2: `below` and `above` batch 8's saturation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    pub a: f64,
    pub b: f64,
}

/// Compare estimate `b` against estimate `a`: the ratio, its interval, the verdict against
/// `min_effect`. `None` when A's statistic is not positive.
pub fn compare(
    metric: &str,
    a: &Estimate,
    b: &Estimate,
    better: Better,
    min_effect: f64,
) -> Option<Comparison> {
    let (ratio, ci_low, ci_high) = intervals::ratio(a, b)?;
    let method = if a.interval.method == Method::Sections || b.interval.method == Method::Sections {
        Method::Sections
    } else {
        Method::Replicates
    };
    Some(Comparison {
        metric: metric.to_string(),
        ratio,
        ci_low,
        ci_high,
        min_effect,
        better,
        verdict: verdict(ci_low, ci_high, min_effect, better),
        excludes_one: excludes_one(ci_low, ci_high),
        method,
        runs: [a.interval.runs, b.interval.runs],
        effective_n: [a.interval.effective_n, b.interval.effective_n],
        set_by_arrivals: false,
        scenario: None,
        a: a.value,
        b: b.value,
    })
}

impl Comparison {
    /// Mark a throughput comparison of two open-loop runs that both kept up: the arrivals set
    /// what they measured, so no verdict about the servers.
    pub fn mark_set_by_arrivals(mut self) -> Comparison {
        self.set_by_arrivals = true;
        self.verdict = Verdict::Inconclusive;
        self
    }
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
}
