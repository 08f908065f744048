//! Reading one exercise's graded report in a test: a question by its id, the outcomes of a
//! section's questions, the section alone for a snapshot, and answers with one section
//! replaced, so each case names only what it varies.

use grader::{ExerciseReport, Outcome, QuestionResult};

/// The question `id` of `report`; a test naming one the report lacks fails with that id.
pub fn question<'a>(report: &'a ExerciseReport, id: &str) -> &'a QuestionResult {
    report
        .questions
        .iter()
        .find(|q| q.id == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

/// The outcomes of the questions `ids`, in their order.
pub fn outcomes(report: &ExerciseReport, ids: &[&str]) -> Vec<Outcome> {
    ids.iter().map(|id| question(report, id).outcome).collect()
}

/// `report` with only the questions whose id starts with `prefix` and the notes `keep_note`
/// keeps: what a snapshot of one section's case shows (the score line is the whole exercise's).
pub fn only(
    report: &ExerciseReport,
    prefix: &str,
    keep_note: impl Fn(&str) -> bool,
) -> ExerciseReport {
    let mut only = report.clone();
    only.questions.retain(|q| q.id.starts_with(prefix));
    only.notes.retain(|n| keep_note(n));
    only
}

/// `answers` with its section `[name]`, the last one in the file, replaced by `section`.
pub fn with_last_section(answers: &str, name: &str, section: &str) -> String {
    let header = format!("[{name}]");
    let at = answers
        .find(&header)
        .unwrap_or_else(|| panic!("the answers have no {header}"));
    format!("{}{section}", &answers[..at])
}

/// Assert that question `id`'s reason says every one of `phrases` (the reason shown when not).
pub fn assert_reason_says(report: &ExerciseReport, id: &str, phrases: &[&str]) {
    let reason = &question(report, id).reason;
    let missing: Vec<&&str> = phrases.iter().filter(|p| !reason.contains(**p)).collect();
    assert!(missing.is_empty(), "{id} lacks {missing:?}: {reason}");
}
