//! `bench.json` (schema [`SCHEMA`]) and the results table printed after a run.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::environment::Environment;
use crate::metrics::TtftBreakdown;
// A report's runs: re-exported so that `bench::report::{Report, Run}` names the file's two types.
pub use crate::run::Run;
use crate::stats::{Better, Comparison, Summary, Verdict};

use formats::bench::FILE;
/// The schema identifier, the versions it replaced and the migration message: the `formats`
/// crate's, which the grader reads with too.
pub use formats::bench::SCHEMA;

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
    /// How the rates of the runs were chosen, when a measurement chose them (exercise 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calibration: Option<Calibration>,
}

/// Saturation measurements and the rates chosen from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// How saturation was measured, e.g. "closed loop with twice the batch in flight, 40 requests".
    pub measured: String,
    /// The requests per second each configuration sustained, by label (`batch-8`, `batch-16`).
    pub saturation_rps: Vec<(String, f64)>,
    /// The open-loop rates then used, by scenario name (`below`, `above`).
    pub rates: Vec<(String, f64)>,
}

impl Report {
    pub fn new(environment: Environment, runs: Vec<Run>) -> Report {
        Report {
            schema: SCHEMA.to_string(),
            environment,
            runs,
            comparison: None,
            comparisons: Vec::new(),
            sweep: None,
            calibration: None,
        }
    }

    pub fn write(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create the folder {}", dir.display()))?;
        }
        let text = serde_json::to_string_pretty(self)?;
        std::fs::write(path, text + "\n").with_context(|| {
            format!(
                "cannot write {}: check the folder is writable",
                path.display()
            )
        })
    }

    pub fn read(path: &Path) -> Result<Report> {
        let text = std::fs::read_to_string(path).with_context(|| {
            format!(
                "cannot read {}: pass a bench.json written by `course bench`",
                path.display()
            )
        })?;
        let not_a_report = |e: serde_json::Error| {
            anyhow::anyhow!(
                "{}:{}:{}: not a bench report ({e}); expected a bench.json with \"schema\": \"{SCHEMA}\"",
                path.display(),
                e.line(),
                e.column()
            )
        };
        // The schema first: an older file's other fields may no longer parse.
        #[derive(Deserialize)]
        struct Schema {
            schema: String,
        }
        let schema = serde_json::from_str::<Schema>(&text)
            .map_err(not_a_report)?
            .schema;
        FILE.check(Some(&schema), &path.display().to_string())?;
        let report: Report = serde_json::from_str(&text).map_err(not_a_report)?;
        if report.runs.is_empty() {
            bail!(
                "{}: the report holds no runs; re-run the benchmark",
                path.display()
            );
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
    line(
        &mut out,
        "Benchmark duration (s):",
        format!("{:.2}", m.duration_s),
    );
    if let Some(input) = m.total_input_tokens {
        line(&mut out, "Total input tokens:", input.to_string());
    }
    line(
        &mut out,
        "Total generated tokens:",
        m.total_output_tokens.to_string(),
    );
    line(
        &mut out,
        "Request throughput (req/s):",
        format!("{:.2}", m.requests_per_s),
    );
    let tput_ci = m
        .ci95_output_tokens_per_s
        .as_ref()
        .map(|i| format!("  95% CI {}", i.brackets(2)))
        .unwrap_or_default();
    line(
        &mut out,
        "Output token throughput (tok/s):",
        format!("{:.2}{tput_ci}", m.output_tokens_per_s),
    );
    line(
        &mut out,
        "Goodput (req/s):",
        format!(
            "{:.2}  ({:.1}% met the SLO)",
            m.goodput,
            m.slo_attainment * 100.0
        ),
    );
    for (title, name, summary) in [
        ("Time to First Token", "TTFT", &m.ttft_ms),
        (
            "Time per Output Token (excl. 1st token)",
            "TPOT",
            &m.tpot_ms,
        ),
        ("Inter-token Latency", "ITL", &m.itl_ms),
        ("End-to-end Latency", "E2EL", &m.e2el_ms),
    ] {
        section(&mut out, title, name, summary.as_ref());
    }
    if let Some(lag) = &m.dispatch_lag_ms {
        section(
            &mut out,
            "Client dispatch lag (open loop)",
            "lag",
            Some(lag),
        );
    }
    if let Some(b) = &m.ttft_breakdown {
        breakdown(&mut out, b);
    }
    let _ = writeln!(out, "{:-^72}", " Intervals ");
    let _ = writeln!(out, "{}", intervals_note(m.replicates));
    if let Some(kept_up) = m.kept_up_with_arrivals {
        let verdict = if kept_up {
            "yes: requests in flight stayed level, so the arrivals set the throughput"
        } else {
            "no: requests in flight kept piling up, so the server fell behind the arrivals"
        };
        line(&mut out, "Kept up with the arrivals:", verdict.to_string());
    }
    let _ = writeln!(out, "{:=<72}", "");
    out
}

/// What the 95% intervals of a run of `replicates` independent runs cover.
fn intervals_note(replicates: usize) -> String {
    if replicates > 1 {
        format!("95% CIs are over {replicates} independent runs (replicates): they see run-to-run change.")
    } else {
        "95% CIs are over the 4 quarters of this one run: they cover this run only\n\
         (add --replicates 3 for intervals that see how much the next run would differ)."
            .to_string()
    }
}

fn section(out: &mut String, title: &str, name: &str, s: Option<&Summary>) {
    let _ = writeln!(out, "{:-^72}", format!(" {title} "));
    let Some(s) = s else {
        let _ = writeln!(out, "{:<40} no samples", format!("{name} (ms):"));
        return;
    };
    let ci = |i: &Option<crate::intervals::Interval>| {
        i.as_ref()
            .map(|i| format!("  95% CI {}", i.brackets(2)))
            .unwrap_or_default()
    };
    let _ = writeln!(
        out,
        "{:<40} {:.2}  (std {:.2})",
        format!("Mean {name} (ms):"),
        s.mean,
        s.std
    );
    let _ = writeln!(
        out,
        "{:<40} {:.2}{}",
        format!("Median {name} (ms):"),
        s.median,
        ci(&s.ci95_median)
    );
    let _ = writeln!(
        out,
        "{:<40} {:.2}{}",
        format!("P90 {name} (ms):"),
        s.p90,
        ci(&s.ci95_p90)
    );
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
    let _ = writeln!(
        out,
        "{:-^72}",
        " TTFT = queue + prefill + rest (server-reported) "
    );
    let _ = writeln!(
        out,
        "{:<28}{:>11}{:>11}{:>11}{:>11}",
        format!("({} requests)", b.requests),
        "median",
        "P90",
        "P99",
        "mean"
    );
    for (name, s) in [
        ("Queue (ms):", &b.queue_ms),
        ("Prefill (ms):", &b.prefill_ms),
        ("Rest: network, HTTP (ms):", &b.rest_ms),
        ("Decode, after TTFT (ms):", &b.decode_ms),
    ] {
        if let Some(s) = s {
            let _ = writeln!(
                out,
                "{name:<28}{:>11.2}{:>11.2}{:>11.2}{:>11.2}",
                s.median, s.p90, s.p99, s.mean
            );
        }
    }
}

/// One paragraph a person can act on: the ratio, its interval and what covers it, the verdict
/// in words, and what to do next.
pub fn comparison_text(c: &Comparison, label_a: &str, label_b: &str) -> String {
    let direction = match c.better {
        Better::Lower => "lower is better",
        Better::Higher => "higher is better",
    };
    let t = c.min_effect * 100.0;
    let high = if c.ci_high.is_finite() {
        format!("{:.3}", c.ci_high)
    } else {
        "∞".to_string()
    };
    let covers = match c.method {
        crate::intervals::Method::Replicates => {
            format!("over {} and {} independent runs", c.runs[0], c.runs[1])
        }
        crate::intervals::Method::Sections => {
            "over each run's quarters: it covers these runs only".to_string()
        }
    };
    let verdict = if c.set_by_arrivals {
        "no verdict about the servers: both runs kept up with the offered rate, so each measured \
         the arrivals, not what its server can sustain. Load them above saturation (a higher \
         --rate) or closed loop (--concurrency) to compare capacity."
            .to_string()
    } else {
        match c.verdict {
            Verdict::Faster => format!("FASTER: {label_b} beats {label_a} by {}.", change(c)),
            Verdict::Slower => format!("SLOWER: {label_b} trails {label_a} by {}.", change(c)),
            Verdict::Same => format!(
                "SAME: the whole interval lies inside ±{t:.0}%: whatever the difference is, it is \
                 smaller than the {t:.0}% that matters."
            ),
            Verdict::Inconclusive if c.excludes_one => format!(
                "INCONCLUSIVE: {label_b} is {} by {}: not surely by the {t:.0}% that matters. \
                 More requests{} would tell.",
                if good_side(c) { "better" } else { "worse" },
                change(c),
                replicates_hint(c)
            ),
            Verdict::Inconclusive => format!(
                "INCONCLUSIVE: the interval reaches across the ±{t:.0}% band, so this comparison cannot \
                 tell. More requests{} would narrow it.",
                replicates_hint(c)
            ),
        }
    };
    format!(
        "Comparing {metric} ({direction})\n  A = {label_a}: {a:.3}\n  B = {label_b}: {b:.3}\n  \
         B/A = {ratio:.3}  [95% CI {lo:.3}, {high}] {covers}\n  minimum effect ±{t:.0}%\n  verdict: {verdict}\n",
        metric = c.metric,
        a = c.a,
        b = c.b,
        ratio = c.ratio,
        lo = c.ci_low,
    )
}

/// Whether the interval lies on the good side of 1 (B better) rather than the bad one.
fn good_side(c: &Comparison) -> bool {
    match c.better {
        Better::Lower => c.ci_high < 1.0,
        Better::Higher => c.ci_low > 1.0,
    }
}

/// "somewhere between 3% and 20%": the interval as a relative change, nearest end first.
fn change(c: &Comparison) -> String {
    let (near, far) = if c.ci_low > 1.0 {
        (c.ci_low - 1.0, c.ci_high - 1.0)
    } else {
        (1.0 - c.ci_high, 1.0 - c.ci_low)
    };
    let pct = |x: f64| {
        if x.is_finite() {
            format!("{:.0}%", x * 100.0)
        } else {
            "an unbounded amount".to_string()
        }
    };
    format!("somewhere between {} and {}", pct(near), pct(far))
}

fn replicates_hint(c: &Comparison) -> &'static str {
    if c.method == crate::intervals::Method::Sections {
        " or replicates (--replicates 3)"
    } else {
        " or replicates"
    }
}
