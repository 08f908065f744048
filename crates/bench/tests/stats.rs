//! Statistics against numpy reference values (tests/fixtures/stats-reference.json, written once
//! by scripts/make-stats-fixture.py), intervals, and A/B verdicts on constructed samples. The
//! calibration of the intervals on a simulated server is tests/aa_simulation.rs.

use bench::intervals::{self, Method};
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
    case["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect()
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
            assert!(
                close(actual, expected),
                "{name}: P{p} = {actual}, numpy says {expected}"
            );
            checked += 1;
        }
    }
    assert!(
        checked > 50,
        "the fixture should hold many percentiles, found {checked}"
    );
}

#[test]
fn mean_std_min_max_match_numpy() {
    for case in fixture()["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let xs = samples(case);
        let s = Summary::of(std::slice::from_ref(&xs)).unwrap();
        for (field, actual) in [
            ("mean", s.mean),
            ("std", s.std),
            ("min", s.min),
            ("max", s.max),
        ] {
            let expected = case[field].as_f64().unwrap();
            assert!(
                close(actual, expected),
                "{name}: {field} = {actual}, numpy says {expected}"
            );
        }
        let p = |q: &str| case["percentiles"][q].as_f64().unwrap();
        assert!(
            close(s.median, p("50")) && close(s.p90, p("90")) && close(s.p99, p("99")),
            "{name}"
        );
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
            case[key]
                .as_array()
                .unwrap()
                .iter()
                .map(|v| v.as_u64().unwrap() as usize)
                .collect()
        };
        assert!(
            close(o.low_fence, case["tukey_low_fence"].as_f64().unwrap()),
            "{name}"
        );
        assert!(
            close(o.high_fence, case["tukey_high_fence"].as_f64().unwrap()),
            "{name}"
        );
        assert_eq!(o.low, idx("outliers_low"), "{name}: low outliers");
        assert_eq!(o.high, idx("outliers_high"), "{name}: high outliers");
        flagged_somewhere |= o.count() > 0;
    }
    assert!(flagged_somewhere, "some fixture case must contain outliers");
}

#[test]
fn outliers_are_kept_in_the_summary() {
    let xs = [10.0, 11.0, 12.0, 11.5, 10.5, 500.0];
    let s = Summary::of(&[xs.to_vec()]).unwrap();
    assert_eq!(s.outliers, 1);
    assert_eq!(s.max, 500.0, "the outlier still counts");
    assert_eq!(s.n, 6);
}

#[test]
fn intervals_hold_the_statistic_and_name_their_method() {
    // Irrational steps: no two samples tie.
    let xs: Vec<f64> = (1..=200)
        .map(|i| (i as f64 * 0.618_033_988_7).fract() * 100.0)
        .collect();
    let lone = Summary::of(std::slice::from_ref(&xs)).unwrap();
    let ci = lone.ci95_median.clone().unwrap();
    assert!(
        ci.low <= lone.median && lone.median <= ci.high && ci.low < ci.high,
        "{ci:?}"
    );
    assert_eq!((ci.method, ci.runs), (Method::Sections, 1));
    assert_eq!(
        Summary::of(std::slice::from_ref(&xs)),
        Some(lone),
        "no randomness: the same samples give the same interval"
    );
    let split: Vec<Vec<f64>> = xs.chunks(50).map(<[f64]>::to_vec).collect();
    let replicated = Summary::of(&split).unwrap().ci95_p90.unwrap();
    assert_eq!(
        (replicated.method, replicated.runs),
        (Method::Replicates, 4)
    );
}

#[test]
fn intervals_narrow_with_more_samples() {
    let few: Vec<Vec<f64>> = (0..3)
        .map(|k| (0..20).map(|i| ((i + k) % 10) as f64).collect())
        .collect();
    let many: Vec<Vec<f64>> = (0..3)
        .map(|k| (0..2000).map(|i| ((i + k) % 10) as f64).collect())
        .collect();
    let width = |runs: &[Vec<f64>]| {
        let i = intervals::mean(runs).unwrap().interval;
        i.high - i.low
    };
    assert!(width(&many) < width(&few) / 3.0);
}

/// Deterministic "noisy" samples around `centre`: a fixed spread pattern, no RNG needed, as
/// three replicates with different phases of the pattern.
fn around(centre: f64, spread: f64, n: usize) -> Vec<Vec<f64>> {
    (0..3)
        .map(|k| {
            (0..n)
                .map(|i| centre + spread * ((((i + 31 * k) * 7919) % 97) as f64 / 96.0 - 0.5))
                .collect()
        })
        .collect()
}

fn compare(
    a: &[Vec<f64>],
    b: &[Vec<f64>],
    stat: Stat,
    better: Better,
    min_effect: f64,
) -> stats::Comparison {
    stats::compare(
        "m",
        &stat.estimate(a).unwrap(),
        &stat.estimate(b).unwrap(),
        better,
        min_effect,
    )
    .unwrap()
}

#[test]
fn verdict_clearly_faster() {
    let c = compare(
        &around(100.0, 10.0, 200),
        &around(70.0, 10.0, 200),
        Stat::Median,
        Better::Lower,
        0.05,
    );
    assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
    assert!(
        c.ci_high < 0.95 && c.ratio < 0.75 && c.ratio > 0.65,
        "{c:?}"
    );
    assert_eq!((c.method, c.runs), (Method::Replicates, [3, 3]));
}

#[test]
fn verdict_clearly_slower() {
    let c = compare(
        &around(100.0, 10.0, 200),
        &around(130.0, 10.0, 200),
        Stat::P90,
        Better::Lower,
        0.05,
    );
    assert_eq!(c.verdict, Verdict::Slower, "{c:?}");
    assert!(c.ci_low > 1.05, "{c:?}");
}

#[test]
fn an_interval_across_the_band_is_inconclusive_and_one_inside_it_the_same() {
    let wide = compare(
        &around(100.0, 40.0, 30),
        &around(102.0, 40.0, 30),
        Stat::Median,
        Better::Lower,
        0.05,
    );
    assert_eq!(wide.verdict, Verdict::Inconclusive, "{wide:?}");
    assert!(
        (wide.ci_low < 0.95 || wide.ci_high > 1.05) && !wide.excludes_one,
        "{wide:?}"
    );
    let tight = compare(
        &around(100.0, 1.0, 500),
        &around(100.5, 1.0, 500),
        Stat::Median,
        Better::Lower,
        0.05,
    );
    assert_eq!(tight.verdict, Verdict::Same, "{tight:?}");
}

#[test]
fn a_real_but_small_difference_excludes_one_without_being_a_difference() {
    // 3% faster with tight samples: real, but not surely by a stated 5% minimum effect...
    let c = compare(
        &around(100.0, 8.0, 500),
        &around(97.0, 8.0, 500),
        Stat::Mean,
        Better::Lower,
        0.05,
    );
    assert!(c.excludes_one && c.ci_high < 1.0, "{c:?}");
    assert!(
        matches!(c.verdict, Verdict::Same | Verdict::Inconclusive),
        "{c:?}"
    );
    // ...and faster with a 1% one.
    let strict = compare(
        &around(100.0, 8.0, 500),
        &around(97.0, 8.0, 500),
        Stat::Mean,
        Better::Lower,
        0.01,
    );
    assert_eq!(
        strict.verdict,
        Verdict::Faster,
        "with a 1% minimum effect: {strict:?}"
    );
}

#[test]
fn higher_throughput_is_faster() {
    let c = compare(
        &around(1000.0, 50.0, 50),
        &around(1500.0, 50.0, 50),
        Stat::Mean,
        Better::Higher,
        0.05,
    );
    assert_eq!(c.verdict, Verdict::Faster, "{c:?}");
    assert!(
        Stat::Mean.estimate(&[vec![]]).is_none(),
        "no samples, no estimate"
    );
}
