//! The load client end to end against a small streaming test server on loopback.

mod support;

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bench::cli;
use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::report::{Report, Run};
use support::{args, small_run, Behaviour};

fn config(base_url: &str, traffic: Traffic, bound: Bound) -> LoadConfig {
    LoadConfig {
        base_url: base_url.to_string(),
        model: "test-model".into(),
        traffic,
        bound,
        prompt: Prompt::RandomWords { words: 8, seed: 1 },
        max_tokens: 5,
        ignore_eos: true,
        include_usage: true,
        temperature: 0.0,
        warmup: 1,
        timeout_s: 30.0,
        api_key: None,
        progress: false,
    }
}

fn behaviour() -> Behaviour {
    Behaviour {
        chunk_gap: Duration::from_millis(2),
        model: "test-model",
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_streams_every_request_and_times_each_token() {
    let (url, counters) = support::start(behaviour()).await;
    let cfg = config(
        &url,
        Traffic::OpenLoop {
            rate: 200.0,
            seed: 3,
        },
        Bound::Requests(20),
    );
    let out = load::run(&cfg).await.unwrap();
    assert_eq!(out.records.len(), 20);
    assert_eq!(
        counters.requests.load(Ordering::SeqCst),
        21,
        "20 timed + 1 warm-up"
    );
    for r in &out.records {
        assert!(r.ok, "{r:?}");
        assert_eq!(r.output_tokens, 5, "usage.completion_tokens is used");
        assert_eq!(
            r.itl_ms.len(),
            4,
            "one gap between each pair of the 5 chunks"
        );
        assert!(r.ttft_ms > 0.0 && r.e2el_ms >= r.ttft_ms);
        assert!(r.tpot_ms().is_some());
        assert!(
            r.dispatch_lag_ms.is_some(),
            "open loop records its scheduling lag"
        );
    }
    let starts: Vec<f64> = out.records.iter().map(|r| r.start_ms).collect();
    assert!(
        starts.windows(2).all(|w| w[0] <= w[1]),
        "records are in send order"
    );
    // This server sends no `server_timings`: no breakdown, and the usual report.
    assert!(out.records.iter().all(|r| r.server_timings.is_none()));
    let run = Run::from_load("t".into(), &cfg, &Default::default(), out).unwrap();
    // Whether it did depends on how fast this machine serves 200 req/s (under qemu it may
    // not): the rule itself is tested on fixed arrivals in bench's metrics::tests.
    assert!(
        run.metrics.kept_up_with_arrivals.is_some(),
        "an open-loop run says whether the server kept up"
    );
    assert_eq!(run.metrics.ttft_breakdown, None);
    let table = bench::report::table(&run);
    assert!(
        table.contains("P90 TTFT") && !table.contains("queue + prefill"),
        "{table}"
    );
}

/// Each record keeps both times: when the request was due on the seeded Poisson schedule
/// (`start_ms - dispatch_lag_ms`) and when it was actually sent (`start_ms`, where its latencies
/// start). The schedule itself is exactly the seeded one, however late the sends were. (On a
/// single-threaded runtime, to show the pacer thread works there too.)
#[tokio::test(flavor = "current_thread")]
async fn open_loop_keeps_the_seeded_schedule_apart_from_the_actual_sends() {
    use rand::SeedableRng;
    use rand_distr::Distribution;
    let (url, _) = support::start(behaviour()).await;
    let (rate, seed, n) = (300.0, 11, 30);
    let cfg = config(&url, Traffic::OpenLoop { rate, seed }, Bound::Requests(n));
    let out = load::run(&cfg).await.unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let gaps = rand_distr::Exp::new(rate).unwrap();
    let mut due_ms = 0.0;
    let mut expected = Vec::new();
    for _ in 0..n {
        expected.push(due_ms);
        due_ms += gaps.sample(&mut rng) * 1000.0;
    }
    let mut intended: Vec<f64> = out
        .records
        .iter()
        .map(|r| r.start_ms - r.dispatch_lag_ms.unwrap())
        .collect();
    intended.sort_by(f64::total_cmp);
    for (got, want) in intended.iter().zip(&expected) {
        assert!(
            (got - want).abs() < 1e-6,
            "due at {want} ms, recorded {got} ms"
        );
    }
    assert!(
        out.records
            .iter()
            .all(|r| r.dispatch_lag_ms.unwrap() >= 0.0),
        "nothing leaves before it is due"
    );
    assert!(out.started.elapsed().as_secs_f64() >= out.duration_s());
}

/// With the progress bar on (drawn from its own thread), the run still ends and counts every
/// request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_with_the_progress_bar_on_finishes() {
    let (url, _) = support::start(behaviour()).await;
    for bound in [Bound::Requests(6), Bound::DurationS(0.05)] {
        let mut cfg = config(&url, Traffic::ClosedLoop { concurrency: 2 }, bound);
        cfg.progress = true;
        let out = load::run(&cfg).await.unwrap();
        assert!(!out.records.is_empty() && out.records.iter().all(|r| r.ok));
    }
}

/// The bytes on the wire are the documented JSON body.
#[test]
fn the_wire_body_is_the_json_body() {
    let cfg = config(
        "http://127.0.0.1:1",
        Traffic::OpenLoop { rate: 1.0, seed: 1 },
        Bound::Requests(1),
    );
    let sent: serde_json::Value = serde_json::from_slice(&cfg.body_bytes(7)).unwrap();
    assert_eq!(sent, cfg.body(7));
    for field in [
        "model",
        "prompt",
        "max_tokens",
        "temperature",
        "stream",
        "stream_options",
        "ignore_eos",
    ] {
        assert!(sent.get(field).is_some(), "{field}");
    }
    assert_eq!(cfg.completions_url(), "http://127.0.0.1:1/v1/completions");
    assert_eq!(cfg.endpoint(), load::Endpoint::Completions);

    // --endpoint chat: the same prompt as one user message, to /v1/chat/completions.
    let chat = cli::load_config(&args(&[
        "--base-url",
        "http://127.0.0.1:1/v1",
        "--endpoint",
        "chat",
        "--rate",
        "1",
    ]))
    .unwrap();
    assert_eq!(
        chat.completions_url(),
        "http://127.0.0.1:1/v1/chat/completions"
    );
    assert_eq!(chat.endpoint(), load::Endpoint::Chat);
    let body = chat.body(3);
    assert!(body.get("prompt").is_none());
    assert_eq!(body["messages"][0]["role"], "user");
    assert_eq!(
        body["messages"][0]["content"].as_str(),
        Some(chat.prompt.text(3).as_str())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_never_exceeds_its_concurrency() {
    let (url, counters) = support::start(behaviour()).await;
    let cfg = config(
        &url,
        Traffic::ClosedLoop { concurrency: 3 },
        Bound::Requests(12),
    );
    let out = load::run(&cfg).await.unwrap();
    assert_eq!(out.records.iter().filter(|r| r.ok).count(), 12);
    let max = counters.max_in_flight.load(Ordering::SeqCst);
    assert!((1..=3).contains(&max), "at most 3 in flight, saw {max}");
    assert!(out.records.iter().all(|r| r.dispatch_lag_ms.is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duration_bound_stops_sending_and_lets_requests_finish() {
    let (url, _) = support::start(behaviour()).await;
    let cfg = config(
        &url,
        Traffic::ClosedLoop { concurrency: 2 },
        Bound::DurationS(0.2),
    );
    let out = load::run(&cfg).await.unwrap();
    assert!(!out.records.is_empty());
    assert!(
        out.records.iter().all(|r| r.ok),
        "in-flight requests finish, none is cut"
    );
    assert!(out.duration_s() >= 0.2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_chunks_when_the_server_sends_no_usage() {
    let (url, _) = support::start(Behaviour {
        no_usage: true,
        ..behaviour()
    })
    .await;
    let mut cfg = config(
        &url,
        Traffic::ClosedLoop { concurrency: 1 },
        Bound::Requests(3),
    );
    cfg.max_tokens = 4;
    let out = load::run(&cfg).await.unwrap();
    assert!(out
        .records
        .iter()
        .all(|r| r.ok && r.output_tokens == 4 && r.prompt_tokens.is_none()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_stream_still_gets_measured() {
    let (url, _) = support::start(Behaviour {
        ignore_stream: true,
        ..behaviour()
    })
    .await;
    let cfg = config(
        &url,
        Traffic::ClosedLoop { concurrency: 2 },
        Bound::Requests(4),
    );
    let out = load::run(&cfg).await.unwrap();
    for r in &out.records {
        assert!(r.ok, "{r:?}");
        assert_eq!(r.ttft_ms, r.e2el_ms, "one body: first token = last token");
        assert_eq!(r.output_tokens, 5);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_model_fails_the_warm_up_with_a_next_step() {
    let (url, _) = support::start(behaviour()).await;
    let mut cfg = config(
        &url,
        Traffic::ClosedLoop { concurrency: 1 },
        Bound::Requests(1),
    );
    cfg.model = "nope".into();
    let err = load::run(&cfg)
        .await
        .err()
        .expect("warm-up must fail")
        .to_string();
    assert!(err.contains("404") && err.contains("/v1/models"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_during_the_run_are_recorded_not_fatal() {
    let (url, _) = support::start(behaviour()).await;
    let mut cfg = config(
        &url,
        Traffic::ClosedLoop { concurrency: 1 },
        Bound::Requests(2),
    );
    cfg.model = "nope".into();
    cfg.warmup = 0;
    let out = load::run(&cfg).await.unwrap();
    assert_eq!(out.records.len(), 2);
    for r in &out.records {
        assert!(!r.ok);
        assert_eq!(r.status, Some(404));
        assert!(r.error.as_deref().unwrap().contains("unknown model"));
    }
}

/// The CLI path: a load run writes bench.json and latency.svg, and --compare reads two of them.
#[test]
fn cli_writes_bench_json_and_svg_then_compares() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (fast, _) = runtime.block_on(support::start(behaviour()));
    let (slow, _) = runtime.block_on(support::start(Behaviour {
        chunk_gap: Duration::from_millis(15),
        ..behaviour()
    }));
    let dir = tempfile::tempdir().unwrap();
    let out_a = dir.path().join("a");
    let out_b = dir.path().join("b");
    for (url, out, label) in [(&fast, &out_a, "fast"), (&slow, &out_b, "slow")] {
        let code = cli::run(small_run(
            url,
            out,
            &["--slo-ttft-ms", "1000", "--label", label],
        ))
        .unwrap();
        assert_eq!(code, ExitCode::SUCCESS);
    }

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_a.join("bench.json")).unwrap()).unwrap();
    assert_eq!(json["schema"], bench::report::SCHEMA);
    for key in [
        "cpu_model",
        "threads",
        "device",
        "cargo_features",
        "dtype",
        "timing",
        "git_revision",
        "optimized_build",
        "crate_version",
    ] {
        assert!(json["environment"].get(key).is_some(), "environment.{key}");
    }
    let run = &json["runs"][0];
    assert_eq!(run["label"], "fast");
    for metric in ["ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"] {
        for field in ["mean", "median", "p90", "p99"] {
            assert!(run["metrics"][metric][field].is_f64(), "{metric}.{field}");
        }
        for field in ["ci95_median", "ci95_p90"] {
            let ci = &run["metrics"][metric][field];
            assert!(
                ci["low"].is_f64() && ci["method"] == "replicates" && ci["runs"] == 3,
                "{metric}.{field}: {ci}"
            );
        }
    }
    for field in ["output_tokens_per_s", "requests_per_s", "goodput"] {
        assert!(run["metrics"][field].as_f64().unwrap() > 0.0, "{field}");
    }
    assert_eq!(
        run["metrics"]["completed"], 72,
        "24 requests in each of the 3 default replicates"
    );
    assert_eq!(run["metrics"]["replicates"], 3);
    let replicates: Vec<u64> = run["requests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["replicate"].as_u64().unwrap())
        .collect();
    assert_eq!(
        (0..3)
            .map(|k| replicates.iter().filter(|&&r| r == k).count())
            .collect::<Vec<_>>(),
        [24, 24, 24]
    );
    let svg = std::fs::read_to_string(out_a.join("latency.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("fast TTFT") && svg.contains("fast E2EL"));

    // The 15 ms chunk gap makes E2EL clearly worse on the slow server. (On the mean: this test
    // server's latencies are near-constant, so a replicate shifted by a fraction of a millisecond
    // moves most of its requests across the pooled median, whose interval then has no ends.)
    let out_c = dir.path().join("c");
    let code = cli::run(args(&[
        "--compare",
        out_a.join("bench.json").to_str().unwrap(),
        out_b.join("bench.json").to_str().unwrap(),
        "--metric",
        "e2el_ms.mean",
        "--out",
        out_c.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    let combined = Report::read(&out_c.join("bench.json")).unwrap();
    let comparison = combined.comparison.expect("comparison written");
    assert_eq!(comparison.verdict.as_str(), "slower", "{comparison:?}");
    assert!(comparison.ratio > 2.0, "{comparison:?}");
    assert_eq!(combined.runs.len(), 2);
}

#[test]
fn cli_refuses_a_missing_traffic_shape_and_bad_files() {
    let err = cli::run(args(&["--requests", "3"]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("--rate") && err.contains("--concurrency"),
        "{err}"
    );
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.json");
    let text = format!(
        "{{\"schema\": \"{}\",\n \"runs\": 3}}",
        bench::report::SCHEMA
    );
    std::fs::write(&bad, text).unwrap();
    let err = cli::run(args(&[
        "--compare",
        bad.to_str().unwrap(),
        bad.to_str().unwrap(),
    ]))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("bad.json:") && err.contains("not a bench report"),
        "{err}"
    );
    let err = cli::run(args(&["--compare", "missing.json", "missing.json"])).unwrap_err();
    assert!(format!("{err:#}").contains("missing.json"), "{err:#}");
    let err = cli::run(args(&[
        "--compare",
        bad.to_str().unwrap(),
        bad.to_str().unwrap(),
        "--metric",
        "speed",
    ]))
    .unwrap_err()
    .to_string();
    assert!(err.contains("unknown metric"), "{err}");
    // A file of the previous schema is refused with why and what to run.
    let old = dir.path().join("old.json");
    std::fs::write(
        &old,
        "{\"schema\": \"bench-report/2\", \"runs\": [{\"ci95_p90\": [1, 2]}]}",
    )
    .unwrap();
    let err = cli::run(args(&[
        "--compare",
        old.to_str().unwrap(),
        old.to_str().unwrap(),
    ]))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("bench-report/2") && err.contains("too narrow") && err.contains("re-run"),
        "{err}"
    );
}

/// `--sweep`: one run per rate, the knee (here beyond the rates tried: the test server is
/// fast), bench.json with the sweep, and sweep.svg; a sweep without a target is refused.
#[test]
fn cli_sweep_writes_the_knee_and_its_svg() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (url, counters) = runtime.block_on(support::start(behaviour()));
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sweep");
    let code = cli::run(args(&[
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--sweep",
        "20,40",
        "--slo-ttft-ms",
        "2000",
        "--requests",
        "8",
        "--max-tokens",
        "3",
        "--no-progress",
        "--out",
        out.to_str().unwrap(),
    ]))
    .unwrap();
    assert_eq!(code, ExitCode::SUCCESS);
    assert_eq!(
        counters.requests.load(Ordering::SeqCst),
        17,
        "8 per rate and one warm-up"
    );
    let report = Report::read(&out.join("bench.json")).unwrap();
    assert_eq!(report.runs.len(), 2);
    let sweep = report.sweep.expect("the sweep is in bench.json");
    assert_eq!(
        sweep.points.iter().map(|p| p.rate).collect::<Vec<_>>(),
        vec![20.0, 40.0]
    );
    assert!(sweep.points.iter().all(|p| p.holds && p.values_ms[0] > 0.0));
    assert_eq!(sweep.knee, bench::sweep::Knee::Above(40.0));
    let svg = std::fs::read_to_string(out.join("sweep.svg")).unwrap();
    assert!(
        svg.contains("<svg") && svg.contains("target 2000 ms"),
        "the target line is drawn"
    );

    let err = cli::run(args(&[
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--sweep",
        "1,2",
    ]))
    .unwrap_err()
    .to_string();
    assert!(err.contains("--slo-ttft-ms"), "{err}");
    let err = cli::run(args(&[
        "--base-url",
        &url,
        "--model",
        "test-model",
        "--sweep",
        "2,1",
        "--slo-ttft-ms",
        "9",
    ]))
    .unwrap_err()
    .to_string();
    assert!(err.contains("increasing"), "{err}");
}

#[test]
fn a_measured_rate_is_rounded_down_to_two_figures_a_person_can_type() {
    for (rate, rounded, shown) in [
        (6.8391, 6.8, "6.8"),
        (1234.5, 1200.0, "1200"),
        (0.04567, 0.045, "0.045"),
        (4.5, 4.5, "4.5"),
        (1.2000001, 1.2, "1.2"),
    ] {
        let got = load::round_rate(rate);
        assert_eq!(got, rounded, "{rate}");
        assert_eq!(got.to_string(), shown, "{rate} prints as typed");
    }
}
