//! `serving`: the serving table of `gpt2 serve` (batch 8, continuous batching), measured with
//! `course bench` as scripts/compare-llama.sh measures our half: a lone request (one at a
//! time), then open-loop traffic at 1, 4 and 8 requests a second.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use anyhow::{Context, Result};
use bench::report::Report;
use bench::server::LocalServer;

use super::bench_figures::add_run;
use super::{gpt2_model, model_said, Ctx};
use crate::sheet::Sheet;

/// The open-loop rates, req/s.
pub const RATES: [u32; 3] = [1, 4, 8];

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let out = ctx.scratch("serving")?;
    let model = gpt2_model(ctx);
    let serve: Vec<String> = [
        "serve",
        "--model",
        model,
        "--device",
        "cpu",
        "--port",
        "0",
        "--max-batch-size",
        "8",
    ]
    .map(String::from)
    .to_vec();
    let spinner = ctx.spinner(format!("serving: starting gpt2 {}", serve.join(" ")));
    let server = LocalServer::start(
        &ctx.program("gpt2"),
        &serve,
        Some(&out.join("serve.log")),
        Duration::from_secs(600),
    );
    spinner.finish_and_clear();
    let server = server.context("gpt2 serve did not start (its last lines are above)")?;
    let (requests, tokens) = if ctx.quick { ("4", "4") } else { ("40", "16") };
    let lone_requests = if ctx.quick { "2" } else { "8" };
    let mut runs = Vec::new();
    let mut commands = Vec::new();
    let mut measure = |label: String, load: Vec<String>| -> Result<()> {
        let dir = out.join(&label);
        let mut cmd = Command::new(ctx.program("course"));
        cmd.args(["bench", "--base-url", &server.base_url, "--model", model])
            .args(&load);
        if ctx.quick {
            // The tiny model's context is 64 tokens.
            cmd.args(["--prompt-words", "8"]);
        }
        cmd.args([
            "--max-tokens",
            tokens,
            "--ignore-eos",
            "--no-progress",
            "--out",
        ])
        .arg(&dir);
        ctx.step(&format!("serving {label}"), &mut cmd)?;
        commands.push(ctx.recorded(&cmd).replace(&server.base_url, "URL"));
        runs.push((label, Report::read(&dir.join("bench.json"))?));
        Ok(())
    };
    let mut result = measure(
        "lone".into(),
        [
            "--concurrency",
            "1",
            "--requests",
            lone_requests,
            "--seed",
            "900",
        ]
        .map(String::from)
        .to_vec(),
    );
    for rate in RATES {
        if result.is_err() {
            break;
        }
        // With --quick, 16 times the rate under the same label: the tiny model keeps up, and the
        // run takes a quarter of a second instead of four.
        let sent = if ctx.quick { 16 * rate } else { rate };
        result = measure(
            format!("rate_{rate}"),
            vec![
                "--rate".into(),
                sent.to_string(),
                "--requests".into(),
                requests.into(),
                "--seed".into(),
                (100 + rate).to_string(),
            ],
        );
    }
    server.stop();
    result?;
    let sheet = figures(&runs, commands.join("; "));
    Ok(vec![ctx.write(&sheet, &format!("gpt2 serve at batch 8 ({}, f32, CPU), course bench one request at a time, then open loop", model_said(ctx)))?])
}

/// Each run under its label (`lone`, `rate_1`, `rate_4`, `rate_8`): `tok_s`, and for TTFT, ITL,
/// TPOT, E2EL and the server's own queue, prefill and decode times `.median_ms`, `.p90_ms` …
/// (as [`add_run`] names them), plus `requests` and `max_tokens`.
pub fn figures(runs: &[(String, Report)], command: String) -> Sheet {
    let mut sheet = Sheet::new("serving", command);
    if let Some((_, first)) = runs.first() {
        sheet.machine = crate::machine::Machine::of(&first.environment);
    }
    for (label, report) in runs {
        if let Some(run) = report.runs.first() {
            add_run(&mut sheet, label, run);
        }
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_run_of_the_serving_table_becomes_figures() {
        let report = crate::experiments::fixtures::bench("serving-rate");
        let runs = vec![("rate_4".to_string(), report.clone())];
        let s = figures(&runs, "x".into());
        let m = &report.runs[0].metrics;
        assert_eq!(s.value("rate_4.tok_s"), Some(m.output_tokens_per_s));
        assert_eq!(
            s.value("rate_4.ttft.p90_ms"),
            m.ttft_ms.as_ref().map(|t| t.p90)
        );
        let queue = m
            .ttft_breakdown
            .as_ref()
            .and_then(|b| b.queue_ms.as_ref())
            .map(|q| q.median);
        assert_eq!(s.value("rate_4.queue.median_ms"), queue);
    }
}
