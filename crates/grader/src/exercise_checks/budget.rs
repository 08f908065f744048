//! Exercise 4: savings arithmetic, on the illustrative table (expected values in the key) and
//! on the learner's own exercise-3 profile (checked against that report and for consistency),
//! and the ceiling rule on that profile's budget lines (results/budget.json): the most each
//! line can save is its share, and whether any single line can give the cut asked for.

use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::question_types::number::{show, within};
use crate::key::{BudgetKey, MechanismKey};
use crate::plan_rule::{self, Mechanism};
use crate::report::QuestionResult;

/// Labels for the illustrative answers the default key asks.
fn illustrative_label(field: &str) -> String {
    match field {
        "activations_share_pct" => "Activations' share of the 40 ms step, %".into(),
        "saving_ms" => "Saving from removing two thirds of activations, ms".into(),
        "saving_pct" => "That saving as a share of the step, %".into(),
        "new_step_ms" => "Step time after the saving, ms".into(),
        other => format!("Illustrative table: {other}"),
    }
}

pub fn check(ctx: &mut Ctx<'_>, key: &BudgetKey, mechanism: &MechanismKey) {
    // The template's order first, then any field a variant key adds.
    const ORDER: [&str; 4] = ["activations_share_pct", "saving_ms", "saving_pct", "new_step_ms"];
    let mut fields: Vec<(&String, &f64)> = key.illustrative.iter().collect();
    fields.sort_by_key(|(f, _)| ORDER.iter().position(|o| o == f).unwrap_or(ORDER.len()));
    for (field, expected) in fields {
        let id = format!("illustrative.{field}");
        let got = ctx.number(&id);
        let q = QuestionResult::new(id, illustrative_label(field), 1.0);
        ctx.push(number_question(got, Ok(*expected), key.tolerance, 0.0, "the illustrative table", q));
    }

    let profile = ctx.profile("profile");
    if let Ok(p) = &profile {
        ctx.report.device = Some(p.device.name().to_string());
    }
    // own.op: a row of the learner's own profile.
    let op = ctx.text("own.op");
    let q = QuestionResult::new("own.op", "The op you would attack (your exercise-3 profile)", 1.0);
    let mut found_share = Err("cannot be checked: `own.op` is not answered or not a row of your profile".to_string());
    let mut found_op = None;
    let q = match op {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(name) => {
            let q = q.answer(name.clone());
            match &profile {
                Err(reason) => q.wrong(reason.clone()),
                Ok(p) => match p.find(&name) {
                    Some((rank, op)) => {
                        found_share = Ok(op.share_pct);
                        found_op = Some(op.clone());
                        q.right(format!("#{} by {} in {}", rank + 1, p.device.column(), p.file))
                    }
                    None => q.wrong(format!("`{name}` is not a row of {}", p.file)),
                },
            }
        }
    };
    ctx.push(q);
    if let Err(reason) = &profile {
        found_share = Err(reason.clone());
    }

    let share = ctx.number("own.op_share_pct");
    let share_given = if let Got::Answered(v) = &share { Some(*v) } else { None };
    let q = QuestionResult::new("own.op_share_pct", "Its self-time share, %", 1.0);
    ctx.push(number_question(share, found_share, key.share_tolerance_pct, 0.0, "your profile", q));

    let fraction = ctx.number("own.removed_fraction");
    let fraction_given = if let Got::Answered(v) = &fraction { Some(*v) } else { None };
    let q = QuestionResult::new("own.removed_fraction", "The fraction your fix would remove (0 to 1)", 1.0);
    let q = match fraction {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(f) if f > 0.0 && f <= 1.0 => q.answer(show(f)).right("a fraction between 0 and 1: your estimate"),
        Got::Answered(f) if f > 1.0 && f <= 100.0 => {
            q.answer(show(f)).wrong(format!("write a fraction between 0 and 1, not a percentage ({} is {})", show(f), show(f / 100.0)))
        }
        Got::Answered(f) => q.answer(show(f)).wrong("the fraction must be above 0 and at most 1"),
    };
    ctx.push(q);

    let saving = ctx.number("own.saving_pct");
    let q = QuestionResult::new("own.saving_pct", "The step-time saving, %", 1.0);
    let q = match (saving, share_given, fraction_given) {
        (Got::Unanswered, _, _) => q.unanswered(NOT_ANSWERED),
        (Got::Invalid(reason), _, _) => q.wrong(reason),
        (Got::Answered(s), Some(share), Some(f)) => {
            // A fraction written as a percentage was marked wrong above; the arithmetic on it
            // can still be right.
            let f = if f > 1.0 && f <= 100.0 { f / 100.0 } else { f };
            let expected = share * f;
            let q = q.answer(show(s));
            // The course's rule on the learner's own profile: no mechanism it accepts for
            // this op can save more than its best one.
            let best = match (&profile, &found_op) {
                (Ok(p), Some(op)) => Mechanism::ALL
                    .iter()
                    .map(|m| plan_rule::assess(p, op, *m, mechanism))
                    .filter(|a| a.judgement.accepted())
                    .max_by(|a, b| a.max_cut_pct.total_cmp(&b.max_cut_pct)),
                _ => None,
            };
            if within(s, expected, key.arithmetic_tolerance_pct, 0.0) {
                match best {
                    Some(best) if s > best.max_cut_pct + plan_rule::CUT_TOLERANCE_PCT => q.wrong(format!(
                        "{} × {} = {}, but no fix of this op can save that much: the best the course's rule accepts is {}: {}",
                        show(share),
                        show(f),
                        show(expected),
                        best.mechanism.name(),
                        best.arithmetic
                    )),
                    _ => q.right(format!("{} × {} = {}", show(share), show(f), show(expected))),
                }
            } else {
                q.wrong(format!("op_share_pct × removed_fraction = {} × {} = {}, you wrote {}", show(share), show(f), show(expected), show(s)))
            }
        }
        (Got::Answered(s), _, _) => q.answer(show(s)).wrong("cannot be checked without op_share_pct and removed_fraction"),
    };
    ctx.push(q);

    ceiling_questions(ctx, key, &profile);
}

/// `[lines]`: the ceiling rule on the learner's budget lines.
fn ceiling_questions(ctx: &mut Ctx<'_>, key: &BudgetKey, profile: &Result<crate::results::profile_report::ProfileReport, String>) {
    let lines = match profile {
        Ok(p) => ctx.budget_lines("budget", p),
        Err(reason) => Err(reason.clone()),
    };
    let target = key.target_cut_pct;
    if let Ok(lines) = &lines {
        if let Some(largest) = lines.largest() {
            if largest.share_pct < target {
                ctx.report.notes.push(format!(
                    "No single budget line of your profile can give {}: the largest, `{}`, has only {}. A {} cut needs fixes on several lines.",
                    plan_rule::pct(target),
                    largest.line,
                    plan_rule::pct(largest.share_pct),
                    plan_rule::pct(target)
                ));
            }
        }
    }
    let largest = lines.as_ref().map_err(Clone::clone).and_then(|l| l.largest().cloned().ok_or_else(|| "results/budget.json has no lines".to_string()));

    let got = ctx.text("lines.largest");
    let q = QuestionResult::new("lines.largest", "The budget line that can save the most", 1.0);
    let q = match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(name) => {
            let q = q.answer(name.clone());
            match &largest {
                Err(reason) => q.wrong(reason.clone()),
                Ok(l) if l.line.trim().eq_ignore_ascii_case(name.trim()) => {
                    q.right(format!("`{}` has {} of the step: the most any fix of it can save", l.line, plan_rule::pct(l.share_pct)))
                }
                Ok(l) => q.wrong(format!("the line with the largest share is `{}` ({}); a line saves at most its share", l.line, plan_rule::pct(l.share_pct))),
            }
        }
    };
    ctx.push(q);

    let got = ctx.number("lines.largest_ceiling_pct");
    let q = QuestionResult::new("lines.largest_ceiling_pct", "The most that line can save, % of the step", 1.0);
    let expected = largest.as_ref().map(|l| l.share_pct).map_err(Clone::clone);
    ctx.push(number_question(got, expected, key.share_tolerance_pct, 0.0, "its share (the ceiling rule)", q));

    let got = ctx.flag("lines.one_line_gives_target");
    let q = QuestionResult::new("lines.one_line_gives_target", format!("Can a single line give {}?", plan_rule::pct(target)), 1.0);
    let q = match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(said) => {
            let q = q.answer(if said { "yes" } else { "no" });
            match &largest {
                Err(reason) => q.wrong(reason.clone()),
                Ok(l) => {
                    let can = l.share_pct >= target;
                    let why = if can {
                        format!("`{}` has {}, more than {}", l.line, plan_rule::pct(l.share_pct), plan_rule::pct(target))
                    } else {
                        format!("the largest line, `{}`, has only {}: no single line can give {}", l.line, plan_rule::pct(l.share_pct), plan_rule::pct(target))
                    };
                    if said == can {
                        q.right(why)
                    } else {
                        q.wrong(why)
                    }
                }
            }
        }
    };
    ctx.push(q);
}
