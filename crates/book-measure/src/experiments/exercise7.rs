//! `exercise-7`: the traffic question, by exercise 7's solution against `gpt2 serve` (batch 8)
//! started here on a free port: a lone request's TTFT and the target, the calibration sweep and
//! its knee, R and 2R with their P90 TTFTs and verdicts; the sweep picture and its text.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use bench::report::Report;
use bench::server::LocalServer;
use bench::sweep::Knee;

use super::bench_figures::{add_run, rate_of};
use super::{defaults, gpt2_model, model_said, Ctx};
use crate::sheet::Sheet;

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let dir = ctx.exercise_dir(7)?;
    let model = gpt2_model(ctx);
    let batch = if ctx.quick { "1" } else { "8" };
    let serve: Vec<String> = [
        "serve",
        "--model",
        model,
        "--device",
        "cpu",
        "--port",
        "0",
        "--max-batch-size",
        batch,
    ]
    .map(String::from)
    .to_vec();
    let spinner = ctx.spinner(format!("exercise 7: starting gpt2 {}", serve.join(" ")));
    let server = LocalServer::start(
        &ctx.program("gpt2"),
        &serve,
        Some(&dir.join("serve.log")),
        Duration::from_secs(600),
    );
    spinner.finish_and_clear();
    let server = server.context("gpt2 serve did not start (its last lines are above)")?;
    let mut cmd = Command::new(ctx.program("solution-7"));
    cmd.args(["--base-url", &server.base_url]);
    if ctx.quick {
        // The tiny model serves a request (8 tokens, one sequence at a time) in about 2 ms. The
        // sweep starts at 80 req/s, not at an idle rate: between requests seconds apart the
        // pool's threads park, and on a busy 2-core machine waking them put the P90 at 5 req/s
        // at 8 to 39 ms (3 ms at 80 req/s), which failed a 5 ms and then a 20 ms target at the
        // first rate, so the sweep found no knee. A burst of 32 requests queues about 60 ms, so
        // the 20 ms target breaks at the top rates on any machine.
        cmd.args([
            "--sweep-requests",
            "32",
            "--sweep-rates",
            "80,320,1280,5120",
        ])
        .args(["--target-ms", "20", "--requests", "12", "--max-tokens", "8"])
        .args(["--prompt-words", "8"]);
    }
    cmd.arg("--no-progress").arg("--exercise-dir").arg(&dir);
    let stdout = ctx.step("traffic sweep", &mut cmd);
    let base_url = server.base_url.clone();
    server.stop();
    let stdout = stdout?;
    let results = dir.join("results");
    let sheet = figures(
        &results,
        &dir.join("answers.toml"),
        ctx.recorded(&cmd).replace(&base_url, "URL"),
    )?;
    Ok(vec![
        ctx.write(
            &sheet,
            &format!(
                "gpt2 serve at batch {batch} ({}, CPU), exercise 7's solution{}",
                model_said(ctx),
                defaults(ctx)
            ),
        )?,
        ctx.picture(&results.join("sweep/sweep.svg"), "exercise-7-sweep.svg")?,
        ctx.image_text("exercise-7-sweep.txt", &sweep_text(&stdout))?,
    ])
}

/// The lines of the solution's output the page shows: the target, the sweep, the knee, R and
/// the two P90s.
pub fn sweep_text(stdout: &str) -> String {
    let mut out = String::new();
    for line in stdout.lines() {
        let t = line.trim_start();
        let rate_line = line.starts_with(' ')
            && t.split_once(" req/s:")
                .is_some_and(|(rate, _)| rate.parse::<f64>().is_ok());
        if line.starts_with("target:")
            || line.starts_with("Sweep against")
            || rate_line
            || line.starts_with("knee:")
            || line.starts_with("R = ")
            || line.starts_with("P90 TTFT at R")
        {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// From results/{lone,sweep,rate-1x,rate-2x}/bench.json and the answers the solution filled in:
/// `lone.ttft.median_ms` (and the rest of the lone run), `target_ms`; the sweep's points
/// `sweep.N.rate_rps`, `sweep.N.p90_ttft_ms`, `sweep.N.margin`, `sweep.N.holds` (N from 1),
/// `sweep.points`, `sweep.highest_held_rps`, `sweep.first_failed_rps`; `knee_rps` (where the
/// knee was found between two rates), `knee.ci_low_rps`, `knee.ci_high_rps`, `knee.kind`
/// (`at`, `above` or `below`); `r_rps`, `r2_rps`; the two runs under `at_r.` and `at_2r.`
/// (`at_r.ttft.p90_ms`, its interval, …) with `at_r.verdict` and `at_2r.verdict` (the answer the
/// target's rule gives: yes, no, cannot tell).
pub fn figures(results: &Path, answers: &Path, command: String) -> Result<Sheet> {
    let mut sheet = Sheet::new("exercise-7", command);
    let lone = Report::read(&results.join("lone/bench.json"))?;
    sheet.machine = crate::machine::Machine::of(&lone.environment);
    add_run(&mut sheet, "lone", &lone.runs[0]);
    let sweep_report = Report::read(&results.join("sweep/bench.json"))?;
    let sweep = sweep_report
        .sweep
        .as_ref()
        .context("results/sweep/bench.json holds no sweep")?;
    if let Some(bound) = sweep.bounds.first() {
        sheet.num("target_ms", bound.bound_ms, "ms", 0);
    }
    sheet.num("sweep.points", sweep.points.len() as f64, "", 0);
    for (i, p) in sweep.points.iter().enumerate() {
        let n = i + 1;
        sheet.num(format!("sweep.{n}.rate_rps"), p.rate, "req/s", 2);
        if let Some(v) = p.values_ms.first() {
            sheet.num(format!("sweep.{n}.p90_ttft_ms"), *v, "ms", 1);
        }
        sheet.num(format!("sweep.{n}.margin"), p.margin, "", 2);
        sheet.text(
            format!("sweep.{n}.holds"),
            if p.holds { "holds" } else { "fails" },
        );
    }
    if let Some(p) = sweep.points.iter().rev().find(|p| p.holds) {
        sheet.num("sweep.highest_held_rps", p.rate, "req/s", 2);
    }
    if let Some(p) = sweep.points.iter().find(|p| !p.holds) {
        sheet.num("sweep.first_failed_rps", p.rate, "req/s", 2);
    }
    let (kind, at) = match sweep.knee {
        Knee::At(k) => ("at", k),
        Knee::Above(k) => ("above", k),
        Knee::Below(k) => ("below", k),
    };
    sheet.text("knee.kind", kind);
    sheet.num("knee_rps", at, "req/s", 2);
    if let Some([lo, hi]) = sweep.ci95_knee {
        sheet.num("knee.ci_low_rps", lo, "req/s", 2);
        sheet.num("knee.ci_high_rps", hi, "req/s", 2);
    }
    for (label, key) in [("rate-1x", "at_r"), ("rate-2x", "at_2r")] {
        let path = results.join(label).join("bench.json");
        let report = Report::read(&path)?;
        let run = &report.runs[0];
        if let Some(rate) = rate_of(run) {
            sheet.num(
                if key == "at_r" { "r_rps" } else { "r2_rps" },
                rate,
                "req/s",
                2,
            );
        }
        add_run(&mut sheet, key, run);
    }
    if let (Some(r), Some(k)) = (sheet.value("r_rps"), sheet.value("knee_rps")) {
        sheet.num("r_of_knee_pct", 100.0 * r / k, "%", 0);
    }
    let text = std::fs::read_to_string(answers)
        .with_context(|| format!("cannot read {}", answers.display()))?;
    let doc: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not TOML", answers.display()))?;
    for (field, key) in [
        ("target_holds_at_rate", "at_r.verdict"),
        ("target_holds_at_double", "at_2r.verdict"),
    ] {
        if let Some(v) = doc.get(field).and_then(|v| v.as_str()) {
            sheet.text(key, v);
        }
    }
    Ok(sheet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sweep_text_keeps_the_lines_the_page_shows() {
        let out = "calibration: 8 requests one at a time\n\
                   target: P90 TTFT ≤ 718 ms (4 × the lone median TTFT of 179.6 ms)\n\
                   Sweep against the target P90 TTFT ≤ 718 ms\n     \
                   0.830 req/s: ttft_ms 272.0 ms  margin 0.38  holds\n\
                   wrote x\n\
                   knee: the target holds up to about 2.52 req/s  [95% CI 0.83, 3.30]\n\
                   R = 0.62 req/s (60% of the knee, rounded down)\n\
                   rate-1x: 3 × 40 requests\n\
                   P90 TTFT at R = 0.62 req/s: 228.9 ms\n";
        let kept = sweep_text(out);
        assert_eq!(kept.lines().count(), 6, "{kept}");
        assert!(
            !kept.contains("calibration") && !kept.contains("wrote") && !kept.contains("rate-1x")
        );
    }

    #[test]
    fn the_sweep_knee_and_the_two_rates_become_figures() {
        let dir = crate::experiments::fixtures::dir("exercise-7");
        let s = figures(&dir.join("results"), &dir.join("answers.toml"), "x".into()).unwrap();
        let sweep = Report::read(&dir.join("results/sweep/bench.json"))
            .unwrap()
            .sweep
            .unwrap();
        assert_eq!(s.value("sweep.points"), Some(sweep.points.len() as f64));
        assert_eq!(s.value("sweep.1.rate_rps"), Some(sweep.points[0].rate));
        assert!(s.value("r_rps").is_some() && s.value("r2_rps").is_some());
        assert!((s.value("r2_rps").unwrap() - 2.0 * s.value("r_rps").unwrap()).abs() < 1e-9);
        assert!(s.text_of("at_r.verdict").is_some());
        assert!(s.value("at_2r.ttft.p90_ms").is_some());
        assert!(s.value("target_ms").is_some());
    }
}
