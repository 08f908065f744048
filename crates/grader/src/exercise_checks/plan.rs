//! The plan's questions, graded by `crate::plan_rule` against the learner's own profile:
//! the mechanism (exercises 3 and 5), the cut expected (exercise 3) and the sentence why, which
//! the keyword rubric only flags for review.

use super::{Got, NOT_ANSWERED};
use crate::key::MechanismKey;
use crate::plan_rule::{self, Assessment, Mechanism, Verdict};
use crate::question_types::number::show;
use crate::question_types::rubric::Rubric;
use crate::report::QuestionResult;
use crate::results::profile_report::{ProfileReport, RankedOp};

/// Grade a mechanism for `op`; returns the assessment when the mechanism could be judged.
pub fn mechanism_question(
    got: Got<String>,
    profile: Option<&ProfileReport>,
    op: Option<&RankedOp>,
    key: &MechanismKey,
    q: QuestionResult,
) -> (QuestionResult, Option<Assessment>) {
    let text = match got {
        Got::Unanswered => return (q.unanswered(NOT_ANSWERED), None),
        Got::Invalid(reason) => return (q.wrong(reason), None),
        Got::Answered(text) => text,
    };
    let q = q.answer(text.clone());
    let Some(mechanism) = Mechanism::parse(&text) else {
        return (
            q.wrong(format!("write one of {}", Mechanism::choices())),
            None,
        );
    };
    let (Some(profile), Some(op)) = (profile, op) else {
        return (
            q.wrong("cannot be checked until the op is a row of your profile"),
            None,
        );
    };
    let assessment = plan_rule::assess(profile, op, mechanism, key);
    let judgement = &assessment.judgement;
    let q = match judgement.verdict {
        Verdict::Right => q.right(judgement.reason.clone()),
        Verdict::Flagged => {
            let mut q = q.right(format!("{} (needs instructor review)", judgement.reason));
            q.needs_review = true;
            q
        }
        Verdict::Wrong => q.wrong(judgement.reason.clone()),
    };
    (q, Some(assessment))
}

/// Grade the expected cut: never more than the op's share, and within what the mechanism can
/// remove when the mechanism was accepted. `target_pct` is the cut the exercise asks for.
pub fn cut_question(
    got: Got<f64>,
    op: Option<&RankedOp>,
    assessment: Option<&Assessment>,
    target_pct: f64,
    q: QuestionResult,
) -> QuestionResult {
    let cut = match got {
        Got::Unanswered => return q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => return q.wrong(reason),
        Got::Answered(cut) => cut,
    };
    let q = q.answer(show(cut));
    let Some(op) = op else {
        return q.wrong("cannot be checked until the op is a row of your profile");
    };
    // A refuted or missing mechanism leaves the ceiling rule; an accepted one its own bound.
    let (max, arithmetic) = match assessment {
        Some(a) => (a.max_cut_pct, a.arithmetic.clone()),
        None => plan_rule::ceiling(op),
    };
    let judgement = plan_rule::judge_cut(max, &arithmetic, cut);
    match judgement.verdict {
        Verdict::Wrong => q.wrong(judgement.reason),
        _ if cut + plan_rule::CUT_TOLERANCE_PCT < target_pct => q.right(format!(
            "{} (short of the {} asked: say so when no op can give more)",
            judgement.reason,
            plan_rule::pct(target_pct)
        )),
        _ => q.right(judgement.reason),
    }
}

/// `plan.why`: read by people. The rubric flags it for review (unsure, bare keywords, or a
/// negation next to an idea) and never gives or takes points: the question is worth 0.
pub fn why_question(got: Got<String>, rubric: &Rubric, top_ops: Vec<String>) -> QuestionResult {
    let q = QuestionResult::new(
        "plan.why",
        "Why, in one sentence (read by people; not scored)",
        0.0,
    );
    match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(text) => {
            let expand = move |phrase: &str| (phrase == "{top_ops}").then(|| top_ops.clone());
            let graded = rubric.grade(&text, &expand);
            let mut reason = String::new();
            if !graded.found.is_empty() {
                reason.push_str(&format!("found: {}", graded.found.join("; ")));
            }
            if !graded.missing.is_empty() {
                reason.push_str(&format!(
                    "{}missing: {}",
                    if reason.is_empty() { "" } else { ". " },
                    graded.missing.join("; ")
                ));
            }
            if !graded.negated.is_empty() {
                reason.push_str(&format!(". Next to a negation, so not counted: {}; does the sentence argue against its own plan?", graded.negated.join("; ")));
            }
            if graded.needs_review {
                reason.push_str(" (needs instructor review)");
            }
            let mut q = q.answer(text.clone()).right(reason);
            q.needs_review = graded.needs_review;
            q
        }
    }
}
