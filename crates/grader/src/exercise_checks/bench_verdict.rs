//! Exercise 2: the ratio and the verdict of batch 16 against batch 8, checked against the
//! learner's own results/bench.json.

use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::key::BenchVerdictKey;
use crate::report::QuestionResult;
use crate::results::bench_report::{Comparison, Verdict};

pub fn check(ctx: &mut Ctx<'_>, key: &BenchVerdictKey) {
    let comparison = comparison(ctx, "bench");
    let ratio = ctx.number("comparison.ratio");
    let expected = comparison.as_ref().map(|c| c.ratio).map_err(Clone::clone);
    let q = QuestionResult::new("comparison.ratio", "The ratio of batch 16 over batch 8", 1.0);
    ctx.push(number_question(ratio, expected, key.ratio_tolerance, 0.0, "results/bench.json", q));
    let verdict = ctx.text("comparison.verdict");
    let q = QuestionResult::new("comparison.verdict", "Is batch 16 faster than batch 8?", 1.0);
    ctx.push(verdict_question(verdict, &comparison, q));
}

/// The comparison of a bench.json, or why there is none.
pub(crate) fn comparison(ctx: &mut Ctx<'_>, role: &str) -> Result<Comparison, String> {
    let report = ctx.bench(role)?;
    report.comparison.ok_or_else(|| {
        format!("cannot be checked: {} holds no comparison; run the benchmark with its comparison (both configurations) again", report.file)
    })
}

pub(crate) fn verdict_question(got: Got<String>, comparison: &Result<Comparison, String>, q: QuestionResult) -> QuestionResult {
    match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let q = q.answer(text.clone());
            let Some(given) = Verdict::from_answer(&text) else {
                return q.wrong(format!("\"{text}\" is not a verdict: write \"faster\", \"slower\" or \"within_noise\""));
            };
            match comparison {
                Err(reason) => q.wrong(reason.clone()),
                Ok(c) if c.verdict == given => q.right(format!(
                    "matches the benchmark: ratio {:.3}, 95% interval [{:.3}, {:.3}], noise threshold {}",
                    c.ratio, c.ci_low, c.ci_high, c.threshold
                )),
                Ok(c) => q.wrong(format!(
                    "the benchmark says \"{}\": ratio {:.3}, 95% interval [{:.3}, {:.3}] against a noise threshold of {}; only an interval entirely beyond the threshold is a difference",
                    c.verdict.as_str(),
                    c.ratio,
                    c.ci_low,
                    c.ci_high,
                    c.threshold
                )),
            }
        }
    }
}
