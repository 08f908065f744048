//! A/B comparison of two runs on one metric: `--compare a.json b.json`.

use anyhow::{bail, Result};

use crate::metrics;
use crate::report::Run;
use crate::stats::{self, Better, Comparison, Stat};

/// The metrics a comparison can be made on. Latencies take a statistic (`ttft_ms.p90`);
/// throughput is compared on its mean rate.
pub const METRICS: &[&str] = &["ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "output_tokens_per_s"];

/// A parsed `--metric` value such as `ttft_ms.p90` or `output_tokens_per_s`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricChoice {
    pub metric: &'static str,
    pub stat: Stat,
}

impl MetricChoice {
    pub fn parse(s: &str) -> Result<MetricChoice> {
        let (name, stat) = match s.split_once('.') {
            Some((name, stat)) => (name, Some(stat)),
            None => (s, None),
        };
        let Some(&metric) = METRICS.iter().find(|m| **m == name) else {
            bail!(
                "unknown metric `{s}`: choose one of {} (latencies may add .mean, .median, .p90 \
                 or .p99, e.g. ttft_ms.p90)",
                METRICS.join(", ")
            );
        };
        let stat = match (metric, stat) {
            ("output_tokens_per_s", None | Some("mean")) => Stat::Mean,
            ("output_tokens_per_s", Some(other)) => {
                bail!("output_tokens_per_s is compared on its mean rate; drop `.{other}`")
            }
            (_, None) => Stat::Median,
            (_, Some(stat)) => Stat::parse(stat).ok_or_else(|| {
                anyhow::anyhow!("unknown statistic `{stat}` in `{s}`: use mean, median, p90 or p99")
            })?,
        };
        Ok(MetricChoice { metric, stat })
    }

    pub fn name(&self) -> String {
        if self.metric == "output_tokens_per_s" {
            self.metric.to_string()
        } else {
            format!("{}.{}", self.metric, self.stat.name())
        }
    }

    fn better(&self) -> Better {
        if self.metric == "output_tokens_per_s" {
            Better::Higher
        } else {
            Better::Lower
        }
    }

    /// The samples of this metric in a run: per-request latencies, or throughput per repeat
    /// (in-process) / per time window (load run).
    pub fn samples(&self, run: &Run) -> Vec<f64> {
        let ok = run.requests.iter().filter(|r| r.ok);
        match self.metric {
            "ttft_ms" => ok.map(|r| r.ttft_ms).collect(),
            "e2el_ms" => ok.map(|r| r.e2el_ms).collect(),
            "tpot_ms" => ok.filter_map(|r| r.tpot_ms()).collect(),
            "itl_ms" => ok.flat_map(|r| r.itl_ms.iter().copied()).collect(),
            _ if !run.repeat_tokens_per_s.is_empty() => run.repeat_tokens_per_s.clone(),
            _ => metrics::window_rates(&run.requests, run.metrics.duration_s),
        }
    }
}

/// Compare run `b` against run `a`.
pub fn compare_runs(a: &Run, b: &Run, choice: MetricChoice, threshold: f64, seed: u64) -> Result<Comparison> {
    if !(0.0..1.0).contains(&threshold) {
        bail!("the noise threshold must be a fraction in [0, 1), e.g. 0.05 for 5%; got {threshold}");
    }
    let (sa, sb) = (choice.samples(a), choice.samples(b));
    for (run, samples) in [(a, &sa), (b, &sb)] {
        if samples.is_empty() {
            bail!(
                "run `{}` has no {} samples (its per-request records are missing or every request \
                 failed); re-run it with a current `course bench`",
                run.label,
                choice.metric
            );
        }
    }
    stats::compare(&choice.name(), &sa, &sb, choice.stat, choice.better(), threshold, seed)
        .ok_or_else(|| anyhow::anyhow!("{} of run `{}` is zero: there is no ratio to take", choice.name(), a.label))
}
