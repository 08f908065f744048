//! Exercises 3 and 8: the prediction made before the profile ran, the top three ops of the learner's
//! own profile with their shares, device-aware (self CPU on a CPU run, self CUDA on a CUDA
//! run), and a plan graded by the course's arithmetic (`crate::plan_rule`) against that same
//! profile.

use super::plan::{cut_question, mechanism_question, why_question};
use super::{Ctx, Got, NOT_ANSWERED};
use crate::key::{MechanismKey, TopOpsKey};
use crate::plan_rule;
use crate::prediction;
use crate::question_types::number::{show, within};
use crate::report::QuestionResult;
use crate::results::profile_report::{op_key, ProfileReport};

const ORDINALS: [&str; 3] = ["first", "second", "third"];

pub fn check(ctx: &mut Ctx<'_>, key: &TopOpsKey, mechanism: &MechanismKey) {
    let profile = ctx.profile("profile");
    if let Ok(p) = &profile {
        ctx.report.device = Some(p.device.name().to_string());
    }
    if let Some(answers) = &ctx.answers {
        if let crate::answers::Field::Invalid(problem) = answers.list_len("top_ops") {
            ctx.report.problems.push(problem);
        }
    }
    for (rank, ordinal) in ORDINALS.iter().enumerate() {
        let name = ctx.text(&format!("top_ops.{rank}.name"));
        let q = QuestionResult::new(
            format!("top_ops.{rank}.name"),
            format!("The {ordinal} op by self time"),
            1.0,
        );
        let named = match &name {
            Got::Answered(n) => Some(n.clone()),
            _ => None,
        };
        ctx.push(name_question(name, &profile, rank, q));
        let share = ctx.number(&format!("top_ops.{rank}.share_pct"));
        let q = QuestionResult::new(
            format!("top_ops.{rank}.share_pct"),
            format!("The {ordinal} op's share, %"),
            1.0,
        );
        ctx.push(share_question(
            share,
            &profile,
            rank,
            named.as_deref(),
            key.share_tolerance_pct,
            q,
        ));
    }
    plan_questions(ctx, key, mechanism, &profile);
    prediction_question(ctx, key, &profile);
    if let Some(memory) = &key.memory {
        super::memory::check(ctx, memory);
    }
}

/// `[plan]`: the op to attack, the mechanism, the cut expected, and why.
fn plan_questions(
    ctx: &mut Ctx<'_>,
    key: &TopOpsKey,
    thresholds: &MechanismKey,
    profile: &Result<ProfileReport, String>,
) {
    let attack = ctx.text("plan.attack");
    let q = QuestionResult::new(
        "plan.attack",
        "The op you would attack first for a 10% cut",
        key.plan.attack,
    );
    let mut op = None;
    let q = match attack {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(name) => {
            let q = q.answer(name.clone());
            match profile {
                Err(reason) => q.wrong(reason.clone()),
                Ok(p) => match p.find(&name) {
                    Some((rank, row)) => {
                        op = Some(row.clone());
                        q.right(format!(
                            "#{} by {} in {}, {} of the step",
                            rank + 1,
                            p.device.column(),
                            p.file,
                            plan_rule::pct(row.share_pct)
                        ))
                    }
                    None => {
                        let rows: Vec<String> =
                            p.top(6).iter().map(|o| format!("`{}`", o.name)).collect();
                        q.wrong(format!(
                            "`{name}` is not a row of {}; its largest rows are {}",
                            p.file,
                            rows.join(", ")
                        ))
                    }
                },
            }
        }
    };
    ctx.push(q);

    let mechanism = ctx.text("plan.mechanism");
    let q = QuestionResult::new(
        "plan.mechanism",
        "What holds that op back (the mechanism)",
        key.plan.mechanism,
    );
    let (q, assessment) =
        mechanism_question(mechanism, profile.as_ref().ok(), op.as_ref(), thresholds, q);
    ctx.push(q);

    let cut = ctx.number("plan.expected_cut_pct");
    let q = QuestionResult::new(
        "plan.expected_cut_pct",
        "The step-time cut you expect, %",
        key.plan.expected_cut,
    );
    ctx.push(cut_question(cut, op.as_ref(), assessment.as_ref(), 10.0, q));

    let why = ctx.text("plan.why");
    let top: Vec<String> = profile
        .as_ref()
        .map(|p| p.top(3).iter().map(|o| o.name.clone()).collect())
        .unwrap_or_default();
    ctx.push(why_question(why, &key.why, top));
}

/// `[prediction]`: made before results/report.json was written, and shown beside it.
fn prediction_question(
    ctx: &mut Ctx<'_>,
    key: &TopOpsKey,
    profile: &Result<ProfileReport, String>,
) {
    let share = match ctx.number("prediction.share_pct") {
        Got::Answered(v) => Some(v),
        _ => None,
    };
    let op = ctx.text("prediction.op");
    let beside = match (profile, &op) {
        (Ok(p), Got::Answered(op)) => prediction::beside_measurement(op, share, p),
        _ => String::new(),
    };
    let shown = match op {
        Got::Answered(op) => Got::Answered(match share {
            Some(s) => format!("{op} at {}%", show(s)),
            None => op,
        }),
        other => other,
    };
    let command = format!(
        "`cargo run -p {}` (or `course run {}`)",
        ctx.info.package, ctx.info.number
    );
    super::prediction::made_first(
        ctx,
        shown,
        key.plan.prediction,
        "profile",
        "results/report.json",
        &beside,
        &command,
    );
}

fn name_question(
    got: Got<String>,
    profile: &Result<ProfileReport, String>,
    rank: usize,
    q: QuestionResult,
) -> QuestionResult {
    match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(name) => {
            let q = q.answer(name.clone());
            let profile = match profile {
                Ok(p) => p,
                Err(reason) => return q.wrong(reason.clone()),
            };
            let column = profile.device.column();
            let Some(expected) = profile.ops.get(rank) else {
                return q.wrong(format!("{} has fewer than {} rows", profile.file, rank + 1));
            };
            if op_key(&expected.name) == op_key(&name) {
                return q.right(format!("#{} by {column} in {}", rank + 1, profile.file));
            }
            match profile.find(&name) {
                Some((found, _)) => q.wrong(format!(
                    "your profile ranks `{name}` #{} by {column}; #{} is `{}`",
                    found + 1,
                    rank + 1,
                    expected.name
                )),
                None => q.wrong(format!(
                    "`{name}` is not a row of {}; #{} by {column} is `{}`",
                    profile.file,
                    rank + 1,
                    expected.name
                )),
            }
        }
    }
}

fn share_question(
    got: Got<f64>,
    profile: &Result<ProfileReport, String>,
    rank: usize,
    named: Option<&str>,
    tolerance: f64,
    q: QuestionResult,
) -> QuestionResult {
    match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(given) => {
            let q = q.answer(show(given));
            let profile = match profile {
                Ok(p) => p,
                Err(reason) => return q.wrong(reason.clone()),
            };
            // The share of the op the learner named, if it is a row; else of the op at this rank.
            let op = named
                .and_then(|n| profile.find(n))
                .map(|(_, op)| op)
                .or(profile.ops.get(rank));
            let Some(op) = op else {
                return q.wrong(format!("{} has fewer than {} rows", profile.file, rank + 1));
            };
            let column = profile.device.column();
            if within(given, op.share_pct, tolerance, 0.0) {
                q.right(format!(
                    "`{}` has {:.2}% of {column}",
                    op.name, op.share_pct
                ))
            } else {
                q.wrong(format!(
                    "`{}` has {:.2}% of {column} in {}, you wrote {}%",
                    op.name,
                    op.share_pct,
                    profile.file,
                    show(given)
                ))
            }
        }
    }
}
