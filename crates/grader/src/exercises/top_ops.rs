//! Exercise 3: the top three ops of the learner's own profile with their shares, device-aware
//! (self CPU on a CPU run, self CUDA on a CUDA run), and a sentence on what to attack first,
//! graded by the key's rubric.

use super::{Ctx, Got, NOT_ANSWERED};
use crate::checks::number::{show, within};
use crate::checks::short_answer::grade_by_rubric;
use crate::key::TopOpsKey;
use crate::report::QuestionResult;
use crate::results::profile_report::{op_key, ProfileReport};

const ORDINALS: [&str; 3] = ["first", "second", "third"];

pub fn check(ctx: &mut Ctx<'_>, key: &TopOpsKey) {
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
        let q = QuestionResult::new(format!("top_ops.{rank}.name"), format!("The {ordinal} op by self time"), 1.0);
        let named = match &name {
            Got::Answered(n) => Some(n.clone()),
            _ => None,
        };
        ctx.push(name_question(name, &profile, rank, q));
        let share = ctx.number(&format!("top_ops.{rank}.share_pct"));
        let q = QuestionResult::new(format!("top_ops.{rank}.share_pct"), format!("The {ordinal} op's share, %"), 1.0);
        ctx.push(share_question(share, &profile, rank, named.as_deref(), key.share_tolerance_pct, q));
    }
    let sentence = ctx.text("plan.attack_first");
    let q = QuestionResult::new("plan.attack_first", "What to attack first for a 10% cut, and why", key.attack_first.points);
    let q = match sentence {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let top: Vec<String> = profile.as_ref().map(|p| p.top(3).iter().map(|o| o.name.clone()).collect()).unwrap_or_default();
            let expand = move |phrase: &str| (phrase == "{top_ops}").then(|| top.clone());
            grade_by_rubric(&key.attack_first, &text, &expand, q.answer(text.clone()))
        }
    };
    ctx.push(q);
}

fn name_question(got: Got<String>, profile: &Result<ProfileReport, String>, rank: usize, q: QuestionResult) -> QuestionResult {
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
                None => q.wrong(format!("`{name}` is not a row of {}; #{} by {column} is `{}`", profile.file, rank + 1, expected.name)),
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
            let op = named.and_then(|n| profile.find(n)).map(|(_, op)| op).or(profile.ops.get(rank));
            let Some(op) = op else {
                return q.wrong(format!("{} has fewer than {} rows", profile.file, rank + 1));
            };
            let column = profile.device.column();
            if within(given, op.share_pct, tolerance, 0.0) {
                q.right(format!("`{}` has {:.2}% of {column}", op.name, op.share_pct))
            } else {
                q.wrong(format!("`{}` has {:.2}% of {column} in {}, you wrote {}%", op.name, op.share_pct, profile.file, show(given)))
            }
        }
    }
}
