//! `exercise-2`: batch 8 against batch 16 on `serve`, measured by exercise 2's solution
//! (which starts the servers itself): the saturations, the two rates, the six comparisons, the
//! runs' percentiles, and its latency CDF picture.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use bench::report::Report;

use super::bench_figures::{add_comparison, add_run};
use super::{defaults, gpt2_model, model_said, Ctx};
use crate::sheet::{key_part, Sheet};

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let dir = ctx.exercise_dir(2)?;
    let mut cmd = Command::new(ctx.program("solution-2"));
    cmd.args(["--model", gpt2_model(ctx), "--device", "cpu"]);
    if ctx.quick {
        cmd.args([
            "--requests",
            "8",
            "--max-tokens",
            "4",
            "--prompt-words",
            "8",
        ])
        .args(["--calibration-requests", "8", "--replicates", "2"]);
    }
    cmd.arg("--server")
        .arg(ctx.program("serve"))
        .arg("--no-progress")
        .arg("--exercise-dir")
        .arg(&dir);
    ctx.step("batch 8 against 16", &mut cmd)?;
    let results = dir.join("results");
    let report = Report::read(&results.join("bench.json"))?;
    let sheet = figures(&report, ctx.recorded(&cmd));
    Ok(vec![
        ctx.write(
            &sheet,
            &format!(
                "serve at batch 8 and 16 ({}, CPU), exercise 2's solution{}",
                model_said(ctx),
                defaults(ctx)
            ),
        )?,
        ctx.picture(&results.join("latency.svg"), "latency-batch-8-vs-16.svg")?,
    ])
}

/// The comparison's metric as a key: `throughput`, `ttft_p90`, `tpot_p90`.
fn metric_key(metric: &str) -> String {
    match metric {
        "output_tokens_per_s" => "throughput".into(),
        "ttft_ms.p90" => "ttft_p90".into(),
        "tpot_ms.p90" => "tpot_p90".into(),
        other => key_part(other),
    }
}

/// `batch_8.saturation_rps`, `batch_16.saturation_rps`, `saturation_gain_pct` (how much more
/// batch 16 sustains), `below.rate_rps`, `above.rate_rps`; for each scenario and metric
/// `SCENARIO.METRIC.{ratio,ci_low,ci_high,verdict,...}` (METRIC: `throughput`, `ttft_p90`,
/// `tpot_p90`); and each run's figures under `batch_8.below`, `batch_16.above`, ….
pub fn figures(report: &Report, command: String) -> Sheet {
    let mut sheet = Sheet::new("exercise-2", command);
    sheet.machine = crate::machine::Machine::of(&report.environment);
    if let Some(cal) = &report.calibration {
        for (label, rps) in &cal.saturation_rps {
            sheet.num(
                format!("{}.saturation_rps", key_part(label)),
                *rps,
                "req/s",
                2,
            );
        }
        if let [(_, a), (_, b)] = cal.saturation_rps.as_slice() {
            sheet.num("saturation_gain_pct", (b / a - 1.0) * 100.0, "%", 0);
        }
        for (scenario, rate) in &cal.rates {
            sheet.num(
                format!("{}.rate_rps", key_part(scenario)),
                *rate,
                "req/s",
                1,
            );
        }
    }
    for c in &report.comparisons {
        let scenario = c.scenario.as_deref().unwrap_or("all");
        add_comparison(
            &mut sheet,
            &format!("{}.{}", key_part(scenario), metric_key(&c.metric)),
            c,
            "×",
        );
    }
    for run in &report.runs {
        // "batch-8 below" → batch_8.below
        let key = run
            .label
            .split_whitespace()
            .map(key_part)
            .collect::<Vec<_>>()
            .join(".");
        add_run(&mut sheet, &key, run);
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_six_comparisons_and_the_saturations_become_figures() {
        let report = crate::experiments::fixtures::bench("exercise-2");
        let s = figures(&report, "solution-2".into());
        let cal = report.calibration.as_ref().unwrap();
        assert_eq!(
            s.value("batch_8.saturation_rps"),
            Some(cal.saturation_rps[0].1)
        );
        assert_eq!(
            s.value("batch_16.saturation_rps"),
            Some(cal.saturation_rps[1].1)
        );
        assert_eq!(s.value("below.rate_rps"), Some(cal.rates[0].1));
        for scenario in ["below", "above"] {
            for metric in ["throughput", "ttft_p90", "tpot_p90"] {
                let key = format!("{scenario}.{metric}.verdict");
                assert!(s.text_of(&key).is_some(), "{key}");
            }
        }
        let above = report
            .comparisons
            .iter()
            .find(|c| c.scenario.as_deref() == Some("above") && c.metric == "tpot_ms.p90")
            .unwrap();
        assert_eq!(s.value("above.tpot_p90.ratio"), Some(above.ratio));
        let run = report
            .runs
            .iter()
            .find(|r| r.label == "batch-16 above")
            .unwrap();
        assert_eq!(
            s.value("batch_16.above.tpot.p90_ms"),
            run.metrics.tpot_ms.as_ref().map(|t| t.p90)
        );
    }
}
