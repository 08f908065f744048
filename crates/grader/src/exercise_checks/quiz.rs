//! Quiz exercises (1 and 6): the answers under `[quiz]`, by question id, graded against the
//! quiz file the book shows.

use super::{Ctx, Got, NOT_ANSWERED};
use crate::question_types::{choice, short_answer};
use crate::key::QuizKey;
use crate::quiz::QuestionKind;
use crate::report::{Outcome, QuestionResult};

pub fn check(ctx: &mut Ctx<'_>, key: &QuizKey) {
    let file = ctx.info.quizzes.first().cloned().unwrap_or_default();
    for id in ctx.info.questions.clone() {
        let Some(question) = ctx.bank.question(&file, &id).cloned() else {
            // The grader refuses to start when a manifest id is missing from the bank, so this
            // is only reachable with a hand-built bank.
            ctx.push(QuestionResult::new(id.clone(), id, 1.0).wrong("this question is not in the quiz file; tell the instructor"));
            continue;
        };
        let rubric = key.rubrics.get(&id);
        let points = rubric.map_or(1.0, |r| r.points);
        let label = summary(&question.prompt);
        let result = QuestionResult::new(id.clone(), label, points);
        // Answers belong under [quiz]; one written at the top level is accepted too.
        let path = match &ctx.answers {
            Some(a) if a.node(&format!("quiz.{id}")).is_none() && a.node(&id).is_some() => id.clone(),
            _ => format!("quiz.{id}"),
        };
        let mut graded = match &question.kind {
            QuestionKind::MultipleChoice { .. } => match ctx.choices(&path) {
                Got::Unanswered => result.unanswered(NOT_ANSWERED),
                Got::Invalid(reason) => result.wrong(reason),
                Got::Answered(chosen) => choice::grade(&question, &chosen, result.answer(chosen.join(", "))),
            },
            QuestionKind::ShortAnswer { .. } => match ctx.text(&path) {
                Got::Unanswered => result.unanswered(NOT_ANSWERED),
                Got::Invalid(reason) => result.wrong(reason),
                Got::Answered(text) => short_answer::grade(&question, &text, rubric, result.answer(text.clone())),
            },
            QuestionKind::Unsupported(kind) => result.wrong(format!("{kind} questions are not graded by the course")),
        };
        if graded.outcome != Outcome::Unanswered {
            graded.context = question.context.as_ref().map(|c| c.trim().to_string());
        }
        ctx.push(graded);
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
