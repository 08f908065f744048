//! The benchmark's `bench.json` (schema `formats::bench::SCHEMA`, written by crates/bench).
//!
//! Kept to the few fields the grader relies on, in one place, so a change in the bench crate's
//! format is a change here only: the A/B `comparison`, each run's P90 TTFT with its interval,
//! and a sweep's target and knee.

use super::{tampered, ResultsFile};
use crate::problem::Problem;
use serde::{Deserialize, Serialize};

use formats::bench::FILE;
pub use formats::bench::SCHEMA;

/// The four verdicts and the one rule that decides them: the `verdict` crate, which the bench
/// crate writes with.
pub use verdict::{Better, Verdict};

/// Reads a learner's verdict: case, spaces and `-`/`_` do not matter ("Inconclusive").
pub fn verdict_from_answer(text: &str) -> Option<Verdict> {
    let key: String = text
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_ascii_alphabetic())
        .collect();
    Verdict::ALL.into_iter().find(|v| v.as_str() == key)
}

#[derive(Debug, Clone, Deserialize)]
struct RawComparison {
    metric: String,
    ratio: f64,
    ci_low: f64,
    /// `null` when the interval has no upper bound.
    ci_high: Option<f64>,
    min_effect: f64,
    verdict: Verdict,
    #[serde(default)]
    better: Option<Better>,
    #[serde(default)]
    set_by_arrivals: bool,
    #[serde(default)]
    scenario: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawRun {
    label: String,
    #[serde(default)]
    config: serde_json::Value,
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
    ci95_p90: Option<RawInterval>,
    #[serde(default)]
    median: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawInterval {
    low: f64,
    /// `null` when the interval has no upper bound.
    high: Option<f64>,
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
    #[serde(default)]
    points: Vec<SweepPoint>,
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

/// One rate of a sweep: did the target hold there?
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
pub struct SweepPoint {
    pub rate: f64,
    pub holds: bool,
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
    /// The rates tried, in order (exercise 7's rule for R reads which held).
    pub points: Vec<SweepPoint>,
    pub knee: Knee,
    pub ci95_knee: Option<[f64; 2]>,
}

/// An A/B comparison of run B against run A.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub metric: String,
    pub ratio: f64,
    pub ci_low: f64,
    /// `f64::INFINITY` when the interval has no upper bound.
    pub ci_high: f64,
    pub min_effect: f64,
    pub verdict: Verdict,
    /// Open-loop throughput whose runs both kept up: the arrivals set it (verdict inconclusive).
    pub set_by_arrivals: bool,
    /// Where the comparison was made, when a report holds several sets (exercise 2: `below`
    /// and `above` batch 8's saturation).
    pub scenario: Option<String>,
}

impl Comparison {
    /// "ratio 0.702, 95% interval [0.669, 0.736], minimum effect 5%".
    pub fn facts(&self) -> String {
        let high = if self.ci_high.is_finite() {
            format!("{:.3}", self.ci_high)
        } else {
            "∞".to_string()
        };
        format!(
            "ratio {:.3}, 95% interval [{:.3}, {high}], minimum effect {}%",
            self.ratio,
            self.ci_low,
            self.min_effect * 100.0
        )
    }
}

/// One run's figures the grader uses.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub label: String,
    pub p90_ttft_ms: Option<f64>,
    /// The 95% interval of that P90 (`high` is `f64::INFINITY` when it has no upper bound).
    pub p90_ttft_ci95: Option<[f64; 2]>,
    pub median_ttft_ms: Option<f64>,
    /// The open-loop arrival rate the run was sent at (req/s), where it was one.
    pub rate: Option<f64>,
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

/// bench.json as the grader reads it: an earlier version is benchmarked again.
const READ: ResultsFile = ResultsFile {
    format: FILE,
    what: "benchmark report",
    rerun: "run the benchmark again with this version of the course (`course run`), which writes the current report",
    regenerate: REGENERATE,
};

impl BenchReport {
    pub fn parse(text: &str, file: &str) -> Result<BenchReport, Problem> {
        let raw = READ.parse(text, file, |r: &RawReport| &r.schema)?;
        let comparison = match raw.comparison {
            None => None,
            Some(c) => Some(check_comparison(c, file)?),
        };
        let comparisons = raw
            .comparisons
            .into_iter()
            .map(|c| check_comparison(c, file))
            .collect::<Result<Vec<_>, _>>()?;
        let mut runs = Vec::with_capacity(raw.runs.len());
        for run in raw.runs {
            let ci = run
                .metrics
                .ttft_ms
                .as_ref()
                .and_then(|s| s.ci95_p90.as_ref())
                .map(|i| [i.low, i.high.unwrap_or(f64::INFINITY)]);
            if ci.is_some_and(|[lo, hi]| !(lo.is_finite() && !hi.is_nan() && 0.0 <= lo && lo <= hi))
            {
                return Err(tampered(file, format!("run `{}` has a P90 TTFT interval that is not an ordered pair of non-negative numbers", run.label), REGENERATE));
            }
            let median = run.metrics.ttft_ms.as_ref().and_then(|s| s.median);
            if median.is_some_and(|m| !(m.is_finite() && m > 0.0)) {
                return Err(tampered(
                    file,
                    format!(
                        "run `{}` has a median TTFT that is not a positive number",
                        run.label
                    ),
                    REGENERATE,
                ));
            }
            let p90 = run.metrics.ttft_ms.and_then(|s| s.p90);
            if let Some(p) = p90 {
                if !p.is_finite() || p < 0.0 {
                    return Err(tampered(
                        file,
                        format!("run `{}` has a negative or non-finite P90 TTFT", run.label),
                        REGENERATE,
                    ));
                }
            }
            let rate = run.config["traffic"]["open_loop"]["rate"].as_f64();
            runs.push(RunSummary {
                label: run.label,
                p90_ttft_ms: p90,
                p90_ttft_ci95: ci,
                median_ttft_ms: median,
                rate,
            });
        }
        let sweep = raw.sweep.map(|s| SweepSummary {
            bounds: s.bounds,
            points: s.points,
            knee: s.knee,
            ci95_knee: s.ci95_knee,
        });
        Ok(BenchReport {
            file: file.to_string(),
            comparison,
            comparisons,
            runs,
            sweep,
        })
    }
}

/// A comparison must be self-consistent: a positive ratio, an ordered interval, and the verdict
/// the `verdict` crate's rule gives for that interval and minimum effect (inconclusive where the
/// arrivals set a throughput).
fn check_comparison(c: RawComparison, file: &str) -> Result<Comparison, Problem> {
    let ci_high = c.ci_high.unwrap_or(f64::INFINITY);
    let numbers = [c.ratio, c.ci_low, c.min_effect];
    if numbers.iter().any(|n| !n.is_finite())
        || c.ratio <= 0.0
        || ci_high.is_nan()
        || c.ci_low > ci_high
        || !(0.0..1.0).contains(&c.min_effect)
    {
        return Err(tampered(
            file,
            format!(
                "the comparison's numbers are impossible (ratio {}, interval [{}, {}], minimum effect {})",
                c.ratio, c.ci_low, ci_high, c.min_effect
            ),
            REGENERATE,
        ));
    }
    let consistent = match (c.set_by_arrivals, c.better) {
        (true, _) => c.verdict == Verdict::Inconclusive,
        (false, Some(better)) => {
            c.verdict == verdict::verdict(c.ci_low, ci_high, c.min_effect, better)
        }
        // Without the direction, only this much is sure: whether the interval lies beyond the
        // band, inside it, or across an edge.
        (false, None) => {
            let lower = verdict::verdict(c.ci_low, ci_high, c.min_effect, Better::Lower);
            let higher = verdict::verdict(c.ci_low, ci_high, c.min_effect, Better::Higher);
            c.verdict == lower || c.verdict == higher
        }
    };
    if !consistent {
        return Err(tampered(
            file,
            format!(
                "the verdict \"{}\" does not follow from the interval [{:.3}, {:.3}] and the minimum effect {}",
                c.verdict.as_str(),
                c.ci_low,
                ci_high,
                c.min_effect
            ),
            REGENERATE,
        ));
    }
    Ok(Comparison {
        metric: c.metric,
        ratio: c.ratio,
        ci_low: c.ci_low,
        ci_high,
        min_effect: c.min_effect,
        verdict: c.verdict,
        set_by_arrivals: c.set_by_arrivals,
        scenario: c.scenario,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(verdict: &str, low: f64, high: &str, better: &str) -> String {
        format!(
            r#"{{"schema":"{SCHEMA}","environment":{{}},"runs":[{{"label":"batch-8","config":{{}},"metrics":{{"ttft_ms":{{"p50":10.0,"p90":12.5,"ci95_p90":{{"low":11.0,"high":null}}}}}}}}],
               "comparison":{{"metric":"output_tokens_per_s","ratio":{mid},"ci_low":{low},"ci_high":{high},"min_effect":0.05,"better":"{better}","verdict":"{verdict}","a":1,"b":2}}}}"#,
            mid = low * 1.1
        )
    }

    #[test]
    fn reads_the_comparison_and_p90() {
        let r = BenchReport::parse(&bench("faster", 1.2, "1.4", "higher"), "bench.json").unwrap();
        assert_eq!(r.comparison.unwrap().verdict, Verdict::Faster);
        assert_eq!(r.runs[0].p90_ttft_ms, Some(12.5));
        assert_eq!(
            r.runs[0].p90_ttft_ci95,
            Some([11.0, f64::INFINITY]),
            "a null upper bound is open"
        );
        let open =
            BenchReport::parse(&bench("slower", 1.2, "null", "lower"), "bench.json").unwrap();
        assert_eq!(open.comparison.unwrap().ci_high, f64::INFINITY);
    }

    #[test]
    fn a_verdict_that_contradicts_the_interval_is_tampered() {
        for (verdict, low, high) in [
            ("faster", 0.98, "1.03"),
            ("same", 0.90, "1.03"),
            ("inconclusive", 0.97, "1.03"),
            ("same", 0.97, "null"),
        ] {
            let p =
                BenchReport::parse(&bench(verdict, low, high, "lower"), "bench.json").unwrap_err();
            assert_eq!(
                p.kind,
                crate::problem::ProblemKind::Tampered,
                "{verdict} [{low}, {high}]"
            );
        }
        let without_direction =
            bench("faster", 0.98, "1.03", "lower").replace(r#""better":"lower","#, "");
        assert!(BenchReport::parse(&without_direction, "bench.json").is_err());
        assert!(BenchReport::parse(&bench("same", 0.97, "1.03", "lower"), "bench.json").is_ok());
        assert!(
            BenchReport::parse(&bench("inconclusive", 0.80, "0.97", "lower"), "bench.json").is_ok(),
            "excludes 1, not beyond the band"
        );
    }

    #[test]
    fn an_older_schema_is_refused_with_what_changed() {
        let old = bench("faster", 1.2, "1.4", "higher").replace(SCHEMA, "bench-report/2");
        let p = BenchReport::parse(&old, "bench.json").unwrap_err();
        assert!(format!("{p:?}").contains("four verdicts"), "{p:?}");
    }

    #[test]
    fn verdicts_from_answers_are_forgiving() {
        assert_eq!(
            verdict_from_answer("Inconclusive"),
            Some(Verdict::Inconclusive)
        );
        assert_eq!(verdict_from_answer(" SAME "), Some(Verdict::Same));
        assert_eq!(verdict_from_answer(" FASTER "), Some(Verdict::Faster));
        assert_eq!(
            verdict_from_answer("within noise"),
            None,
            "the old word is no longer a verdict"
        );
        assert_eq!(verdict_from_answer("quicker"), None);
    }
}
