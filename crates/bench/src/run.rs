//! One measured configuration of a `bench.json` (crate::report): its settings, its metrics
//! and the raw per-request samples a later `--compare` resamples.

use anyhow::{bail, Context, Result};
use formats::bench::ServerMetrics;
use serde::{Deserialize, Serialize};

use crate::load::{self, LoadConfig, LoadOutcome, Traffic};
use crate::metrics::{self, RequestRecord, RunMetrics, Slo};

/// One measured configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub label: String,
    /// What was varied and what was held fixed (rate, concurrency, batch size, lengths, …).
    pub config: serde_json::Value,
    pub metrics: RunMetrics,
    /// Raw per-request samples, so that a later `--compare` can resample them.
    #[serde(default)]
    pub requests: Vec<RequestRecord>,
    /// In-process runs: output tokens/s of each timed repeat.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeat_tokens_per_s: Vec<f64>,
    /// `--scrape-metrics`: the server's gauges over the run (crate::scrape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_metrics: Option<ServerMetrics>,
}

impl Run {
    /// `replicates` replicates of `config` run on `runtime` as the run `label`; `annotate`
    /// records in it what the comparison varied; its table is printed. An error when no request
    /// completed, the table above saying why.
    pub fn measure(
        runtime: &tokio::runtime::Runtime,
        label: String,
        config: &LoadConfig,
        replicates: usize,
        slo: &Slo,
        annotate: impl FnOnce(&mut Run),
    ) -> Result<Run> {
        let outcome = runtime
            .block_on(load::run_replicates(config, replicates))
            .with_context(|| format!("{label}: the load run failed"))?;
        let mut run = Run::from_load(label, config, slo, outcome)?;
        annotate(&mut run);
        print!("{}", crate::report::table(&run));
        if run.metrics.completed == 0 {
            bail!(
                "every request of {} failed; the table above shows why",
                run.label
            );
        }
        Ok(run)
    }

    /// A finished load run (one or more replicates) as a [`Run`] with its metrics; an open-loop
    /// run also records whether the server kept up with its arrivals.
    pub fn from_load(
        label: String,
        config: &LoadConfig,
        slo: &Slo,
        outcome: LoadOutcome,
    ) -> Result<Run> {
        let mut metrics = metrics::compute(&outcome.records, &outcome.durations_s, slo);
        if let Traffic::OpenLoop { .. } = config.traffic {
            metrics.kept_up_with_arrivals = metrics::kept_up(&outcome.records, metrics.replicates);
        }
        let mut config_json = serde_json::to_value(config)?;
        config_json["mode"] = "load".into();
        config_json["slo"] = serde_json::to_value(slo)?;
        config_json["replicates"] = metrics.replicates.into();
        Ok(Run {
            label,
            config: config_json,
            metrics,
            requests: outcome.records,
            repeat_tokens_per_s: vec![],
            server_metrics: None,
        })
    }
}
