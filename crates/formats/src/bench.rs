//! `bench.json`, the load client's file (documented in crates/bench/README.md): its schema
//! and the versions it replaced. The bench crate writes it, the grader reads it.
//!
//! Its run, summary and comparison types are still the bench crate's own (`bench::report`);
//! the identifier, the refused versions, the migration message and the server's scraped
//! gauges ([`ServerMetrics`], each run's `server_metrics`) are here.
//! A bump changes [`SCHEMA`], adds the old identifier to [`OLD_SCHEMAS`] with what it lacks,
//! and regenerates the fixtures.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::FileSchema;

/// The schema identifier written in every bench.json.
pub const SCHEMA: &str = "bench-report/4";

/// Earlier identifiers, oldest first, each refused with what it lacks.
pub const OLD_SCHEMAS: &[(&str, &str)] = &[
    (
        "bench-report/1",
        "from before the environment record bench.json and report.json share",
    ),
    (
        "bench-report/2",
        "from before intervals over replicate runs and the four verdicts (faster, slower, same, \
         inconclusive): its per-request bootstrap intervals are too narrow under load",
    ),
    (
        "bench-report/3",
        "from before each run could carry the server's /metrics series (`--scrape-metrics`)",
    ),
];

/// bench.json's schema, for [`FileSchema::check`].
pub const FILE: FileSchema = FileSchema {
    file: "bench.json",
    current: SCHEMA,
    old: OLD_SCHEMAS,
    rerun: "To write a current file, re-run the benchmark that wrote it (`course bench ... --out \
            DIR`, or `course run N` for an exercise).",
};

/// What `--scrape-metrics` recorded of the server's `/metrics` during one run: a sample every
/// `interval_s` seconds, each field mapped from our server's names or vLLM's (the table in
/// crates/bench/README.md), null where the server exports no such series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ServerMetrics {
    /// The URL scraped.
    pub url: String,
    /// Seconds between scrapes.
    pub interval_s: f64,
    /// Whether the server answered with metrics.
    pub status: ScrapeStatus,
    /// Which names the server exported: `course`, `vllm`, or `unknown` (none of ours or vLLM's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub naming: Option<Naming>,
    /// The last failure, when a scrape failed (the run went on without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Scrapes that failed after the first success (a busy server may miss one).
    #[serde(default)]
    pub failed_scrapes: u32,
    /// The samples, in time order; the last is taken after the run's last request.
    pub samples: Vec<MetricsSample>,
}

/// Whether the server's `/metrics` answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScrapeStatus {
    /// At least one scrape parsed.
    Scraped,
    /// The server has no `/metrics` (HTTP 404): recorded, and the run went on.
    NotFound,
    /// No scrape succeeded (connection refused, another status, text that does not parse).
    Failed,
}

/// Whose metric names the server exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Naming {
    /// Ours: `course_requests_running`, `course_kv_cache_used_bytes`, ...
    Course,
    /// vLLM's: `vllm:num_requests_running`, `vllm:kv_cache_usage_perc`, ...
    Vllm,
    /// Neither set: every mapped field is null (only `process_resident_memory_bytes` may be read).
    Unknown,
}

/// One scrape. Gauges as read; counters (`*_total`) as the server's running totals since it
/// started, so the difference between two samples is what the run processed in between.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize, JsonSchema)]
pub struct MetricsSample {
    /// Seconds since the run started.
    pub t_s: f64,
    pub requests_running: Option<f64>,
    pub requests_waiting: Option<f64>,
    pub kv_cache_used_bytes: Option<f64>,
    pub kv_cache_capacity_bytes: Option<f64>,
    /// Fraction of the KV cache in use, 0 to 1 (vLLM's `kv_cache_usage_perc` is such a fraction).
    pub kv_cache_usage: Option<f64>,
    pub prompt_tokens_total: Option<f64>,
    pub generation_tokens_total: Option<f64>,
    pub resident_memory_bytes: Option<f64>,
}
