//! Quiz exercises (1 and 6): the answers under `[quiz]`, by question id, graded against the
//! learner's own variant of the quiz (`course_model::quiz_variant`: the questions drawn for their id
//! from the graded bank, `crates/grader/bank/`).

use super::{Ctx, Got, NOT_ANSWERED};
use crate::answers::NodeValue;
use crate::key::QuizKey;
use crate::question_types::{choice, short_answer};
use crate::report::{Outcome, QuestionResult};
use course_model::quiz::QuestionKind;
use course_model::quiz_variant;

pub fn check(ctx: &mut Ctx<'_>, key: &QuizKey) {
    let file = ctx.info.quizzes.first().cloned().unwrap_or_default();
    let learner = ctx.submission.learner_id();
    let asked = match ctx
        .bank
        .file(&file)
        .map(|quiz| quiz_variant::asked(ctx.info, quiz, learner.as_deref()))
    {
        Some(Ok(asked)) => asked,
        // The grader refuses to start on either error, so this is only reachable with a
        // hand-built bank.
        Some(Err(e)) => return ctx.report.notes.push(format!("{e}; tell the instructor")),
        None => {
            return ctx.report.notes.push(format!(
                "the quiz file {file} is not in the bank; tell the instructor"
            ))
        }
    };
    let drawn = ctx.info.draw;
    let pool = ctx.bank.file(&file).map_or(0, |q| {
        q.questions.len().saturating_sub(ctx.info.questions.len())
    });
    match &learner {
        Some(id) => ctx.report.variant = Some(format!("learner `{id}`: {drawn} of the bank's {pool} questions, options in your own order")),
        None => ctx.report.notes.push(format!(
            "graded against the shared variant of exercise {}, as there is {}; then run the exercise again to be asked your own questions",
            ctx.info.number,
            course_model::learner_id::NO_LEARNER_ID
        )),
    }
    let asked_ids: Vec<String> = asked.iter().map(|q| q.id.clone()).collect();
    for question in asked {
        let id = question.id.clone();
        let rubric = key.rubrics.get(&id);
        let points = rubric.map_or(1.0, |r| r.points);
        let label = summary(&question.prompt);
        let result = QuestionResult::new(id.clone(), label, points);
        // Answers belong under [quiz]; one written at the top level is accepted too.
        let path = match &ctx.answers {
            Some(a) if a.node(&format!("quiz.{id}")).is_none() && a.node(&id).is_some() => {
                id.clone()
            }
            _ => format!("quiz.{id}"),
        };
        let mut graded = match &question.kind {
            QuestionKind::MultipleChoice { .. } => match ctx.choices(&path) {
                Got::Unanswered => result.unanswered(NOT_ANSWERED),
                Got::Invalid(reason) => result.wrong(reason),
                Got::Answered(chosen) => {
                    choice::grade(&question, &chosen, result.answer(chosen.join(", ")))
                }
            },
            QuestionKind::ShortAnswer { .. } => match ctx.text(&path) {
                Got::Unanswered => result.unanswered(NOT_ANSWERED),
                Got::Invalid(reason) => result.wrong(reason),
                Got::Answered(text) if key.reviewed.contains(&id) => {
                    awaits_review(rubric, &text, result.answer(text.clone()))
                }
                Got::Answered(text) => {
                    short_answer::grade(&question, &text, rubric, result.answer(text.clone()))
                }
            },
            QuestionKind::Unsupported(kind) => {
                result.wrong(format!("{kind} questions are not graded by the course"))
            }
        };
        if graded.outcome != Outcome::Unanswered {
            graded.context = question.context.as_ref().map(|c| c.trim().to_string());
        }
        ctx.push(graded);
    }
    note_answers_outside_the_variant(ctx, &file, &asked_ids);
}

/// A short answer an instructor grades: the rubric's reading goes into the reason, to make
/// the review quick, but the points wait for the instructor (overrides.toml).
fn awaits_review(
    rubric: Option<&crate::question_types::rubric::Rubric>,
    text: &str,
    result: QuestionResult,
) -> QuestionResult {
    let reading =
        rubric.map(|r| short_answer::grade_by_rubric(r, text, &|_| None, result.clone()).reason);
    let mut result = result;
    result.outcome = Outcome::Partial;
    result.points = 0.0;
    result.reason = match reading {
        Some(reading) if !reading.trim().is_empty() => format!(
            "awaits review: the instructor awards its points. The keyword rubric read: {}",
            reading.trim()
        ),
        _ => "awaits review: the instructor awards its points".to_string(),
    };
    result.needs_review = true;
    result
}

/// Answers to bank questions this learner was not asked: a file filled in for another
/// learner's variant. They are not graded; the note says why the asked ones are unanswered.
fn note_answers_outside_the_variant(ctx: &mut Ctx<'_>, file: &str, asked: &[String]) {
    let Some(answers) = &ctx.answers else { return };
    let Some(NodeValue::Table(table)) = answers.node("quiz").map(|n| &n.value) else {
        return;
    };
    let Some(quiz) = ctx.bank.file(file) else {
        return;
    };
    let others: Vec<&str> = table
        .iter()
        .filter(|(id, node)| {
            !asked.contains(id)
                && quiz.question(id).is_some()
                && !matches!(&node.value, NodeValue::Text(t) if t.trim().is_empty())
        })
        .map(|(id, _)| id.as_str())
        .collect();
    if !others.is_empty() {
        ctx.report.notes.push(format!(
            "answers to questions you were not asked were not graded ({}): each learner is asked their own questions, drawn from their learner id; run `course run {}` to see yours",
            others.join(", "),
            ctx.info.number
        ));
    }
}

/// The first sentence-ish of a prompt, for the report's question column.
pub(crate) fn summary(prompt: &str) -> String {
    let flat = prompt.split_whitespace().collect::<Vec<_>>().join(" ");
    const MAX: usize = 64;
    if flat.chars().count() <= MAX {
        flat
    } else {
        let cut: String = flat.chars().take(MAX - 1).collect();
        format!("{}…", cut.trim_end())
    }
}
