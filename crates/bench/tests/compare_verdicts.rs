//! The four verdicts as `course bench --compare` prints them (`report::comparison_text` of
//! `compare::compare_runs`), on runs built from seeded synthetic requests: three replicates a
//! side unless said otherwise. Snapshots in tests/snapshots/.

use bench::compare::{compare_runs, MetricChoice};
use bench::metrics::{self, RequestRecord, Slo};
use bench::report::{comparison_text, Run};
use bench::stats::Verdict;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, LogNormal};

/// `replicates` open-loop runs of `n` requests, one every 250 ms, each taking `ttft` ms (times a
/// lognormal factor of spread `sigma`) to its first of 16 tokens, 20 ms apart.
fn run(label: &str, ttft: f64, sigma: f64, n: usize, replicates: usize, seed: u64) -> Run {
    let mut rng = StdRng::seed_from_u64(seed);
    let noise = LogNormal::new(0.0, sigma).unwrap();
    let mut requests = Vec::new();
    for k in 0..replicates {
        for i in 0..n {
            let first = ttft * noise.sample(&mut rng);
            requests.push(RequestRecord {
                replicate: k,
                start_ms: 250.0 * i as f64,
                ok: true,
                ttft_ms: first,
                e2el_ms: first + 15.0 * 20.0,
                itl_ms: vec![20.0; 15],
                output_tokens: 16,
                ..Default::default()
            });
        }
    }
    let durations = vec![0.25 * n as f64 + 0.3 + ttft / 1000.0; replicates];
    let mut m = metrics::compute(&requests, &durations, &Slo::default());
    m.kept_up_with_arrivals = metrics::kept_up(&requests, replicates);
    Run {
        label: label.into(),
        config: serde_json::Value::Null,
        metrics: m,
        requests,
        repeat_tokens_per_s: vec![],
        server_metrics: None,
    }
}

fn compared(a: &Run, b: &Run, metric: &str) -> (Verdict, String) {
    let c = compare_runs(a, b, MetricChoice::parse(metric).unwrap(), 0.05).unwrap();
    (c.verdict, comparison_text(&c, &a.label, &b.label))
}

#[test]
fn an_interval_beyond_the_band_is_faster() {
    let (v, text) = compared(
        &run("A", 100.0, 0.1, 40, 3, 1),
        &run("B", 70.0, 0.1, 40, 3, 2),
        "ttft_ms.p90",
    );
    assert_eq!(v, Verdict::Faster);
    insta::assert_snapshot!(text);
}

#[test]
fn an_interval_inside_the_band_is_the_same() {
    let (v, text) = compared(
        &run("A", 100.0, 0.02, 200, 3, 3),
        &run("B", 100.5, 0.02, 200, 3, 4),
        "ttft_ms.p90",
    );
    assert_eq!(v, Verdict::Same);
    insta::assert_snapshot!(text);
}

#[test]
fn an_interval_across_an_edge_of_the_band_is_inconclusive() {
    let (v, text) = compared(
        &run("A", 100.0, 0.25, 100, 3, 5),
        &run("B", 95.0, 0.25, 100, 3, 6),
        "ttft_ms.p90",
    );
    assert_eq!(v, Verdict::Inconclusive);
    insta::assert_snapshot!(text);
}

#[test]
fn an_interval_that_excludes_one_but_not_the_band_says_so() {
    let (v, text) = compared(
        &run("A", 100.0, 0.1, 200, 3, 7),
        &run("B", 94.0, 0.1, 200, 3, 8),
        "ttft_ms.p90",
    );
    assert_eq!(v, Verdict::Inconclusive);
    assert!(text.contains("not surely by the 5%"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn one_run_a_side_covers_those_runs_only() {
    let (_, text) = compared(
        &run("A", 100.0, 0.1, 40, 1, 9),
        &run("B", 70.0, 0.1, 40, 1, 10),
        "ttft_ms.p90",
    );
    assert!(text.contains("covers these runs only"), "{text}");
    insta::assert_snapshot!(text);
}

#[test]
fn below_saturation_the_arrivals_set_the_throughput() {
    let (a, b) = (
        run("batch 8", 100.0, 0.1, 40, 3, 11),
        run("batch 16", 90.0, 0.1, 40, 3, 12),
    );
    assert_eq!(
        (
            a.metrics.kept_up_with_arrivals,
            b.metrics.kept_up_with_arrivals
        ),
        (Some(true), Some(true))
    );
    let (v, text) = compared(&a, &b, "output_tokens_per_s");
    assert_eq!(v, Verdict::Inconclusive);
    assert!(text.contains("kept up with the offered rate"), "{text}");
    insta::assert_snapshot!(text);
}
