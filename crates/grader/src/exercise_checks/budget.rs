//! Exercise 4: savings arithmetic, on the learner's own illustrative step (drawn from their
//! learner id, [`IllustrativeStep::for_learner`]) and on the learner's own exercise-3 profile
//! (checked against that report and for consistency), and the ceiling rule on that profile's
//! budget lines (results/budget.json): the most each line can save is its share, and whether
//! any single line can give the cut asked for; then the memory-traffic fix done for real
//! ([`super::fewer_bytes`]).

use super::{number_question, Ctx, Got, NOT_ANSWERED};
use crate::key::{BudgetKey, MechanismKey};
use crate::plan_rule::{self, Mechanism};
use crate::problem::{Location, Problem, ProblemKind};
use crate::question_types::number::{show, within};
use crate::report::QuestionResult;
use course_model::illustrative_step::{IllustrativeStep, FIELDS};
use course_model::learner_id::LEARNER_FILE;

/// What a field asks, with this step's numbers where there is one.
fn label(step: Option<&IllustrativeStep>, field: &str) -> String {
    match (field, step) {
        ("activations_share_pct", Some(s)) => format!(
            "Activations' share of your {} ms step, %",
            show(s.step_ms())
        ),
        ("activations_share_pct", None) => "Activations' share of your illustrative step, %".into(),
        ("saving_ms", Some(s)) => format!(
            "Saving from removing {} of activations, ms",
            s.removed.words()
        ),
        ("saving_ms", None) => "Saving from removing part of activations, ms".into(),
        ("saving_pct", _) => "That saving as a share of the step, %".into(),
        ("new_step_ms", _) => "Step time after the saving, ms".into(),
        (other, _) => format!("Illustrative step: {other}"),
    }
}

/// Why an answer about `step` breaks the ceiling rule, if it does: removing part of the
/// activations line saves at most that line.
fn breaks_ceiling(
    step: &IllustrativeStep,
    field: &str,
    given: f64,
    tolerance: f64,
) -> Option<String> {
    let line = step.activations_ms();
    let share = 100.0 * line / step.step_ms();
    let rule = "a fix saves at most the line it removes time from";
    match field {
        "saving_ms" if given > line + tolerance => Some(format!(
            "{} ms is more than the whole {} ms activations line: {rule}",
            show(given),
            show(line)
        )),
        "saving_pct" if given > share + tolerance => Some(format!(
            "{}% is more than the activations line's {} share: {rule}",
            show(given),
            show_pct(share)
        )),
        "new_step_ms" if given < step.step_ms() - line - tolerance => Some(format!(
            "{} ms is less than the step without its whole activations line ({} ms): {rule}",
            show(given),
            show(step.step_ms() - line)
        )),
        _ => None,
    }
}

fn show_pct(pct: f64) -> String {
    format!("{}%", show((pct * 100.0).round() / 100.0))
}

/// `[illustrative]`: the learner's own step, regenerated from their id.
fn illustrative_questions(ctx: &mut Ctx<'_>, key: &BudgetKey) {
    let answers: Vec<(&str, Got<f64>)> = FIELDS
        .iter()
        .map(|field| (*field, ctx.number(&format!("illustrative.{field}"))))
        .collect();
    let step = match ctx.submission.learner() {
        Ok(Some(id)) => {
            let step = IllustrativeStep::for_learner(&id);
            ctx.report.variant = Some(format!("learner `{id}`: {}", step.describe()));
            Ok(step)
        }
        Ok(None) => Err(
            "there is no learner id (learner.toml): the illustrative step is drawn from it"
                .to_string(),
        ),
        Err(message) => Err(message),
    };
    // Without an id there is no step to grade against; that is a problem only when the
    // learner answered (untouched templates have nothing to grade).
    if let Err(message) = &step {
        if answers
            .iter()
            .any(|(_, got)| !matches!(got, Got::Unanswered))
        {
            let at = Some(Location::file(ctx.submission.display(LEARNER_FILE)));
            let next = "run `course id NAME` (your name or student number); `course run 4` then prints your step";
            let problem = Problem::new(ProblemKind::LearnerId, at, message.clone(), next);
            if !ctx.report.problems.contains(&problem) {
                ctx.report.problems.push(problem);
            }
        }
    }
    for (field, got) in answers {
        let id = format!("illustrative.{field}");
        let step = match &step {
            Ok(step) => step,
            Err(_) => {
                let q = QuestionResult::new(id, label(None, field), 1.0);
                ctx.push(match got {
                    Got::Unanswered => q.unanswered(NOT_ANSWERED),
                    Got::Invalid(reason) => q.wrong(reason),
                    Got::Answered(v) => q
                        .answer(show(v))
                        .wrong("cannot be graded without a learner id: your step is drawn from it"),
                });
                continue;
            }
        };
        let q = QuestionResult::new(id, label(Some(step), field), 1.0);
        let expected = step
            .answers()
            .iter()
            .find(|(f, _)| *f == field)
            .map(|(_, v)| *v)
            .unwrap_or(f64::NAN);
        if let Got::Answered(given) = got {
            if let Some(why) = breaks_ceiling(step, field, given, key.tolerance) {
                ctx.push(q.answer(show(given)).wrong(why));
                continue;
            }
        }
        ctx.push(number_question(
            got,
            Ok(expected),
            key.tolerance,
            0.0,
            "your illustrative step",
            q,
        ));
    }
}

pub fn check(ctx: &mut Ctx<'_>, key: &BudgetKey, mechanism: &MechanismKey) {
    illustrative_questions(ctx, key);

    let profile = ctx.profile("profile");
    if let Ok(p) = &profile {
        ctx.report.device = Some(p.device.name().to_string());
    }
    // own.op: a row of the learner's own profile.
    let op = ctx.text("own.op");
    let q = QuestionResult::new(
        "own.op",
        "The op you would attack (your exercise-3 profile)",
        1.0,
    );
    let mut found_share =
        Err("cannot be checked: `own.op` is not answered or not a row of your profile".to_string());
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
                        q.right(format!(
                            "#{} by {} in {}",
                            rank + 1,
                            p.device.column(),
                            p.file
                        ))
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
    let share_given = if let Got::Answered(v) = &share {
        Some(*v)
    } else {
        None
    };
    let q = QuestionResult::new("own.op_share_pct", "Its self-time share, %", 1.0);
    ctx.push(number_question(
        share,
        found_share,
        key.share_tolerance_pct,
        0.0,
        "your profile",
        q,
    ));

    let fraction = ctx.number("own.removed_fraction");
    let fraction_given = if let Got::Answered(v) = &fraction {
        Some(*v)
    } else {
        None
    };
    let q = QuestionResult::new(
        "own.removed_fraction",
        "The fraction your fix would remove (0 to 1)",
        1.0,
    );
    let q = match fraction {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(f) if f > 0.0 && f <= 1.0 => q
            .answer(show(f))
            .right("a fraction between 0 and 1: your estimate"),
        Got::Answered(f) if f > 1.0 && f <= 100.0 => q.answer(show(f)).wrong(format!(
            "write a fraction between 0 and 1, not a percentage ({} is {})",
            show(f),
            show(f / 100.0)
        )),
        Got::Answered(f) => q
            .answer(show(f))
            .wrong("the fraction must be above 0 and at most 1"),
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
                q.wrong(format!(
                    "op_share_pct × removed_fraction = {} × {} = {}, you wrote {}",
                    show(share),
                    show(f),
                    show(expected),
                    show(s)
                ))
            }
        }
        (Got::Answered(s), _, _) => q
            .answer(show(s))
            .wrong("cannot be checked without op_share_pct and removed_fraction"),
    };
    ctx.push(q);

    ceiling_questions(ctx, key, &profile);
    super::fewer_bytes::check(ctx, key, &profile);
}

/// `[lines]`: the ceiling rule on the learner's budget lines.
fn ceiling_questions(
    ctx: &mut Ctx<'_>,
    key: &BudgetKey,
    profile: &Result<crate::results::profile_report::ProfileReport, String>,
) {
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
    let largest = lines.as_ref().map_err(Clone::clone).and_then(|l| {
        l.largest()
            .cloned()
            .ok_or_else(|| "results/budget.json has no lines".to_string())
    });

    let got = ctx.text("lines.largest");
    let q = QuestionResult::new(
        "lines.largest",
        "The budget line that can save the most",
        1.0,
    );
    let q = match got {
        Got::Unanswered => q.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => q.wrong(reason),
        Got::Answered(name) => {
            let q = q.answer(name.clone());
            match &largest {
                Err(reason) => q.wrong(reason.clone()),
                Ok(l) if l.line.trim().eq_ignore_ascii_case(name.trim()) => q.right(format!(
                    "`{}` has {} of the step: the most any fix of it can save",
                    l.line,
                    plan_rule::pct(l.share_pct)
                )),
                Ok(l) => q.wrong(format!(
                    "the line with the largest share is `{}` ({}); a line saves at most its share",
                    l.line,
                    plan_rule::pct(l.share_pct)
                )),
            }
        }
    };
    ctx.push(q);

    let got = ctx.number("lines.largest_ceiling_pct");
    let q = QuestionResult::new(
        "lines.largest_ceiling_pct",
        "The most that line can save, % of the step",
        1.0,
    );
    let expected = largest.as_ref().map(|l| l.share_pct).map_err(Clone::clone);
    ctx.push(number_question(
        got,
        expected,
        key.share_tolerance_pct,
        0.0,
        "its share (the ceiling rule)",
        q,
    ));

    let got = ctx.flag("lines.one_line_gives_target");
    let q = QuestionResult::new(
        "lines.one_line_gives_target",
        format!("Can a single line give {}?", plan_rule::pct(target)),
        1.0,
    );
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
                        format!(
                            "`{}` has {}, more than {}",
                            l.line,
                            plan_rule::pct(l.share_pct),
                            plan_rule::pct(target)
                        )
                    } else {
                        format!(
                            "the largest line, `{}`, has only {}: no single line can give {}",
                            l.line,
                            plan_rule::pct(l.share_pct),
                            plan_rule::pct(target)
                        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use course_model::illustrative_step::{ACTIVATIONS, LINES};

    #[test]
    fn the_lines_and_the_worked_example_are_the_chapters() {
        assert_eq!(
            bench::budget::Line::ALL.map(|l| l.name()),
            LINES,
            "bench::budget names the lines the grader asks about"
        );
        let example = IllustrativeStep::example();
        assert_eq!(
            bench::budget::ILLUSTRATIVE.map(|(_, ms)| ms),
            example.lines_ms,
            "the worked example is the book's table"
        );
        assert_eq!(
            bench::budget::ILLUSTRATIVE[ACTIVATIONS].0,
            bench::budget::Line::Activations
        );
        let answers = example.answers().map(|(_, v)| (v * 1e6).round() / 1e6);
        assert_eq!(
            answers,
            [15.0, 4.0, 10.0, 36.0],
            "the chapter's worked numbers"
        );
    }
}
