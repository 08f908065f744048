//! The contract with crates/bench: a bench.json written by the real bench crate, with its A/B
//! comparison, passes the grader's consistency checks with each of the four verdicts (and with
//! an interval open above), and the grader reads the same verdict, ratio and P90 TTFT.

use bench::compare::{compare_runs, MetricChoice};
use bench::metrics::{compute, RequestRecord, Slo};
use bench::report::{Report, Run};
use grader::results::bench_report::{BenchReport, Verdict};

/// Three replicates of `n` requests whose TTFTs spread evenly over `base..base + spread`, in an
/// order with no trend; replicate k `shift × k` ms slower than the first (runs that disagree).
fn run(label: &str, base: f64, spread: f64, shift: f64, n: usize) -> Run {
    let requests: Vec<RequestRecord> = (0..3 * n)
        .map(|j| {
            let (k, i) = (j / n, j % n);
            let ttft = base + spread * (((i * 37 + k * 11) % n) as f64 / n as f64) + shift * k as f64;
            let json = serde_json::json!({
                "replicate": k, "start_ms": i as f64 * 10.0, "ok": true, "ttft_ms": ttft, "e2el_ms": ttft + 100.0,
                "itl_ms": [10.0, 10.0, 10.0], "output_tokens": 4
            });
            serde_json::from_value(json).expect("a request record")
        })
        .collect();
    let metrics = compute(&requests, &[2.0; 3], &Slo::default());
    Run {
        label: label.into(),
        config: serde_json::json!({}),
        metrics,
        requests,
        repeat_tokens_per_s: Vec::new(),
        server_metrics: None,
    }
}

fn bench_json(a: Run, b: Run) -> (String, bench::stats::Comparison) {
    let comparison = compare_runs(&a, &b, MetricChoice::parse("ttft_ms.p90").unwrap(), 0.05)
        .expect("a comparison");
    let env = bench::environment::Environment::capture(bench::environment::Target::default());
    let mut report = Report::new(env, vec![a, b]);
    report.comparison = Some(comparison.clone());
    (serde_json::to_string_pretty(&report).unwrap(), comparison)
}

#[test]
fn real_bench_reports_pass_with_every_verdict() {
    let cases = [
        (run("b", 50.0, 20.0, 0.0, 200), Verdict::Faster),
        (run("b", 100.2, 20.0, 0.0, 200), Verdict::Same),
        (run("b", 150.0, 20.0, 0.0, 200), Verdict::Slower),
        (run("b", 100.0, 20.0, 25.0, 40), Verdict::Inconclusive),
    ];
    for (b, expected) in cases {
        let (text, comparison) = bench_json(run("a", 100.0, 20.0, 0.0, 200), b);
        let parsed = BenchReport::parse(&text, "bench.json").unwrap_or_else(|p| panic!("{p}"));
        let c = parsed.comparison.expect("the comparison");
        assert_eq!(c.verdict, expected, "{comparison:?}");
        // serde_json's default parser may differ from the written number in the last bit.
        assert!(
            (c.ratio - comparison.ratio).abs() < 1e-12
                && (c.ci_high == comparison.ci_high
                    || (c.ci_high - comparison.ci_high).abs() < 1e-12),
            "{c:?}"
        );
        let p90 = serde_json::from_str::<serde_json::Value>(&text).unwrap()["runs"][0]["metrics"]
            ["ttft_ms"]["p90"]
            .as_f64();
        assert_eq!(parsed.runs[0].p90_ttft_ms, p90);
    }
}
