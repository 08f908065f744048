//! A/B comparison of two runs on one metric: `--compare a.json b.json`.

use anyhow::{bail, Result};

use crate::metrics;
use crate::run::Run;
use crate::stats::{self, Better, Comparison, Stat};

/// The metrics a comparison can be made on. Latencies take a statistic (`ttft_ms.p90`);
/// throughput is compared on its mean rate.
pub const METRICS: &[&str] = &[
    "ttft_ms",
    "tpot_ms",
    "itl_ms",
    "e2el_ms",
    "output_tokens_per_s",
];

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

    pub fn better(&self) -> Better {
        if self.metric == "output_tokens_per_s" {
            Better::Higher
        } else {
            Better::Lower
        }
    }

    /// The samples of this metric in a run, one group per independent replicate (each in
    /// arrival order): per-request latencies; throughput per time quarter of each replicate
    /// (load run) or per timed repeat (in-process run, each repeat its own group).
    pub fn samples(&self, run: &Run) -> Vec<Vec<f64>> {
        let k = run.metrics.replicates;
        match self.metric {
            "ttft_ms" => metrics::by_replicate(&run.requests, k, |r| vec![r.ttft_ms]),
            "e2el_ms" => metrics::by_replicate(&run.requests, k, |r| vec![r.e2el_ms]),
            "tpot_ms" => {
                metrics::by_replicate(&run.requests, k, |r| r.tpot_ms().into_iter().collect())
            }
            "itl_ms" => metrics::by_replicate(&run.requests, k, |r| r.itl_ms.clone()),
            _ if !run.repeat_tokens_per_s.is_empty() => {
                run.repeat_tokens_per_s.iter().map(|&x| vec![x]).collect()
            }
            _ => metrics::throughput_samples(&run.requests, &run.metrics.replicate_durations_s),
        }
    }
}

/// Compare run `b` against run `a`. A throughput comparison of two open-loop runs that both
/// kept up with their arrivals is marked as set by the arrivals (no verdict about the servers).
pub fn compare_runs(a: &Run, b: &Run, choice: MetricChoice, min_effect: f64) -> Result<Comparison> {
    if !(0.0..1.0).contains(&min_effect) {
        bail!(
            "the minimum effect must be a fraction in [0, 1), e.g. 0.05 for 5%; got {min_effect}"
        );
    }
    let estimate = |run: &Run| -> Result<crate::intervals::Estimate> {
        let samples = choice.samples(run);
        if samples.iter().all(Vec::is_empty) {
            bail!(
                "run `{}` has no {} samples (its per-request records are missing or every request \
                 failed); re-run it with a current `course bench`",
                run.label,
                choice.metric
            );
        }
        choice.stat.estimate(&samples).ok_or_else(|| {
            anyhow::anyhow!(
                "run `{}` has too few {} samples for an interval (at least 4 are needed); send more requests",
                run.label,
                choice.metric
            )
        })
    };
    let (ea, eb) = (estimate(a)?, estimate(b)?);
    let comparison = stats::compare(&choice.name(), &ea, &eb, choice.better(), min_effect)
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{} of run `{}` is zero: there is no ratio to take",
                choice.name(),
                a.label
            )
        })?;
    let arrivals = choice.metric == "output_tokens_per_s" && arrivals_set_throughput(a, b);
    Ok(if arrivals {
        comparison.mark_set_by_arrivals()
    } else {
        comparison
    })
}

/// Whether two open-loop runs both kept up with their arrivals: then each one's throughput is
/// the offered rate, and comparing them says nothing about the servers.
pub fn arrivals_set_throughput(a: &Run, b: &Run) -> bool {
    [a, b]
        .iter()
        .all(|run| run.metrics.kept_up_with_arrivals == Some(true))
}
