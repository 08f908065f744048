//! 95% intervals that hold when the requests of a run are not independent.
//!
//! Under load, a request that waits behind a queue makes the next one wait too: neighbouring
//! latencies move together, and a run of 60 requests near the knee holds as much information
//! about its P90 as a handful of independent requests would. An interval that resamples the
//! requests as if they were independent (a per-request percentile bootstrap) is then far too
//! narrow: two runs of the *same* server are called different most of the time.
//!
//! The unit of independence here is the **run**. Each statistic is computed on the samples of
//! every run pooled, and its variance comes from how that statistic moves between runs and
//! within them:
//!
//! - **replicates** (two or more runs with fresh arrival seeds, `--replicates K`): the larger of
//!   two estimates of the variance of the pooled statistic, each with its own degrees of
//!   freedom: the spread *between* runs (K − 1), and the spread of the difference between the
//!   two halves of each run around its mean over the runs (K − 1). The first sees run-to-run
//!   change; the second guards it when the few runs happen to agree, since a queue that built up
//!   in one half of a run shows there. (Centred, because a difference every run shares, the
//!   queue filling from empty at the start and draining at the end, moves no run's statistic
//!   against another's: uncentred, it left every P90 of exercise 2's runs without an end.)
//! - **sections** (one run): the run is cut into four consecutive quarters in arrival order and
//!   the variance comes from their spread (3 degrees of freedom). Such an interval covers that
//!   run only: one run cannot see how much the next run would differ.
//!
//! Either way the variance is never taken below what the same number of independent samples
//! would give, and the interval uses Student's t at its degrees of freedom. Replicates whose
//! spread an F test at 25% cannot tell from independent samples' are taken at the independent
//! variance, with the normal quantile; one run's quarters keep their 3 degrees of freedom.
//!
//! A percentile is handled through the fraction of samples at or below it (its "score"):
//! the interval of that fraction around p, mapped back through the pooled samples' quantiles.
//! When the fraction's upper end passes 1, the percentile has no upper bound: too few
//! independent samples lie above it for the run to say how high it could be.
//!
//! Measured in `tests/aa_simulation.rs`, on a simulated open-loop server: coverage of the true
//! P90 and the rate at which two runs of one system are called different, for this method and
//! for the per-request bootstrap beside it.

use serde::{Deserialize, Serialize};
use statrs::distribution::{ContinuousCDF, StudentsT};

use crate::percentile::{percentile_sorted, sorted_copy};

/// Every interval's confidence level.
pub const LEVEL: f64 = 0.95;

/// Consecutive sections a lone run is cut into.
const SECTIONS: usize = 4;

/// Level of the preliminary test that takes replicates at the independent variance.
const PRELIMINARY_ALPHA: f64 = 0.25;

/// How an interval was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Over two or more independent runs: covers the system under this traffic.
    Replicates,
    /// Over the four quarters of one run: covers that run only.
    Sections,
}

impl Method {
    /// How the report names the method.
    pub fn describe(self, runs: usize) -> String {
        match self {
            Method::Replicates => format!("over {runs} independent runs"),
            Method::Sections => "over the 4 quarters of one run: covers this run only".to_string(),
        }
    }
}

/// A 95% interval and where it came from, as `bench.json` stores it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub low: f64,
    /// `f64::INFINITY` (written as `null`) when there is no upper bound.
    #[serde(with = "open_bound")]
    pub high: f64,
    pub method: Method,
    /// Independent runs behind it.
    pub runs: usize,
    /// How many independent samples would pin the statistic down as well as these did;
    /// `f64::INFINITY` (written as `null`) when the runs did not vary at all.
    #[serde(with = "open_bound")]
    pub effective_n: f64,
}

impl Interval {
    /// `[low, high]` for a table, `∞` for an open end.
    pub fn brackets(&self, decimals: usize) -> String {
        let high = if self.high.is_finite() {
            format!("{:.*}", decimals, self.high)
        } else {
            "∞".to_string()
        };
        format!("[{:.*}, {high}]", decimals, self.low)
    }
}

/// A statistic with its interval and what a ratio of two of them needs.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    pub value: f64,
    pub interval: Interval,
    /// Standard error of ln(value); infinite when an end of the interval is open.
    pub se_log: f64,
    /// Degrees of freedom of the variance behind it (infinite where the independent floor decided).
    pub df: f64,
}

/// The variance of a pooled mean of scores, with its degrees of freedom.
struct Spread {
    mean: f64,
    var: f64,
    df: f64,
    /// Variance of one score (pooled over runs), what an independent sample would carry.
    score_var: f64,
    method: Method,
    runs: usize,
}

impl Spread {
    /// `runs`: the scores of each run, in arrival order. `None` with fewer than four scores in
    /// all (nothing to cut into sections) or fewer than two runs' worth of anything.
    fn of(runs: &[Vec<f64>]) -> Option<Spread> {
        let runs: Vec<&Vec<f64>> = runs.iter().filter(|r| !r.is_empty()).collect();
        let n: usize = runs.iter().map(|r| r.len()).sum();
        if n < 2 {
            return None;
        }
        let nf = n as f64;
        let mean = runs.iter().flat_map(|r| r.iter()).sum::<f64>() / nf;
        let score_var = runs
            .iter()
            .flat_map(|r| r.iter())
            .map(|x| (x - mean).powi(2))
            .sum::<f64>()
            / (nf - 1.0);
        let (var, df, method) = if runs.len() >= 2 {
            let k = runs.len() as f64;
            // Between runs: the run totals around what the pooled mean predicts for them.
            let between = k / (k - 1.0)
                * runs
                    .iter()
                    .map(|r| (r.iter().sum::<f64>() - mean * r.len() as f64).powi(2))
                    .sum::<f64>()
                / (nf * nf);
            // Within runs: each run's first half against its second, around the mean of those
            // differences: a difference every run shares (the queue filling from empty at the
            // start, draining at the end) moves no run's statistic against another's.
            let halved: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| r.len() >= 2)
                .map(|r| {
                    let (first, second) = r.split_at(r.len() / 2);
                    (r.len() as f64 / nf, mean_of(first) - mean_of(second))
                })
                .collect();
            let within = if halved.len() >= 2 {
                let h = halved.len() as f64;
                let centre = halved.iter().map(|(_, d)| d).sum::<f64>() / h;
                let spread = halved
                    .iter()
                    .map(|(_, d)| (d - centre).powi(2))
                    .sum::<f64>()
                    / (h - 1.0);
                spread / 4.0 * halved.iter().map(|(w, _)| w * w).sum::<f64>()
            } else {
                0.0
            };
            if within > between {
                (within, halved.len() as f64 - 1.0, Method::Replicates)
            } else {
                (between, k - 1.0, Method::Replicates)
            }
        } else {
            let run = runs[0];
            if run.len() < SECTIONS {
                return None;
            }
            let means: Vec<f64> = sections(run, SECTIONS).map(mean_of).collect();
            let m = means.len() as f64;
            let centre = means.iter().sum::<f64>() / m;
            let var = means.iter().map(|x| (x - centre).powi(2)).sum::<f64>() / (m - 1.0) / m;
            (var, m - 1.0, Method::Sections)
        };
        // Never tighter than independent samples.
        let floor = score_var / nf;
        let (var, df) = match method {
            // Replicates whose spread is no larger than independent samples' would give (an F
            // test at 25%, the level recommended for such preliminary tests) are taken at the
            // independent variance, whose degrees of freedom are the samples'.
            Method::Replicates if var <= floor * f_upper(df, PRELIMINARY_ALPHA) => {
                (floor, f64::INFINITY)
            }
            // One run's quarters are all the evidence there is about its dependence: their
            // degrees of freedom stay, whatever the floor.
            _ => (var.max(floor), df),
        };
        Some(Spread {
            mean,
            var,
            df,
            score_var,
            method,
            runs: runs.len(),
        })
    }

    fn effective_n(&self) -> f64 {
        if self.var > 0.0 {
            self.score_var / self.var
        } else {
            f64::INFINITY
        }
    }

    fn interval(&self, low: f64, high: f64) -> Interval {
        Interval {
            low,
            high,
            method: self.method,
            runs: self.runs,
            effective_n: self.effective_n(),
        }
    }
}

/// `n` consecutive slices of `xs` whose lengths differ by at most one (numpy's `array_split`).
fn sections(xs: &[f64], n: usize) -> impl Iterator<Item = &[f64]> {
    let (base, extra) = (xs.len() / n, xs.len() % n);
    let mut start = 0;
    (0..n).map(move |i| {
        let len = base + usize::from(i < extra);
        let s = &xs[start..start + len];
        start += len;
        s
    })
}

fn mean_of(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

/// The upper `alpha` point of F(df, ∞), i.e. of χ²(df)/df: how far above 1 a variance estimate
/// with `df` degrees of freedom lands by chance that often.
fn f_upper(df: f64, alpha: f64) -> f64 {
    match statrs::distribution::ChiSquared::new(df) {
        Ok(chi2) => chi2.inverse_cdf(1.0 - alpha) / df,
        Err(_) => 1.0,
    }
}

/// The two-sided critical value at [`LEVEL`] for `df` degrees of freedom (the normal's at ∞).
pub fn critical_value(df: f64) -> f64 {
    let upper = 0.5 + LEVEL / 2.0;
    let dist = if df.is_finite() {
        StudentsT::new(0.0, 1.0, df.max(1e-6)).ok()
    } else {
        None
    };
    match dist {
        Some(t) => t.inverse_cdf(upper),
        None => 1.959_963_984_540_054,
    }
}

/// The `p`-th percentile (0..=100) of the pooled samples, with its interval. `runs` holds each
/// independent run's samples in arrival order. `quantile` computes a percentile of sorted
/// samples (exercise 2 passes the learner's own; everything else [`percentile_sorted`]).
pub fn percentile_with(
    runs: &[Vec<f64>],
    p: f64,
    quantile: &dyn Fn(&[f64], f64) -> Option<f64>,
) -> Option<Estimate> {
    if !(0.0..=100.0).contains(&p) {
        return None;
    }
    let pooled = sorted_copy(&runs.concat());
    let value = quantile(&pooled, p)?;
    let scores: Vec<Vec<f64>> = runs
        .iter()
        .map(|r| r.iter().map(|&x| f64::from(u8::from(x <= value))).collect())
        .collect();
    let spread = Spread::of(&scores)?;
    let t = critical_value(spread.df);
    let half = t * spread.var.sqrt();
    let (lo_frac, hi_frac) = (p / 100.0 - half, p / 100.0 + half);
    let low = if lo_frac < 0.0 {
        0.0
    } else {
        quantile(&pooled, 100.0 * lo_frac)?
    };
    let high = if hi_frac > 1.0 {
        f64::INFINITY
    } else {
        quantile(&pooled, 100.0 * hi_frac)?
    };
    // The standard error of ln(percentile), for ratios: the 95% ends on the log scale. (The
    // delta method with a density estimated from quantiles one standard error either side was
    // tried: it is finite more often, but near the knee two runs of one system were then called
    // different in 4% of pairs with replicates and 27% with one run a side.)
    let se_log = if half == 0.0 {
        0.0
    } else if high.is_finite() && low > 0.0 {
        (high.ln() - low.ln()) / (2.0 * t)
    } else {
        f64::INFINITY
    };
    Some(Estimate {
        value,
        interval: spread.interval(low, high),
        se_log,
        df: spread.df,
    })
}

/// [`percentile_with`] numpy's linear interpolation.
pub fn percentile(runs: &[Vec<f64>], p: f64) -> Option<Estimate> {
    percentile_with(runs, p, &percentile_sorted)
}

/// The mean of the pooled samples, with its interval.
pub fn mean(runs: &[Vec<f64>]) -> Option<Estimate> {
    let spread = Spread::of(runs)?;
    let t = critical_value(spread.df);
    let se = spread.var.sqrt();
    let se_log = if spread.mean > 0.0 {
        se / spread.mean
    } else {
        f64::INFINITY
    };
    let interval = spread.interval(spread.mean - t * se, spread.mean + t * se);
    Some(Estimate {
        value: spread.mean,
        interval,
        se_log,
        df: spread.df,
    })
}

/// B/A with its 95% interval, from two independent estimates: on the log scale, the two
/// standard errors combined, at Welch–Satterthwaite's degrees of freedom. `None` when A is not
/// positive. An open end on either side gives the ratio an open end: `[0, ∞)`.
pub fn ratio(a: &Estimate, b: &Estimate) -> Option<(f64, f64, f64)> {
    if !(a.value > 0.0 && a.value.is_finite() && b.value.is_finite() && b.value >= 0.0) {
        return None;
    }
    let r = b.value / a.value;
    let se = a.se_log.hypot(b.se_log);
    if !se.is_finite() || r == 0.0 {
        return Some((r, 0.0, f64::INFINITY));
    }
    if se == 0.0 {
        return Some((r, r, r));
    }
    let part = |s: f64, df: f64| if df.is_finite() { s.powi(4) / df } else { 0.0 };
    let denominator = part(a.se_log, a.df) + part(b.se_log, b.df);
    let df = if denominator > 0.0 {
        se.powi(4) / denominator
    } else {
        f64::INFINITY
    };
    let t = critical_value(df);
    Some((r, (r.ln() - t * se).exp(), (r.ln() + t * se).exp()))
}

/// serde for an upper bound that may be open: `f64::INFINITY` ⇄ `null`.
pub mod open_bound {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else {
            s.serialize_none()
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::INFINITY))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_with_open_ends_reads_back_as_written() {
        // Runs that did not vary give an infinite effective n; JSON writes it as null.
        let open = Interval {
            low: 1.0,
            high: f64::INFINITY,
            method: Method::Replicates,
            runs: 1,
            effective_n: f64::INFINITY,
        };
        let json = serde_json::to_string(&open).unwrap();
        assert!(json.contains("\"effective_n\":null"), "{json}");
        assert_eq!(serde_json::from_str::<Interval>(&json).unwrap(), open);
    }

    #[test]
    fn sections_split_like_numpy() {
        let xs: Vec<f64> = (0..10).map(f64::from).collect();
        let lens: Vec<usize> = sections(&xs, 4).map(<[f64]>::len).collect();
        assert_eq!(lens, [3, 3, 2, 2]);
    }

    #[test]
    fn critical_values_are_students() {
        assert!((critical_value(2.0) - 4.302_652_7).abs() < 1e-5);
        assert!((critical_value(3.0) - 3.182_446_3).abs() < 1e-5);
        assert!((critical_value(f64::INFINITY) - 1.959_964).abs() < 1e-5);
    }

    #[test]
    fn independent_samples_get_about_the_binomial_width() {
        // 400 evenly spread samples in four runs, in an order with no trend (37 is coprime with
        // 100): neither the runs nor their halves differ, so the independent floor decides.
        let runs: Vec<Vec<f64>> = (0..4)
            .map(|k| {
                (0..100)
                    .map(|i| f64::from((i * 37) % 100 * 4 + k))
                    .collect()
            })
            .collect();
        let p90 = percentile(&runs, 90.0).unwrap();
        assert_eq!(p90.interval.method, Method::Replicates);
        assert!(p90.df.is_infinite(), "{p90:?}");
        // ±1.96·sqrt(0.09/400) = ±2.94% of the ranks around the 90th: ranks 347..371.
        assert!(
            (p90.interval.low - 347.8).abs() < 1.5 && (p90.interval.high - 371.3).abs() < 1.5,
            "{p90:?}"
        );
        assert!((p90.interval.effective_n - 400.0).abs() < 1.0);
    }

    #[test]
    fn runs_that_disagree_widen_the_interval_and_say_how_few_samples_they_are_worth() {
        // Two runs whose levels differ by 50%: the P90's interval must reach both levels.
        let runs = vec![
            (0..60)
                .map(|i| 100.0 + f64::from(i % 7))
                .collect::<Vec<_>>(),
            (0..60).map(|i| 150.0 + f64::from(i % 7)).collect(),
        ];
        let p90 = percentile(&runs, 90.0).unwrap();
        assert!(p90.interval.effective_n < 20.0, "{p90:?}");
        assert!(
            p90.interval.low < 110.0 || !p90.interval.high.is_finite(),
            "{p90:?}"
        );
    }

    #[test]
    fn one_run_is_cut_into_quarters_and_says_it_covers_that_run_only() {
        let run: Vec<f64> = (0..40).map(|i| 10.0 + f64::from(i % 5)).collect();
        let e = mean(&[run]).unwrap();
        assert_eq!(e.interval.method, Method::Sections);
        assert!(e.interval.low <= 12.0 && 12.0 <= e.interval.high);
        assert!(
            percentile(&[vec![1.0, 2.0, 3.0]], 50.0).is_none(),
            "three samples cannot be cut into four"
        );
    }

    #[test]
    fn a_queue_that_builds_up_inside_one_run_leaves_the_percentile_open_above() {
        // Latency climbing steadily through the run: its quarters disagree wildly.
        let run: Vec<f64> = (0..40).map(|i| 10.0 * f64::from(i + 1)).collect();
        let p90 = percentile(&[run], 90.0).unwrap();
        assert!(!p90.interval.high.is_finite(), "{p90:?}");
        assert!(p90.se_log.is_infinite());
    }

    #[test]
    fn a_ratio_of_an_open_estimate_is_open() {
        let closed = mean(&[vec![10.0, 11.0, 9.0, 10.0, 10.5, 9.5, 10.0, 10.0]]).unwrap();
        let run: Vec<f64> = (0..40).map(|i| 10.0 * f64::from(i + 1)).collect();
        let open = percentile(&[run], 90.0).unwrap();
        assert_eq!(
            ratio(&closed, &open).map(|(_, lo, hi)| (lo, hi)),
            Some((0.0, f64::INFINITY))
        );
        let (r, lo, hi) = ratio(&closed, &closed).unwrap();
        assert!((r - 1.0).abs() < 1e-12 && lo < 1.0 && hi > 1.0);
    }

    #[test]
    fn an_open_bound_is_written_as_null() {
        let i = Interval {
            low: 1.0,
            high: f64::INFINITY,
            method: Method::Sections,
            runs: 1,
            effective_n: 3.0,
        };
        let json = serde_json::to_string(&i).unwrap();
        assert!(json.contains("\"high\":null"), "{json}");
        assert_eq!(serde_json::from_str::<Interval>(&json).unwrap(), i);
    }
}
