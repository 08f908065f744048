//! The contract with crates/bench: a bench.json written by the real bench crate, with its A/B
//! comparison, passes the grader's consistency checks, and the grader reads the same verdict
//! and P90 TTFT.

use bench::metrics::{compute, RequestRecord, Slo};
use bench::report::{Report, Run};
use bench::stats::{compare, Better, Stat};
use grader::results::bench_report::{BenchReport, Verdict};

fn records(ttft_base: f64, spread: f64, n: usize) -> Vec<RequestRecord> {
    (0..n)
        .map(|i| {
            // A deterministic spread of latencies around the base.
            let ttft = ttft_base + spread * ((i * 37 % n) as f64 / n as f64);
            let json = serde_json::json!({
                "start_ms": i as f64 * 10.0, "ok": true, "ttft_ms": ttft, "e2el_ms": ttft + 100.0,
                "itl_ms": [10.0, 10.0, 10.0], "output_tokens": 4
            });
            serde_json::from_value(json).expect("a request record")
        })
        .collect()
}

fn bench_json(a_base: f64, b_base: f64) -> (String, bench::stats::Comparison) {
    let (ra, rb) = (records(a_base, 20.0, 200), records(b_base, 20.0, 200));
    let run = |label: &str, r: Vec<RequestRecord>| Run {
        label: label.into(),
        config: serde_json::json!({}),
        metrics: compute(&r, 2.0, &Slo::default(), 7),
        requests: r,
        repeat_tokens_per_s: Vec::new(),
    };
    let ttft = |r: &[RequestRecord]| r.iter().map(|x| x.ttft_ms).collect::<Vec<_>>();
    let comparison = compare("ttft_ms.p90", &ttft(&ra), &ttft(&rb), Stat::P90, Better::Lower, 0.05, 7).expect("a comparison");
    let env = bench::environment::Environment::capture(bench::environment::Target::default());
    let mut report = Report::new(env, vec![run("a", ra), run("b", rb)]);
    report.comparison = Some(comparison.clone());
    (serde_json::to_string_pretty(&report).unwrap(), comparison)
}

#[test]
fn real_bench_reports_pass_with_every_verdict() {
    for (b_base, expected) in [(50.0, Verdict::Faster), (100.0, Verdict::WithinNoise), (150.0, Verdict::Slower)] {
        let (text, comparison) = bench_json(100.0, b_base);
        let parsed = BenchReport::parse(&text, "bench.json").unwrap_or_else(|p| panic!("{p}"));
        let c = parsed.comparison.expect("the comparison");
        assert_eq!(c.verdict, expected);
        assert_eq!(c.ratio, comparison.ratio);
        let p90 = serde_json::from_str::<serde_json::Value>(&text).unwrap()["runs"][0]["metrics"]["ttft_ms"]["p90"].as_f64();
        assert_eq!(parsed.runs[0].p90_ttft_ms, p90);
    }
}
