//! Benchmarking with noise bounds: how fast is the system, and is B really faster than A?
//!
//! - [`stats`]: numpy-compatible percentiles, Tukey outlier flags, and A/B comparisons with a
//!   faster / slower / same / inconclusive verdict (the `verdict` crate's rule).
//! - [`intervals`]: 95% intervals that hold when a run's requests are not independent (over
//!   replicate runs, or over one run's quarters).
//! - [`metrics`]: TTFT, TPOT, ITL, E2EL, throughput and goodput, as vLLM's serving benchmark
//!   defines them.
//! - [`load`]: a load client for any OpenAI-compatible `/v1/completions` server (open-loop
//!   Poisson arrivals or closed-loop concurrency, streamed responses).
//! - [`inprocess`]: the same metrics for a generation function called directly.
//! - [`report`], [`plot`], [`environment`]: `bench.json`, `latency.svg`, and where it ran.
//! - [`budget`]: a profiler report grouped into the book's budget lines, as a bar chart.
//! - [`server`]: start a server process for a run and stop it afterwards.
//! - [`cli`]: `course bench`.
//!
//! This crate knows nothing of GPT-2 or candle: callers hand it closures and URLs (and
//! [`budget`] reads the profiler's report.json, not the model).

pub mod budget;
pub mod cli;
pub mod compare;
pub mod environment;
pub mod filled;
pub mod inprocess;
pub mod intervals;
pub mod load;
mod measure;
pub mod metrics;
pub mod percentile;
pub mod plot;
pub mod report;
pub mod run;
pub mod scrape;
pub mod server;
pub mod stats;
pub mod sweep;
