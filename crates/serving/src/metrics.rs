//! `GET /metrics`: the server's gauges and counters in the Prometheus text format, written with
//! `prometheus-client`. The names are the ones `course bench --scrape-metrics` reads
//! (crates/bench/README.md, "The server's gauges"), beside vLLM's:
//!
//! | ours | what | vLLM |
//! |---|---|---|
//! | `course_requests_running` | requests in the running batch | `vllm:num_requests_running` |
//! | `course_requests_waiting` | requests queued or held for KV-cache room | `vllm:num_requests_waiting` |
//! | `course_kv_cache_used_bytes` | KV-cache bytes reserved by admitted requests | — |
//! | `course_kv_cache_capacity_bytes` | the KV-cache budget (`--kv-cache-bytes`) | — |
//! | `course_kv_cache_usage_ratio` | used / capacity, a fraction 0..1 | `vllm:kv_cache_usage_perc` (also a fraction, despite its name) |
//! | `course_prompt_tokens_total` | prompt tokens prefilled since start | `vllm:prompt_tokens_total` |
//! | `course_generation_tokens_total` | tokens generated since start | `vllm:generation_tokens_total` |
//! | `process_resident_memory_bytes` | the process's resident memory (Linux) | the same |
//!
//! vLLM's usage is the share of its KV-cache blocks in use; ours is the share of the byte budget
//! reserved, each admitted request holding its whole cache (prompt + max_tokens positions) from
//! admission to its end, as this engine allocates it.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Metric, Registry};

/// Every series the server exports; clones share their values.
pub struct Metrics {
    registry: Registry,
    pub requests_running: Gauge,
    pub requests_waiting: Gauge,
    pub kv_used_bytes: Gauge,
    pub kv_capacity_bytes: Gauge,
    pub kv_usage: Gauge<f64, AtomicU64>,
    pub prompt_tokens: Counter,
    pub generation_tokens: Counter,
    pub resident_memory_bytes: Gauge,
    capacity: u64,
}

impl Metrics {
    /// The series of a server whose KV-cache budget is `capacity` bytes.
    pub fn new(capacity: u64) -> Metrics {
        let mut registry = Registry::default();
        let r = &mut registry;
        let m = Metrics {
            requests_running: series(
                r,
                "course_requests_running",
                "Requests in the running batch",
            ),
            requests_waiting: series(
                r,
                "course_requests_waiting",
                "Requests queued or held for KV-cache room",
            ),
            kv_used_bytes: series(
                r,
                "course_kv_cache_used_bytes",
                "KV-cache bytes reserved by admitted requests",
            ),
            kv_capacity_bytes: series(
                r,
                "course_kv_cache_capacity_bytes",
                "The KV-cache budget in bytes (--kv-cache-bytes)",
            ),
            kv_usage: series(
                r,
                "course_kv_cache_usage_ratio",
                "Fraction of the KV-cache budget reserved, 0 to 1",
            ),
            // prometheus-client adds `_total` to a counter's name.
            prompt_tokens: series(
                r,
                "course_prompt_tokens",
                "Prompt tokens prefilled since the server started",
            ),
            generation_tokens: series(
                r,
                "course_generation_tokens",
                "Tokens generated since the server started",
            ),
            resident_memory_bytes: series(
                r,
                "process_resident_memory_bytes",
                "Resident memory of the server process in bytes",
            ),
            capacity,
            registry,
        };
        m.kv_capacity_bytes.set(gauge_value(capacity));
        m
    }

    /// Records `used` bytes reserved out of the capacity.
    pub fn set_kv_used(&self, used: u64) {
        self.kv_used_bytes.set(gauge_value(used));
        self.kv_usage.set(match self.capacity {
            0 => 0.0,
            c => used as f64 / c as f64,
        });
    }

    /// The text a scrape gets.
    pub fn render(&self) -> String {
        if let Some(bytes) = resident_memory() {
            self.resident_memory_bytes.set(gauge_value(bytes));
        }
        let mut text = String::new();
        // Writing into a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut text, &self.registry);
        text
    }
}

/// A new series registered as `name` with `help`; the registry keeps a clone, which shares the
/// value, so the server sets the one returned and a scrape reads it.
fn series<M: Metric + Clone + Default>(registry: &mut Registry, name: &str, help: &str) -> M {
    let metric = M::default();
    registry.register(name, help, metric.clone());
    metric
}

/// A count of bytes as a gauge holds it (an i64), the largest gauge value past that.
fn gauge_value(bytes: u64) -> i64 {
    i64::try_from(bytes).unwrap_or(i64::MAX)
}

/// This process's resident memory: `VmRSS` of `/proc/self/status`, in kB (Linux only).
fn resident_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}
