//! Exercise 7: does a P90 TTFT target hold at a rate R below the knee, and at 2R? Graded from
//! four bench.json files: a lone request's TTFT (which sets the target when the key does not),
//! the calibration sweep (its target and knee), and the runs at R and 2R, each P90 with its 95%
//! interval.
//!
//! A verdict follows from the interval, as the benchmarking chapter teaches: the target holds
//! when the whole interval is at or below it, fails when the whole interval is above it, and
//! otherwise this sample cannot tell (which is the right answer when it is true).
//!
//! R follows one rule, [`RATE_RULE`], which the exercise uses to pick R ([`RateRule::rate`]) and
//! the grader to check the runs at R and 2R ([`RateRule::check`]): a verdict at R or 2R counts
//! only for runs at the rates the rule gives.

use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::key::TrafficKey;
use crate::question_types::number::show;
use crate::report::QuestionResult;
use crate::results::bench_report::{BenchReport, Knee, SweepPoint};
use course_model::traffic::{target_for, RateRule, Verdict, RATE_RULE, TARGET_PER_LONE_TTFT};

pub fn check(ctx: &mut Ctx<'_>, key: &TrafficKey) {
    let (target, source) = match key.target_p90_ttft_ms {
        Some(t) => (Ok(t), "the course key's target".to_string()),
        None => (lone_target(ctx), format!("the exercise page's rule ({TARGET_PER_LONE_TTFT} × the lone request's median TTFT in results/lone/bench.json)")),
    };
    let stated = ctx.number("target_p90_ttft_ms");
    let q = QuestionResult::new("target_p90_ttft_ms", "The P90 TTFT target, ms", 1.0);
    ctx.push(number_question(
        stated,
        target.clone(),
        1e-9,
        0.0,
        &source,
        q,
    ));

    let knee = target.clone().and_then(|t| calibration(ctx, t));
    let got = ctx.number("knee_rps");
    let q = QuestionResult::new(
        "knee_rps",
        "The knee your calibration sweep measured, req/s",
        1.0,
    );
    ctx.push(number_question(
        got,
        knee,
        0.0,
        key.p90_rel_tolerance,
        "results/sweep/bench.json",
        q,
    ));

    // Read only where a verdict is given: an unanswered one needs no files.
    let mut rules: Option<[Result<(), String>; 2]> = None;
    for (i, (role, file, suffix, what)) in [
        (
            "rate",
            "results/rate-1x/bench.json",
            "at_rate",
            "your rate R",
        ),
        ("double", "results/rate-2x/bench.json", "at_double", "2R"),
    ]
    .into_iter()
    .enumerate()
    {
        let measured = p90(ctx, role);
        let got = ctx.number(&format!("p90_ttft_ms_{suffix}"));
        let q = QuestionResult::new(
            format!("p90_ttft_ms_{suffix}"),
            format!("P90 TTFT at {what}, ms"),
            1.0,
        );
        ctx.push(number_question(
            got,
            measured.clone().map(|(p, _)| p),
            0.0,
            key.p90_rel_tolerance,
            file,
            q,
        ));
        let answer = ctx.text(&format!("target_holds_{suffix}"));
        let q = QuestionResult::new(
            format!("target_holds_{suffix}"),
            format!("Does the target hold at {what}?"),
            1.0,
        );
        let measured = match answer {
            Got::Answered(_) => rules.get_or_insert_with(|| rates_follow_the_rule(ctx))[i]
                .clone()
                .and(measured),
            _ => measured,
        };
        ctx.push(verdict_question(answer, &measured, &target, q));
    }
}

/// Whether the runs at R and 2R were sent at the rates [`RATE_RULE`] gives for the sweep: a
/// verdict at R (the first) or 2R (the second) answers the exercise's question only then.
fn rates_follow_the_rule(ctx: &mut Ctx<'_>) -> [Result<(), String>; 2] {
    let rule = (|| {
        let sweep = ctx.bench("sweep")?;
        let points = sweep.sweep.as_ref().map_or(&[][..], |s| &s.points[..]);
        if points.is_empty() {
            return Err(format!("cannot be checked: {} records no sweep rates, so R cannot be checked against the rule ({RATE_RULE}); run the exercise again", sweep.file));
        }
        RateRule::from_sweep(points.iter().map(|p: &SweepPoint| (p.rate, p.holds)))
            .map_err(|e| format!("cannot be checked: in {}, {e}", sweep.file))
    })();
    let mut rate = |role: &str| -> Result<f64, String> {
        let report = ctx.bench(role)?;
        report.runs.first().and_then(|r| r.rate).ok_or_else(|| {
            format!(
                "cannot be checked: {} records no open-loop rate; run the exercise again",
                report.file
            )
        })
    };
    let (r, d) = (rate("rate"), rate("double"));
    let off = |rule: &RateRule, e: String| {
        format!("{e}. The exercise's rule: {RATE_RULE}. This run does not answer its question: run `course run 7` again without --rate (it picks R = {} req/s from this sweep)", show(rule.rate()))
    };
    let at_rate = match (&rule, &r) {
        (Err(e), _) | (_, Err(e)) => Err(e.clone()),
        (Ok(rule), Ok(r)) => rule.check_rate(*r).map_err(|e| off(rule, e)),
    };
    let at_double = match (&rule, &r, &d) {
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => Err(e.clone()),
        (Ok(rule), Ok(r), Ok(d)) => rule.check(*r, *d).map_err(|e| off(rule, e)),
    };
    [at_rate, at_double]
}

/// The rule's target from the lone request's run.
fn lone_target(ctx: &mut Ctx<'_>) -> Result<f64, String> {
    let report = ctx.bench("lone")?;
    match report.runs.first().and_then(|r| r.median_ttft_ms) {
        Some(median) => Ok(target_for(median)),
        None => Err(format!(
            "cannot be checked: {} has no median TTFT of a lone request; run the exercise again",
            report.file
        )),
    }
}

fn verdict_question(
    answer: Got<String>,
    measured: &Result<(f64, [f64; 2]), String>,
    target: &Result<f64, String>,
    q: QuestionResult,
) -> QuestionResult {
    match answer {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let q = q.answer(text.clone());
            let Some(given) = Verdict::from_answer(&text) else {
                return q.wrong(format!(
                    "\"{text}\" is not an answer: write \"yes\", \"no\" or \"cannot tell\""
                ));
            };
            let ((p90, ci), target) = match (measured, target) {
                (Err(reason), _) | (_, Err(reason)) => return q.wrong(reason.clone()),
                (Ok(m), Ok(t)) => (*m, *t),
            };
            let truth = Verdict::of(ci, target);
            let fact = format!(
                "P90 TTFT {} ms, 95% interval [{}, {}] ms, against a target of {} ms",
                show(p90),
                show(ci[0]),
                show(ci[1]),
                show(target)
            );
            let why = match truth {
                Verdict::Holds => "the whole interval is within the target, so it holds",
                Verdict::Fails => "the whole interval is above the target, so it fails",
                Verdict::CannotTell => {
                    "the interval straddles the target, so this sample size cannot tell"
                }
            };
            if given == truth {
                q.right(format!("{fact}: {why}"))
            } else if truth == Verdict::CannotTell {
                q.wrong(format!("{fact}: {why}; the P90 alone is not a verdict, so the answer is \"cannot tell\" (or measure more requests)"))
            } else {
                q.wrong(format!(
                    "{fact}: {why}; the answer is \"{}\"",
                    truth.as_answer()
                ))
            }
        }
    }
}

/// The knee of the calibration sweep, once its target is checked to be the exercise's.
fn calibration(ctx: &mut Ctx<'_>, target: f64) -> Result<f64, String> {
    let report: BenchReport = ctx.bench("sweep")?;
    let Some(sweep) = report.sweep else {
        return Err(format!(
            "cannot be checked: {} holds no sweep; run the exercise again (it calibrates first)",
            report.file
        ));
    };
    let on_target = sweep.bounds.len() == 1
        && sweep.bounds.iter().all(|b| {
            b.metric == "ttft_ms" && b.percentile == 90.0 && (b.bound_ms - target).abs() < 1e-9
        });
    if !on_target {
        let used: Vec<String> = sweep
            .bounds
            .iter()
            .map(|b| format!("P{} {} ≤ {} ms", b.percentile, b.metric, show(b.bound_ms)))
            .collect();
        return Err(format!(
            "the calibration in {} was against {}, not the exercise's P90 TTFT ≤ {} ms: run the exercise again with --target-ms {}",
            report.file,
            used.join(" and "),
            show(target),
            show(target)
        ));
    }
    match sweep.knee {
        Knee::At(k) => Ok(k),
        Knee::Above(r) => Err(format!("cannot be checked: in {} the target held at every rate up to {} req/s, so the knee is beyond the sweep: run it again with higher --sweep-rates", report.file, show(r))),
        Knee::Below(r) => Err(format!("cannot be checked: in {} the target failed already at {} req/s: run it again with lower --sweep-rates", report.file, show(r))),
    }
}

/// P90 TTFT of the (first) run of a bench.json, with its 95% interval.
fn p90(ctx: &mut Ctx<'_>, role: &str) -> Result<(f64, [f64; 2]), String> {
    let report = ctx.bench(role)?;
    let Some(run) = report.runs.first() else {
        return Err(format!("cannot be checked: {} holds no run", report.file));
    };
    match (run.p90_ttft_ms, run.p90_ttft_ci95) {
        (Some(p), Some(ci)) => Ok((p, ci)),
        (None, _) => Err(format!("cannot be checked: run `{}` of {} has no TTFT figures (did every request fail?)", run.label, report.file)),
        (Some(_), None) => Err(format!("cannot be checked: run `{}` of {} has no interval for its P90 TTFT; run the exercise again", run.label, report.file)),
    }
}
