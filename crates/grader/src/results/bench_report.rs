//! The benchmark's `bench.json` (schema `bench-report/2`, written by crates/bench).
//!
//! Kept to the few fields the grader relies on, in one place, so a change in the bench crate's
//! format is a change here only: the A/B `comparison`, each run's P90 TTFT with its interval,
//! and a sweep's target and knee.

use super::{parse_json, tampered};
use crate::problem::Problem;
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "bench-report/2";

/// The schema before the environment record bench.json shares with report.json.
const OLD_SCHEMA: &str = "bench-report/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Faster,
    Slower,
    WithinNoise,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::WithinNoise => "within_noise",
        }
    }

    /// Read a learner's verdict: case, spaces and `-`/`_` do not matter ("within noise").
    pub fn from_answer(text: &str) -> Option<Verdict> {
        let key: String = text.trim().to_lowercase().chars().filter(|c| c.is_ascii_alphabetic()).collect();
        match key.as_str() {
            "faster" => Some(Verdict::Faster),
            "slower" => Some(Verdict::Slower),
            "withinnoise" => Some(Verdict::WithinNoise),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Better {
    Lower,
    Higher,
}

#[derive(Debug, Clone, Deserialize)]
struct RawComparison {
    metric: String,
    ratio: f64,
    ci_low: f64,
    ci_high: f64,
    threshold: f64,
    verdict: Verdict,
    #[serde(default)]
    better: Option<Better>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawRun {
    label: String,
    metrics: RawMetrics,
}

#[derive(Debug, Clone, Deserialize)]
struct RawMetrics {
    #[serde(default)]
    ttft_ms: Option<RawSummary>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawSummary {
    #[serde(default)]
    p90: Option<f64>,
    #[serde(default)]
    ci95_p90: Option<[f64; 2]>,
    #[serde(default)]
    median: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawReport {
    schema: String,
    #[serde(default)]
    runs: Vec<RawRun>,
    #[serde(default)]
    comparison: Option<RawComparison>,
    #[serde(default)]
    comparisons: Vec<RawComparison>,
    #[serde(default)]
    sweep: Option<RawSweep>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawSweep {
    bounds: Vec<SweepBound>,
    knee: Knee,
    #[serde(default)]
    ci95_knee: Option<[f64; 2]>,
}

/// One bound of a sweep's target: `percentile` of `metric` (`ttft_ms`, …) at most `bound_ms`.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SweepBound {
    pub metric: String,
    pub percentile: f64,
    pub bound_ms: f64,
}

/// Where a sweep put the knee (req/s): between two rates tried, beyond the last, or below the
/// first.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Knee {
    At(f64),
    Above(f64),
    Below(f64),
}

/// A `--sweep` report's target and knee (exercise 7's calibration).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepSummary {
    pub bounds: Vec<SweepBound>,
    pub knee: Knee,
    pub ci95_knee: Option<[f64; 2]>,
}

/// An A/B comparison of run B against run A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub metric: String,
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub threshold: f64,
    pub verdict: Verdict,
}

/// One run's figures the grader uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub label: String,
    pub p90_ttft_ms: Option<f64>,
    /// The 95% bootstrap interval of that P90.
    pub p90_ttft_ci95: Option<[f64; 2]>,
    pub median_ttft_ms: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct BenchReport {
    pub file: String,
    pub comparison: Option<Comparison>,
    /// Several comparisons of the same runs, one per metric (exercise 2), each checked as
    /// `comparison` is.
    pub comparisons: Vec<Comparison>,
    pub runs: Vec<RunSummary>,
    pub sweep: Option<SweepSummary>,
}

const REGENERATE: &str = "regenerate it by running the benchmark again; never edit results by hand";

impl BenchReport {
    pub fn parse(text: &str, file: &str) -> Result<BenchReport, Problem> {
        let raw: RawReport = parse_json(text, file, &format!("benchmark report ({SCHEMA})"), REGENERATE)?;
        if raw.schema == OLD_SCHEMA {
            return Err(tampered(
                file,
                format!("this report is {OLD_SCHEMA:?}, from before the environment record bench.json and report.json share; the grader reads {SCHEMA:?}"),
                "run the benchmark again with this version of the course (`course run`), which writes the current report",
            ));
        }
        if raw.schema != SCHEMA {
            return Err(tampered(file, format!("the schema is {:?}, but the grader reads {SCHEMA:?}", raw.schema), REGENERATE));
        }
        let comparison = match raw.comparison {
            None => None,
            Some(c) => Some(check_comparison(c, file)?),
        };
        let comparisons = raw.comparisons.into_iter().map(|c| check_comparison(c, file)).collect::<Result<Vec<_>, _>>()?;
        let mut runs = Vec::with_capacity(raw.runs.len());
        for run in raw.runs {
            let ci = run.metrics.ttft_ms.as_ref().and_then(|s| s.ci95_p90);
            if ci.is_some_and(|[lo, hi]| !(lo.is_finite() && hi.is_finite() && 0.0 <= lo && lo <= hi)) {
                return Err(tampered(file, format!("run `{}` has a P90 TTFT interval that is not an ordered pair of non-negative numbers", run.label), REGENERATE));
            }
            let median = run.metrics.ttft_ms.as_ref().and_then(|s| s.median);
            if median.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
                return Err(tampered(file, format!("run `{}` has a median TTFT that is not a positive number", run.label), REGENERATE));
            }
            let p90 = run.metrics.ttft_ms.and_then(|s| s.p90);
            if let Some(p) = p90 {
                if !p.is_finite() || p < 0.0 {
                    return Err(tampered(file, format!("run `{}` has a negative or non-finite P90 TTFT", run.label), REGENERATE));
                }
            }
            runs.push(RunSummary { label: run.label, p90_ttft_ms: p90, p90_ttft_ci95: ci, median_ttft_ms: median });
        }
        let sweep = raw.sweep.map(|s| SweepSummary { bounds: s.bounds, knee: s.knee, ci95_knee: s.ci95_knee });
        Ok(BenchReport { file: file.to_string(), comparison, comparisons, runs, sweep })
    }
}

/// A comparison must be self-consistent: a positive ratio, an ordered interval, and a verdict
/// that follows from the interval and the noise threshold.
fn check_comparison(c: RawComparison, file: &str) -> Result<Comparison, Problem> {
    let numbers = [c.ratio, c.ci_low, c.ci_high, c.threshold];
    if numbers.iter().any(|n| !n.is_finite()) || c.ratio <= 0.0 || c.ci_low > c.ci_high || !(0.0..1.0).contains(&c.threshold) {
        return Err(tampered(
            file,
            format!(
                "the comparison's numbers are impossible (ratio {}, interval [{}, {}], threshold {})",
                c.ratio, c.ci_low, c.ci_high, c.threshold
            ),
            REGENERATE,
        ));
    }
    let below = c.ci_high < 1.0 - c.threshold;
    let above = c.ci_low > 1.0 + c.threshold;
    let consistent = match c.better {
        Some(Better::Lower) => c.verdict == if below { Verdict::Faster } else if above { Verdict::Slower } else { Verdict::WithinNoise },
        Some(Better::Higher) => c.verdict == if above { Verdict::Faster } else if below { Verdict::Slower } else { Verdict::WithinNoise },
        // Without the direction, only this much is sure: an interval inside the noise band
        // cannot be a difference, and one entirely outside it cannot be noise.
        None => (below || above) == (c.verdict != Verdict::WithinNoise),
    };
    if !consistent {
        return Err(tampered(
            file,
            format!(
                "the verdict \"{}\" does not follow from the interval [{:.3}, {:.3}] and the noise threshold {}",
                c.verdict.as_str(),
                c.ci_low,
                c.ci_high,
                c.threshold
            ),
            REGENERATE,
        ));
    }
    Ok(Comparison { metric: c.metric, ratio: c.ratio, ci_low: c.ci_low, ci_high: c.ci_high, threshold: c.threshold, verdict: c.verdict })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(verdict: &str, low: f64, high: f64, better: &str) -> String {
        format!(
            r#"{{"schema":"bench-report/2","environment":{{}},"runs":[{{"label":"batch-8","config":{{}},"metrics":{{"ttft_ms":{{"p50":10.0,"p90":12.5}}}}}}],
               "comparison":{{"metric":"output_tokens_per_s","ratio":{mid},"ci_low":{low},"ci_high":{high},"threshold":0.05,"better":"{better}","verdict":"{verdict}","a":1,"b":2}}}}"#,
            mid = (low + high) / 2.0
        )
    }

    #[test]
    fn reads_the_comparison_and_p90() {
        let r = BenchReport::parse(&bench("faster", 1.2, 1.4, "higher"), "bench.json").unwrap();
        assert_eq!(r.comparison.unwrap().verdict, Verdict::Faster);
        assert_eq!(r.runs[0].p90_ttft_ms, Some(12.5));
    }

    #[test]
    fn a_verdict_that_contradicts_the_interval_is_tampered() {
        let p = BenchReport::parse(&bench("faster", 0.98, 1.03, "lower"), "bench.json").unwrap_err();
        assert_eq!(p.kind, crate::problem::ProblemKind::Tampered);
        let without_direction = bench("faster", 0.98, 1.03, "lower").replace(r#""better":"lower","#, "");
        assert!(BenchReport::parse(&without_direction, "bench.json").is_err());
    }

    #[test]
    fn verdicts_from_answers_are_forgiving() {
        assert_eq!(Verdict::from_answer("Within noise"), Some(Verdict::WithinNoise));
        assert_eq!(Verdict::from_answer("within-noise"), Some(Verdict::WithinNoise));
        assert_eq!(Verdict::from_answer(" FASTER "), Some(Verdict::Faster));
        assert_eq!(Verdict::from_answer("quicker"), None);
    }
}
