//! Statistics against numpy reference values (tests/fixtures/stats-reference.json, written once
//! by scripts/make-stats-fixture.py), bootstrap determinism, and A/B verdicts on constructed
//! samples.

use bench::stats::{self, Better, Stat, Summary, Verdict};
use serde_json::Value;

fn fixture() -> Value {
    let text = include_str!("fixtures/stats-reference.json");
    serde_json::from_str(text).expect("fixture is valid JSON")
}

fn close(actual: f64, expected: f64) -> bool {
    (actual - expected).abs() <= 1e-12 * expected.abs().max(1.0)
}

fn samples(case: &Value) -> Vec<f64> {
    case["samples"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect()
}

#[test]
fn percentiles_match_numpy_linear_interpolation() {
    let fixture = fixture();
    let mut checked = 0;
    for case in fixture["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let xs = samples(case);
        for (p, expected) in case["percentiles"].as_object().unwrap() {
            let p: f64 = p.parse().unwrap();
            let expected = expected.as_f64().unwrap();
            let actual = stats::percentile(&xs, p).unwrap();
            assert!(close(actual, expected), "{name}: P{p} = {actual}, numpy says {expected}");
            checked += 1;
        }
    }
    assert!(checked > 50, "the fixture should hold many percentiles, found {checked}");
}

#[test]
fn mean_std_min_max_match_numpy() {
    for case in fixture()["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let xs = samples(case);
        let s = Summary::of(&xs, 1).unwrap();
        for (field, actual) in [("mean", s.mean), ("std", s.std), ("min", s.min), ("max", s.max)] {
            let expected = case[field].as_f64().unwrap();
            assert!(close(actual, expected), "{name}: {field} = {actual}, numpy says {expected}");
        }
        let p = |q: &str| case["percentiles"][q].as_f64().unwrap();
        assert!(close(s.median, p("50")) && close(s.p90, p("90")) && close(s.p99, p("99")), "{name}");
        assert_eq!(s.n, xs.len());
    }
}

#[test]
fn tukey_fences_flag_the_same_samples_as_numpy() {
    let mut flagged_somewhere = false;
    for case in fixture()["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let o = stats::tukey_outliers(&samples(case)).unwrap();
        let idx = |key: &str| -> Vec<usize> {
            case[key].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect()
        };
        assert!(close(o.low_fence, case["tukey_low_fence"].as_f64().unwrap()), "{name}");
        assert!(close(o.high_fence, case["tukey_high_fence"].as_f64().unwrap()), "{name}");
        assert_eq!(o.low, idx("outliers_low"), "{name}: low outliers");
        assert_eq!(o.high, idx("outliers_high"), "{name}: high outliers");
        flagged_somewhere |= o.count() > 0;
    }
    assert!(flagged_somewhere, "some fixture case must contain outliers");
}

#[test]
fn outliers_are_kept_in_the_summary() {
    let xs = [10.0, 11.0, 12.0, 11.5, 10.5, 500.0];
    let s = Summary::of(&xs, 7).unwrap();
    assert_eq!(s.outliers, 1);
    assert_eq!(s.max, 500.0, "the outlier still counts");
    assert_eq!(s.n, 6);
}

#[test]
fn bootstrap_is_deterministic_under_a_seed() {
    // Irrational steps: no two samples tie, so different resamples give different intervals.
    let xs: Vec<f64> = (1..=200).map(|i| (i as f64 * 0.618_033_988_7).fract() * 100.0).collect();
    let a = stats::bootstrap_ci(&xs, stats::percentile_of(50.0), 2000, 42).unwrap();
    let b = stats::bootstrap_ci(&xs, stats::percentile_of(50.0), 2000, 42).unwrap();
    let c = stats::bootstrap_ci(&xs, stats::percentile_of(50.0), 2000, 43).unwrap();
    assert_eq!(a, b, "same seed, same interval");
    assert_ne!(a, c, "another seed resamples differently");
    let median = stats::percentile(&xs, 50.0).unwrap();
    assert!(a[0] <= median && median <= a[1], "interval {a:?} should hold the median {median}");
    assert!(a[0] < a[1]);
    assert_eq!(Summary::of(&xs, 9), Summary::of(&xs, 9));
}

#[test]
fn bootstrap_interval_narrows_with_more_samples() {
    let few: Vec<f64> = (0..20).map(|i| (i % 10) as f64).collect();
    let many: Vec<f64> = (0..2000).map(|i| (i % 10) as f64).collect();
    let width = |xs: &[f64]| {
        let [lo, hi] = stats::bootstrap_ci(xs, stats::mean_of, 2000, 1).unwrap();
        hi - lo
    };
    assert!(width(&many) < width(&few) / 3.0);
}

/// Deterministic "noisy" samples around `centre`: a fixed spread pattern, no RNG needed.
fn around(centre: f64, spread: f64, n: usize) -> Vec<f64> {
    (0..n).map(|i| centre + spread * (((i * 7919) % 97) as f64 / 96.0 - 0.5)).collect()
}

#[test]
fn verdict_clearly_faster() {
    let a = around(100.0, 10.0, 200);
    let b = around(70.0, 10.0, 200);
    let c = stats::compare("ttft_ms.median", &a, &b, Stat::Median, Better::Lower, 0.05, 3).unwrap();
    assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
    assert!(c.ci_high < 0.95 && c.ratio < 0.75 && c.ratio > 0.65, "{c:?}");
}

#[test]
fn verdict_clearly_slower() {
    let a = around(100.0, 10.0, 200);
    let b = around(130.0, 10.0, 200);
    let c = stats::compare("e2el_ms.p90", &a, &b, Stat::P90, Better::Lower, 0.05, 3).unwrap();
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    assert!(c.ci_low > 1.05, "{c:?}");
}

#[test]
fn verdict_overlapping_is_within_noise() {
    let a = around(100.0, 40.0, 30);
    let b = around(102.0, 40.0, 30);
    let c = stats::compare("ttft_ms.median", &a, &b, Stat::Median, Better::Lower, 0.05, 3).unwrap();
    assert_eq!(c.verdict, Verdict::WithinNoise, "{c:?}");
    assert!(c.ci_low < 1.0 && c.ci_high > 1.0, "{c:?}");
}

#[test]
fn a_real_but_small_difference_stays_within_the_threshold() {
    // 2% faster with tight samples: real, but inside a stated 5% noise threshold.
    let a = around(100.0, 1.0, 500);
    let b = around(98.0, 1.0, 500);
    let c = stats::compare("ttft_ms.median", &a, &b, Stat::Median, Better::Lower, 0.05, 3).unwrap();
    assert_eq!(c.verdict, Verdict::WithinNoise, "{c:?}");
    let strict = stats::compare("ttft_ms.median", &a, &b, Stat::Median, Better::Lower, 0.01, 3).unwrap();
    assert_eq!(strict.verdict, Verdict::Faster, "with a 1% threshold: {strict:?}");
}

#[test]
fn higher_throughput_is_faster() {
    let a = around(1000.0, 50.0, 50);
    let b = around(1500.0, 50.0, 50);
    let c = stats::compare("output_tokens_per_s", &a, &b, Stat::Mean, Better::Higher, 0.05, 3).unwrap();
    assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
    assert!(stats::compare("x", &[], &b, Stat::Mean, Better::Higher, 0.05, 3).is_none());
}
