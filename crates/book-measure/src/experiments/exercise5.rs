//! `exercise-5`: stock against fused MLP, by exercise 5's solution: the profiles of the three
//! stages (the stock ops, stage 1's fusion, stage 2's kernel fix) and generation benchmarked end
//! to end, stock against the final op; and one profile of the benchmark's prompt pass (batch 8 ×
//! 16 tokens, the stock MLP), where the activation rows' share is the most a fused op can save.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::Result;
use bench::report::Report as BenchReport;
use profiler::Report;

use super::bench_figures::{add_comparison, add_run};
use super::{defaults, gpt2_model, model_said, Ctx};
use crate::profile_figures::{self, record_machine, row, share};
use crate::sheet::Sheet;

/// The stages' folders under results/, as the solution writes them, and the row that carries
/// each one's activation (the stock `gelu`, then the solution's two ops).
pub const STAGES: [(&str, &str); 3] = [
    ("unfused", "gelu"),
    ("stage1", "fused_bias_gelu"),
    ("stage2", "fused_bias_gelu_fast"),
];

/// The stock rows a fused bias + GELU replaces.
const REPLACED: [&str; 2] = ["gelu", "bias_add"];

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let dir = ctx.exercise_dir(5)?;
    let mut cmd = Command::new(ctx.program("solution-5"));
    cmd.args(["--model", gpt2_model(ctx), "--device", "cpu"]);
    if ctx.quick {
        cmd.args(["--active", "1", "--repeats", "2", "--warmup", "0"])
            .args(["--batch", "2", "--prompt-len", "4", "--output-len", "2"]);
    }
    cmd.arg("--exercise-dir").arg(&dir);
    ctx.step("three stages and the benchmark", &mut cmd)?;
    let results = dir.join("results");
    let mut reports = Vec::new();
    for (stage, _) in STAGES {
        reports.push(read_profile(&results.join(stage).join("report.json"))?);
    }
    let bench = BenchReport::read(&results.join("bench.json"))?;
    // The benchmark's prompt pass: the solution's defaults, batch 8 and 16 prompt tokens.
    let prefill_dir = ctx.scratch("exercise-5-prefill")?;
    let (batch, seq) = if ctx.quick { ("2", "4") } else { ("8", "16") };
    let mut prefill = Command::new(ctx.program("gpt2"));
    prefill
        .args([
            "profile",
            "--model",
            gpt2_model(ctx),
            "--device",
            "cpu",
            "--mlp",
            "stock",
        ])
        .args(["--batch", batch, "--seq", seq, "--warmup", "1", "--active"])
        .arg(if ctx.quick { "1" } else { "3" })
        .arg("--out")
        .arg(&prefill_dir);
    ctx.step("prompt-pass profile", &mut prefill)?;
    let prefill_report = read_profile(&prefill_dir.join("report.json"))?;
    let sheet = figures(
        &reports,
        &prefill_report,
        &bench,
        format!("{}; {}", ctx.recorded(&cmd), ctx.recorded(&prefill)),
    );
    Ok(vec![ctx.write(
        &sheet,
        &format!(
            "exercise 5's solution ({}, CPU{})",
            model_said(ctx),
            defaults(ctx)
        ),
    )?])
}

fn read_profile(path: &Path) -> Result<Report> {
    Report::read_json(path).map_err(anyhow::Error::msg)
}

/// The summed share of the rows a fused op replaces (an upper bound: `bias_add` also holds the
/// attention's bias adds).
fn replaced_share(report: &Report) -> f64 {
    REPLACED
        .iter()
        .filter_map(|name| row(report, name).map(|r| share(report, r)))
        .sum()
}

/// Each stage's profile under its folder's name ([`profile_figures::add`]: `unfused.gelu.share`,
/// `stage1.fused_bias_gelu.gb_s`, …, `STAGE.step_ms`); each stage's activation row (the stock
/// `gelu`, then `fused_bias_gelu`, then `fused_bias_gelu_fast`) again under
/// `STAGE.activation.*` (`share`, `ms`, `gb_s`, `roofline_pct`, `reading`, `name`), and the two
/// fused rows under `stage1.fused.*` and `stage2.fused.*` as well; `stage2.share_cut_pct`;
/// `unfused.replaced.share` and `prefill.replaced.share` (gelu + bias_add in the profiled pass
/// and in the benchmark's prompt pass), `prefill.step_ms`; `step_ratio` (stock step / stage 2
/// step); and the benchmark: `bench.unfused.*`, `bench.fused.*` (tokens/s and latencies),
/// `bench.tok_s.{ratio,ci_low,ci_high,verdict,...}` (plain numbers), `bench.time_cut_pct` (the
/// cut in time per token, (1 − 1/ratio) × 100).
pub fn figures(stages: &[Report], prefill: &Report, bench: &BenchReport, command: String) -> Sheet {
    let mut sheet = Sheet::new("exercise-5", command);
    if let Some(first) = stages.first() {
        record_machine(&mut sheet, first);
    }
    for ((stage, activation), report) in STAGES.iter().zip(stages) {
        profile_figures::add(&mut sheet, stage, report);
        let Some(r) = row(report, activation) else {
            continue;
        };
        let mut prefixes = vec![format!("{stage}.activation")];
        if *stage != "unfused" {
            prefixes.push(format!("{stage}.fused"));
        }
        let steps = report.active_steps.max(1) as f64;
        for p in prefixes {
            sheet.num(format!("{p}.share"), share(report, r), "%", 1);
            sheet.num(format!("{p}.ms"), r.self_cpu_us / steps / 1000.0, "ms", 3);
            if let Some(f) = &r.roofline {
                sheet.num(format!("{p}.gb_s"), f.gbytes_per_s, "GB/s", 2);
                sheet.num(format!("{p}.roofline_pct"), f.pct_of_roofline, "%", 1);
            }
            if let Some(reading) = &r.reading {
                sheet.text(format!("{p}.reading"), reading.to_string());
            }
            sheet.text(format!("{p}.name"), *activation);
        }
    }
    if let (Some(a), Some(b)) = (
        sheet.value("unfused.activation.share"),
        sheet.value("stage2.activation.share"),
    ) {
        sheet.num("stage2.share_cut_pct", a - b, "%", 1);
    }
    if let Some(unfused) = stages.first() {
        sheet.num("unfused.replaced.share", replaced_share(unfused), "%", 1);
    }
    sheet.num("prefill.replaced.share", replaced_share(prefill), "%", 1);
    sheet.num(
        "prefill.step_ms",
        profile_figures::step_ms(prefill),
        "ms",
        1,
    );
    if let (Some(a), Some(c)) = (stages.first(), stages.last()) {
        sheet.num(
            "step_ratio",
            profile_figures::step_ms(a) / profile_figures::step_ms(c),
            "×",
            2,
        );
    }
    for (i, run) in bench.runs.iter().enumerate() {
        add_run(
            &mut sheet,
            if i == 0 {
                "bench.unfused"
            } else {
                "bench.fused"
            },
            run,
        );
    }
    if let Some(c) = &bench.comparison {
        add_comparison(&mut sheet, "bench.tok_s", c, "");
        if c.ratio > 0.0 {
            sheet.num("bench.time_cut_pct", (1.0 - 1.0 / c.ratio) * 100.0, "%", 1);
        }
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_three_stages_and_the_benchmark_become_figures() {
        let stages = ["unfused", "stage1", "stage2"]
            .map(|s| crate::experiments::fixtures::profile(&format!("exercise-5-{s}")));
        let bench = crate::experiments::fixtures::bench("exercise-5");
        let prefill = crate::experiments::fixtures::profile_tiny();
        let s = figures(&stages, &prefill, &bench, "solution-5".into());
        let gelu = row(&stages[0], "gelu").unwrap();
        assert_eq!(s.value("unfused.gelu.share"), Some(gelu.self_cpu_pct));
        assert_eq!(s.value("unfused.activation.share"), Some(gelu.self_cpu_pct));
        let fused = row(&stages[1], "fused_bias_gelu").unwrap();
        assert_eq!(s.value("stage1.fused.share"), Some(fused.self_cpu_pct));
        assert_eq!(s.value("stage1.activation.share"), Some(fused.self_cpu_pct));
        let fast = row(&stages[2], "fused_bias_gelu_fast").unwrap();
        assert_eq!(s.value("stage2.activation.share"), Some(fast.self_cpu_pct));
        assert_eq!(s.text_of("stage1.fused.name"), Some("fused_bias_gelu"));
        assert_eq!(
            s.value("stage2.share_cut_pct"),
            Some(gelu.self_cpu_pct - fast.self_cpu_pct)
        );
        let bias = row(&stages[0], "bias_add").unwrap();
        assert_eq!(
            s.value("unfused.replaced.share"),
            Some(gelu.self_cpu_pct + bias.self_cpu_pct)
        );
        let c = bench.comparison.as_ref().unwrap();
        assert_eq!(s.value("bench.tok_s.ratio"), Some(c.ratio));
        assert_eq!(s.text_of("bench.tok_s.verdict"), Some(c.verdict.as_str()));
        assert_eq!(
            s.value("bench.time_cut_pct"),
            Some((1.0 - 1.0 / c.ratio) * 100.0)
        );
        assert_eq!(
            s.value("bench.fused.tok_s"),
            Some(bench.runs[1].metrics.output_tokens_per_s)
        );
    }
}
