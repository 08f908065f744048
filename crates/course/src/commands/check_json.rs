//! `course check N --format json`: the stable shape autograders read (and the Gradescope kit,
//! `course gradescope`, builds its tests from). One object per check run:
//!
//! ```text
//! { "format": "course-check", "version": 1,
//!   "exercise": 3, "title": "...", "status": "passed" | "not_passed" | "build_failed" | "tests_failed",
//!   "passed": bool, "points": 8.5, "max_points": 10, "pass_mark": 0.8,
//!   "checks": [ { "id", "name", "outcome", "points", "max_points", "feedback",
//!                 "model_answer" (or null), "needs_review" } ],
//!   "problems": ["..."], "notes": ["..."] }
//! ```
//!
//! `points` and `max_points` are the sums over `checks`; `outcome` is `right`, `partial`,
//! `wrong`, `unanswered` or `to_review` (points provisional until an instructor grades it).
//! When the build or the tests fail nothing is graded: `checks` is empty and both sums are 0.
//! The committed JSON Schema is crates/course/instructor-kit/course-check.schema.json (a test
//! regenerates it from these types with `schemars` and compares). Fields are only ever added,
//! with `version` unchanged; a change of meaning bumps `version`.

use grader::report::{ExerciseReport, Outcome, QuestionResult};
use serde::Serialize;

pub const FORMAT: &str = "course-check";
pub const VERSION: u32 = 1;

/// How the check ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Passed,
    NotPassed,
    /// `cargo build -p exercise-N` failed: nothing was graded.
    BuildFailed,
    /// The exercise's own tests failed: nothing was graded.
    TestsFailed,
}

/// One graded question or check of the exercise.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Check {
    /// Stable id: the quiz question id or the answers.toml field (`route-07`, `top_ops.1.name`).
    pub id: String,
    /// What was asked, in a few words.
    pub name: String,
    /// `right`, `partial`, `wrong`, `unanswered`, or `to_review`.
    pub outcome: String,
    pub points: f64,
    pub max_points: f64,
    /// What `course check` prints for it: the answer, the verdict and why (no colour).
    pub feedback: String,
    /// The question's explanation (the model answer of the graded bank), once attempted; an
    /// autograder that shows feedback before the deadline holds this back until after it.
    pub model_answer: Option<String>,
    /// The autograder is unsure: an instructor should read this answer.
    pub needs_review: bool,
}

/// The whole output of `course check N --format json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CheckOutput {
    /// Always `course-check`.
    pub format: String,
    /// The shape's version (1).
    pub version: u32,
    pub exercise: u32,
    pub title: String,
    pub status: Status,
    pub passed: bool,
    /// Sum of the checks' points.
    pub points: f64,
    /// Sum of the checks' maximum points.
    pub max_points: f64,
    /// Fraction of `max_points` needed to pass.
    pub pass_mark: f64,
    pub checks: Vec<Check>,
    /// Problems with the submitted files, each with its file (and line) and the next step.
    pub problems: Vec<String>,
    /// Remarks that are not problems (a debug build, the variant graded, a solution seen).
    pub notes: Vec<String>,
}

impl CheckOutput {
    pub fn graded(report: &ExerciseReport) -> CheckOutput {
        let mut notes = Vec::new();
        if let Some(variant) = &report.variant {
            notes.push(format!("your variant: {}", one_line(variant)));
        }
        notes.extend(report.notes.iter().cloned());
        if report.solution_viewed_early {
            notes.push("the solution was shown before this exercise passed".to_string());
        }
        CheckOutput {
            format: FORMAT.to_string(),
            version: VERSION,
            exercise: report.exercise,
            title: report.title.clone(),
            status: if report.passed {
                Status::Passed
            } else {
                Status::NotPassed
            },
            passed: report.passed,
            points: report.points,
            max_points: report.max_points,
            pass_mark: report.pass_mark,
            checks: report.questions.iter().map(check).collect(),
            problems: report.problems.iter().map(|p| p.to_string()).collect(),
            notes,
        }
    }

    /// A check stopped by its build or its tests (`status` says which).
    pub fn stopped(exercise: u32, title: &str, pass_mark: f64, status: Status) -> CheckOutput {
        CheckOutput {
            format: FORMAT.to_string(),
            version: VERSION,
            exercise,
            title: title.to_string(),
            status,
            passed: false,
            points: 0.0,
            max_points: 0.0,
            pass_mark,
            checks: Vec::new(),
            problems: Vec::new(),
            notes: vec![match status {
                Status::BuildFailed => format!("exercise-{exercise} does not build: nothing was graded; the compiler's first error says what to fix"),
                _ => format!("exercise-{exercise}'s tests fail: nothing was graded; the first failing test says what to fix"),
            }],
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}

/// The status a question shows: its outcome, or `to_review` while an instructor must read it.
pub fn outcome(q: &QuestionResult) -> &'static str {
    if q.needs_review && q.overridden.is_none() && q.outcome != Outcome::Unanswered {
        "to_review"
    } else {
        q.outcome.label()
    }
}

fn check(q: &QuestionResult) -> Check {
    Check {
        id: q.id.clone(),
        name: one_line(&q.label),
        outcome: outcome(q).to_string(),
        points: q.points,
        max_points: q.max_points,
        feedback: feedback(q),
        model_answer: q.context.as_deref().map(one_line),
        needs_review: q.needs_review && q.overridden.is_none(),
    }
}

/// A question's feedback as `course check` prints it, without the explanation ("Why").
pub fn feedback(q: &QuestionResult) -> String {
    let mut lines = vec![format!(
        "{} ({}/{}): {}",
        outcome(q).replace('_', " "),
        grader::question_types::number::show(q.points),
        grader::question_types::number::show(q.max_points),
        one_line(&q.label)
    )];
    if let Some(answer) = &q.answer {
        lines.push(format!("Your answer: {}", one_line(answer)));
    }
    if !q.reason.is_empty() {
        lines.push(one_line(&q.reason));
    }
    if let Some(o) = &q.overridden {
        lines.push(format!(
            "Overridden by the instructor (autograder: {}): {}",
            grader::question_types::number::show(o.autograded_points),
            one_line(&o.reason)
        ));
    }
    lines.join("\n")
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// The committed schema is the one these types generate: regenerate it with
    /// `COURSE_BLESS=1 cargo test -p course check_json` after changing them.
    #[test]
    fn the_committed_schema_is_the_types_own() {
        let schema = schemars::schema_for!(CheckOutput);
        let generated = serde_json::to_string_pretty(&schema).unwrap() + "\n";
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("instructor-kit/course-check.schema.json");
        if std::env::var_os("COURSE_BLESS").is_some() {
            std::fs::write(&path, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            committed == generated,
            "{} is not the schema of CheckOutput: regenerate it with COURSE_BLESS=1 cargo test -p course check_json",
            path.display()
        );
    }

    #[test]
    fn a_report_becomes_checks_with_points_and_the_model_answer_apart() {
        let mut report = ExerciseReport::new(1, "Name the question", 0.8);
        let mut right = QuestionResult::new("route-01", "A P90 target", 1.0)
            .answer("Benchmark")
            .right("");
        right.context = Some("A   whole-system figure.".into());
        report.questions.push(right);
        report.questions.push(
            QuestionResult::new("route-02", "Which kernel", 2.0)
                .answer("Benchmark")
                .wrong("not the right option"),
        );
        report.total();
        let out = CheckOutput::graded(&report);
        assert_eq!((out.points, out.max_points, out.passed), (1.0, 3.0, false));
        assert_eq!(out.status, Status::NotPassed);
        assert_eq!(
            out.checks[0].model_answer.as_deref(),
            Some("A whole-system figure.")
        );
        assert!(!out.checks[0].feedback.contains("whole-system"));
        assert_eq!(out.checks[1].outcome, "wrong");
        assert!(out.checks[1].feedback.contains("not the right option"));
        let json: serde_json::Value = serde_json::from_str(&out.to_json()).unwrap();
        assert_eq!(json["checks"][1]["max_points"], 2.0);
        assert_eq!(json["format"], "course-check");
    }
}
