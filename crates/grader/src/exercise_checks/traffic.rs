//! Exercise 7: P90 TTFT at a rate R and at 2R (two bench.json files) against a target: does
//! the target hold at twice the traffic?

use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::question_types::number::show;
use crate::key::TrafficKey;
use crate::report::QuestionResult;

pub fn check(ctx: &mut Ctx<'_>, key: &TrafficKey) {
    // The target: the key's when it sets one (graded), else the learner's own.
    let stated = ctx.number("target_p90_ttft_ms");
    let target = match (key.target_p90_ttft_ms, stated) {
        (Some(t), stated) => {
            let q = QuestionResult::new("target_p90_ttft_ms", "The P90 TTFT target, ms", 1.0);
            ctx.push(number_question(stated, Ok(t), 1e-9, 0.0, "the exercise's target", q));
            Ok(t)
        }
        (None, Got::Answered(t)) if t > 0.0 => Ok(t),
        (None, Got::Answered(_)) => Err("cannot be checked: target_p90_ttft_ms must be above 0".to_string()),
        (None, Got::Invalid(reason)) => Err(reason),
        (None, Got::Unanswered) => Err("cannot be checked: write the target in target_p90_ttft_ms".to_string()),
    };

    let at_rate = p90(ctx, "rate");
    let at_double = p90(ctx, "double");
    let got = ctx.number("p90_ttft_ms_at_rate");
    let q = QuestionResult::new("p90_ttft_ms_at_rate", "P90 TTFT at your rate R, ms", 1.0);
    ctx.push(number_question(got, at_rate, 0.0, key.p90_rel_tolerance, "results/rate-1x/bench.json", q));
    let got = ctx.number("p90_ttft_ms_at_double");
    let q = QuestionResult::new("p90_ttft_ms_at_double", "P90 TTFT at 2R, ms", 1.0);
    ctx.push(number_question(got, at_double.clone(), 0.0, key.p90_rel_tolerance, "results/rate-2x/bench.json", q));

    let answer = ctx.text("target_holds_at_double");
    let q = QuestionResult::new("target_holds_at_double", "Does the target hold at twice the traffic?", 1.0);
    let q = match answer {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let q = q.answer(text.clone());
            let given = match text.trim().to_lowercase().as_str() {
                "yes" | "y" | "true" => Some(true),
                "no" | "n" | "false" => Some(false),
                _ => None,
            };
            match (given, &target, &at_double) {
                (None, _, _) => q.wrong(format!("\"{text}\" is not an answer: write \"yes\" or \"no\"")),
                (_, Err(reason), _) | (_, _, Err(reason)) => q.wrong(reason.clone()),
                (Some(given), Ok(target), Ok(p90)) => {
                    let holds = p90 <= target;
                    let fact = format!("P90 TTFT at 2R is {} ms against a target of {} ms", show(*p90), show(*target));
                    if given == holds {
                        q.right(fact)
                    } else {
                        q.wrong(format!("{fact}, so the answer is {}", if holds { "yes" } else { "no" }))
                    }
                }
            }
        }
    };
    ctx.push(q);
}

/// P90 TTFT of the (first) run of a bench.json.
fn p90(ctx: &mut Ctx<'_>, role: &str) -> Result<f64, String> {
    let report = ctx.bench(role)?;
    let Some(run) = report.runs.first() else {
        return Err(format!("cannot be checked: {} holds no run", report.file));
    };
    run.p90_ttft_ms.ok_or_else(|| format!("cannot be checked: run `{}` of {} has no TTFT figures (did every request fail?)", run.label, report.file))
}
