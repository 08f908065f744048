//! One measured configuration of a `bench.json` (crate::report): its settings, its metrics
//! and the raw per-request samples a later `--compare` resamples.

use anyhow::Result;
use formats::bench::ServerMetrics;
use serde::{Deserialize, Serialize};

use crate::load::{LoadConfig, LoadOutcome, Traffic};
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
