//! `bench.json` (schema `bench-report/2`) and the results table printed after a run.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::environment::Environment;
use crate::metrics::{RequestRecord, RunMetrics, TtftBreakdown};
use crate::stats::{Comparison, Summary};

pub const SCHEMA: &str = "bench-report/2";

/// The whole file: where it was measured, one or more runs, and optionally an A/B comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub environment: Environment,
    pub runs: Vec<Run>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// Several comparisons of the same two runs, one per metric (exercise 2: throughput, P90
    /// TTFT and P90 TPOT of batch 16 against batch 8). Absent when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub comparisons: Vec<Comparison>,
    /// `--sweep` only: the target, each rate's percentile and the knee.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<crate::sweep::Sweep>,
}

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
}

impl Report {
    pub fn new(environment: Environment, runs: Vec<Run>) -> Report {
        Report { schema: SCHEMA.to_string(), environment, runs, comparison: None, comparisons: Vec::new(), sweep: None }
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the folder {}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("cannot write {}: check the folder is writable", path.display()))
    }

    pub fn read(path: &Path) -> Result<Report> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!("cannot read {}: pass a bench.json written by `course bench`", path.display())
        })?;
        let report: Report = serde_json::from_str(&text).map_err(|e| {
            anyhow::anyhow!(
                "{}:{}:{}: not a bench report ({e}); expected a bench.json with \"schema\": \"{SCHEMA}\"",
                path.display(),
                e.line(),
                e.column()
            )
        })?;
        if report.schema != SCHEMA {
            bail!(
                "{}: schema is \"{}\", this version reads \"{SCHEMA}\"; re-run the benchmark to \
                 write a current file",
                path.display(),
                report.schema
            );
        }
        if report.runs.is_empty() {
            bail!("{}: the report holds no runs; re-run the benchmark", path.display());
        }
        Ok(report)
    }
}

/// The results table, laid out like vLLM's "Serving Benchmark Result", with 95% intervals.
pub fn table(run: &Run) -> String {
    let m = &run.metrics;
    let mut out = String::new();
    let line = |out: &mut String, name: &str, value: String| {
        let _ = writeln!(out, "{name:<40} {value}");
    };
    let _ = writeln!(out, "{:=^72}", format!(" Benchmark result: {} ", run.label));
    line(&mut out, "Successful requests:", m.completed.to_string());
    line(&mut out, "Failed requests:", m.failed.to_string());
    line(&mut out, "Benchmark duration (s):", format!("{:.2}", m.duration_s));
    if let Some(input) = m.total_input_tokens {
        line(&mut out, "Total input tokens:", input.to_string());
    }
    line(&mut out, "Total generated tokens:", m.total_output_tokens.to_string());
    line(&mut out, "Request throughput (req/s):", format!("{:.2}", m.requests_per_s));
    let tput_ci = m
        .ci95_output_tokens_per_s
        .map(|[lo, hi]| format!("  [95% CI {lo:.2}, {hi:.2}]"))
        .unwrap_or_default();
    line(&mut out, "Output token throughput (tok/s):", format!("{:.2}{tput_ci}", m.output_tokens_per_s));
    line(
        &mut out,
        "Goodput (req/s):",
        format!("{:.2}  ({:.1}% met the SLO)", m.goodput, m.slo_attainment * 100.0),
    );
    for (title, name, summary) in [
        ("Time to First Token", "TTFT", &m.ttft_ms),
        ("Time per Output Token (excl. 1st token)", "TPOT", &m.tpot_ms),
        ("Inter-token Latency", "ITL", &m.itl_ms),
        ("End-to-end Latency", "E2EL", &m.e2el_ms),
    ] {
        section(&mut out, title, name, summary.as_ref());
    }
    if let Some(lag) = &m.dispatch_lag_ms {
        section(&mut out, "Client dispatch lag (open loop)", "lag", Some(lag));
    }
    if let Some(b) = &m.ttft_breakdown {
        breakdown(&mut out, b);
    }
    let _ = writeln!(out, "{:=<72}", "");
    out
}

fn section(out: &mut String, title: &str, name: &str, s: Option<&Summary>) {
    let _ = writeln!(out, "{:-^72}", format!(" {title} "));
    let Some(s) = s else {
        let _ = writeln!(out, "{:<40} no samples", format!("{name} (ms):"));
        return;
    };
    let [mlo, mhi] = s.ci95_median;
    let [plo, phi] = s.ci95_p90;
    let _ = writeln!(out, "{:<40} {:.2}  (std {:.2})", format!("Mean {name} (ms):"), s.mean, s.std);
    let _ = writeln!(out, "{:<40} {:.2}  [95% CI {mlo:.2}, {mhi:.2}]", format!("Median {name} (ms):"), s.median);
    let _ = writeln!(out, "{:<40} {:.2}  [95% CI {plo:.2}, {phi:.2}]", format!("P90 {name} (ms):"), s.p90);
    let _ = writeln!(out, "{:<40} {:.2}", format!("P99 {name} (ms):"), s.p99);
    if s.outliers > 0 {
        let _ = writeln!(
            out,
            "{:<40} {} of {} (kept)",
            format!("Outliers beyond Tukey fences:"),
            s.outliers,
            s.n
        );
    }
}

/// TTFT = queue + prefill + rest, each with its percentiles: which one made the slow requests
/// slow. Shown only when the server reported its timings.
fn breakdown(out: &mut String, b: &TtftBreakdown) {
    let _ = writeln!(out, "{:-^72}", " TTFT = queue + prefill + rest (server-reported) ");
    let _ = writeln!(out, "{:<28}{:>11}{:>11}{:>11}{:>11}", format!("({} requests)", b.requests), "median", "P90", "P99", "mean");
    for (name, s) in [
        ("Queue (ms):", &b.queue_ms),
        ("Prefill (ms):", &b.prefill_ms),
        ("Rest: network, HTTP (ms):", &b.rest_ms),
        ("Decode, after TTFT (ms):", &b.decode_ms),
    ] {
        if let Some(s) = s {
            let _ = writeln!(out, "{name:<28}{:>11.2}{:>11.2}{:>11.2}{:>11.2}", s.median, s.p90, s.p99, s.mean);
        }
    }
}

/// One paragraph a person can act on.
pub fn comparison_text(c: &Comparison, label_a: &str, label_b: &str) -> String {
    let direction = match c.better {
        crate::stats::Better::Lower => "lower is better",
        crate::stats::Better::Higher => "higher is better",
    };
    let verdict = match c.verdict {
        crate::stats::Verdict::Faster => format!("{label_b} is FASTER than {label_a}"),
        crate::stats::Verdict::Slower => format!("{label_b} is SLOWER than {label_a}"),
        crate::stats::Verdict::WithinNoise => format!(
            "{label_b} and {label_a} are WITHIN NOISE: the interval reaches inside ±{:.0}%; \
             collect more requests or accept that they are the same",
            c.threshold * 100.0
        ),
    };
    format!(
        "Comparing {metric} ({direction})\n  A = {label_a}: {a:.3}\n  B = {label_b}: {b:.3}\n  \
         B/A = {ratio:.3}  [95% CI {lo:.3}, {hi:.3}], noise threshold ±{t:.0}%\n  verdict: {verdict}\n",
        metric = c.metric,
        a = c.a,
        b = c.b,
        ratio = c.ratio,
        lo = c.ci_low,
        hi = c.ci_high,
        t = c.threshold * 100.0,
    )
}
