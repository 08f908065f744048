//! `--scrape-metrics` against a local stub server: the gauges are recorded in bench.json beside
//! the latencies, and a server without `/metrics` is recorded as such while the run succeeds.

mod support;

use std::process::ExitCode;
use std::time::Duration;

use bench::cli;
use support::Behaviour;

fn run(url: &str, out: &std::path::Path) -> (ExitCode, serde_json::Value) {
    let args = support::small_run(url, out, &["--scrape-metrics", "--scrape-interval", "0.05"]);
    let code = cli::run(args).unwrap();
    let text = std::fs::read_to_string(out.join("bench.json")).unwrap();
    (code, serde_json::from_str(&text).unwrap())
}

#[test]
fn the_servers_gauges_are_recorded_beside_the_latencies() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (url, counters) = runtime.block_on(support::start(Behaviour {
        chunk_gap: Duration::from_millis(10),
        model: "test-model",
        metrics: true,
        ..Default::default()
    }));
    let dir = tempfile::tempdir().unwrap();
    let (code, json) = run(&url, dir.path());
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(json["schema"], bench::report::SCHEMA);
    let m = &json["runs"][0]["server_metrics"];
    assert_eq!(m["status"], "scraped", "{m}");
    assert_eq!(m["naming"], "course");
    assert_eq!(m["url"], format!("{url}/metrics"));
    let samples = m["samples"].as_array().unwrap();
    assert!(samples.len() >= 3, "{} samples", samples.len());
    let field = |s: &serde_json::Value, k: &str| s[k].as_f64();
    // Four requests in flight at most, and the scrapes saw some of them.
    let peak = samples
        .iter()
        .filter_map(|s| field(s, "requests_running"))
        .fold(0.0, f64::max);
    assert!((1.0..=4.0).contains(&peak), "peak running {peak}");
    for s in samples {
        let (used, cap, usage) = (
            field(s, "kv_cache_used_bytes").unwrap(),
            field(s, "kv_cache_capacity_bytes").unwrap(),
            field(s, "kv_cache_usage").unwrap(),
        );
        assert_eq!(cap, 8000.0);
        assert!((usage - used / cap).abs() < 1e-12, "{s}");
        assert!(s["prompt_tokens_total"].is_null(), "not exported: null");
    }
    // Counters only grow, and the last sample, taken after the run, holds every token.
    let generated: Vec<f64> = samples
        .iter()
        .map(|s| field(s, "generation_tokens_total").unwrap())
        .collect();
    assert!(generated.windows(2).all(|w| w[0] <= w[1]), "{generated:?}");
    let sent = counters
        .generated_tokens
        .load(std::sync::atomic::Ordering::SeqCst) as f64;
    assert_eq!(generated.last().copied(), Some(sent));
    let times: Vec<f64> = samples.iter().map(|s| field(s, "t_s").unwrap()).collect();
    assert!(times.windows(2).all(|w| w[0] < w[1]), "{times:?}");
    // The latencies are all there too.
    assert_eq!(json["runs"][0]["metrics"]["completed"], 72);
}

#[test]
fn a_server_without_metrics_is_recorded_and_the_run_succeeds() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (url, _) = runtime.block_on(support::start(Behaviour {
        chunk_gap: Duration::from_millis(2),
        model: "test-model",
        ..Default::default()
    }));
    let dir = tempfile::tempdir().unwrap();
    let (code, json) = run(&url, dir.path());
    assert_eq!(code, ExitCode::SUCCESS);
    let m = &json["runs"][0]["server_metrics"];
    assert_eq!(m["status"], "not_found", "{m}");
    assert!(m["error"].as_str().unwrap().contains("404"));
    assert_eq!(m["samples"].as_array().unwrap().len(), 0);
    assert_eq!(json["runs"][0]["metrics"]["completed"], 72);
    // And bench.json reads back through the one reader.
    bench::report::Report::read(&dir.path().join("bench.json")).unwrap();
}

#[test]
fn without_the_flag_nothing_is_scraped() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (url, _) = runtime.block_on(support::start(Behaviour {
        model: "test-model",
        metrics: true,
        ..Default::default()
    }));
    let dir = tempfile::tempdir().unwrap();
    let args = support::args(&[
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--concurrency",
        "2",
        "--requests",
        "8",
        "--replicates",
        "1",
        "--no-progress",
        "--out",
        dir.path().to_str().unwrap(),
    ]);
    assert_eq!(cli::run(args).unwrap(), ExitCode::SUCCESS);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("bench.json")).unwrap())
            .unwrap();
    assert!(json["runs"][0].get("server_metrics").is_none());
}
