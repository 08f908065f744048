//! Short answer: mdbook-quiz's own matching (trimmed, case-insensitive, against the answer and
//! its alternatives), then, when the key has a rubric for the question, partial credit by ideas
//! (`super::rubric`: a verdict stated first, the reasons found, negations, wrong claims and
//! keyword lists).

use super::rubric::Rubric;
use crate::report::QuestionResult;
use course_model::quiz::{BankQuestion, QuestionKind};

pub fn grade(
    question: &BankQuestion,
    answer: &str,
    rubric: Option<&Rubric>,
    result: QuestionResult,
) -> QuestionResult {
    let QuestionKind::ShortAnswer {
        answer: expected,
        alternatives,
    } = &question.kind
    else {
        return result.wrong(
            "this question is not a short answer; the answer key is wrong, tell the instructor",
        );
    };
    let given = answer.trim().to_lowercase();
    if std::iter::once(expected)
        .chain(alternatives)
        .any(|a| a.trim().to_lowercase() == given)
    {
        return result.right("");
    }
    match rubric {
        Some(rubric) => grade_by_rubric(rubric, answer, &|_| None, result),
        None => result.wrong("not the expected answer"),
    }
}

/// Partial credit by the ideas found; the reason lists what was found and what is missing.
pub fn grade_by_rubric(
    rubric: &Rubric,
    answer: &str,
    expand: &dyn Fn(&str) -> Option<Vec<String>>,
    result: QuestionResult,
) -> QuestionResult {
    let graded = rubric.grade(answer, expand);
    let mut reason = String::new();
    if !graded.found.is_empty() {
        reason.push_str(&format!("found: {}", graded.found.join("; ")));
    }
    if !graded.missing.is_empty() {
        if !reason.is_empty() {
            reason.push_str(". ");
        }
        reason.push_str(&format!("missing: {}", graded.missing.join("; ")));
    }
    if !graded.negated.is_empty() {
        if !reason.is_empty() {
            reason.push_str(". ");
        }
        reason.push_str(&format!(
            "not counted, next to a negation: {}",
            graded.negated.join("; ")
        ));
    }
    if !graded.contradicted.is_empty() {
        if !reason.is_empty() {
            reason.push_str(". ");
        }
        reason.push_str(&format!(
            "not counted, a claim that contradicts it: {}",
            graded.contradicted.join("; ")
        ));
    }
    if let Some(verdict) = &graded.verdict {
        if !reason.is_empty() {
            reason.push_str(". ");
        }
        reason.push_str(&format!(
            "{verdict} (without the right decision the answer earns nothing)"
        ));
    }
    if graded.keyword_list {
        if !reason.is_empty() {
            reason.push_str(". ");
        }
        reason.push_str("a list of the rubric's words rather than a sentence: no credit until the instructor reads it");
    }
    if graded.needs_review {
        reason.push_str(" (needs instructor review: the keyword rubric is unsure)");
    }
    let mut result = result.partial(graded.fraction, reason);
    result.needs_review = graded.needs_review;
    result
}
