//! One check routine per kind of exercise (`check = ...` in exercises/info.toml), built from the
//! question types in `question_types`. Each reads
//! the learner's `answers.toml` and their own results files through [`Ctx`], and fills the
//! exercise's report with one result per question.

pub mod bench_verdict;
pub mod budget;
pub mod fewer_bytes;
pub mod fuse;
pub mod memory;
pub mod plan;
pub mod prediction;
pub mod quiz;
pub mod top_ops;
pub mod traffic;

use crate::answers::{Answers, Field};
use crate::problem::{Location, Problem, ProblemKind};
use crate::question_types::number::{show, within};
use crate::report::{ExerciseReport, QuestionResult};
use crate::results::bench_report::BenchReport;
use crate::results::budget_lines::BudgetLines;
use crate::results::fused_check::FusedCheck;
use crate::results::profile_report::ProfileReport;
use crate::submission::{FileState, Submission};
use course_model::manifest::ExerciseInfo;
use course_model::quiz::QuestionBank;

/// Everything a check routine reads, and the report it writes into.
pub struct Ctx<'a> {
    pub info: &'a ExerciseInfo,
    pub submission: &'a Submission,
    pub bank: &'a QuestionBank,
    /// None when answers.toml is missing or unreadable (the problem is already recorded).
    pub answers: Option<Answers>,
    pub report: ExerciseReport,
}

/// An answer field after reading: a wrong type has been recorded as a problem.
pub enum Got<T> {
    Answered(T),
    Unanswered,
    Invalid(String),
}

impl<'a> Ctx<'a> {
    fn field<T>(&mut self, read: impl FnOnce(&Answers) -> Field<T>) -> Got<T> {
        let Some(answers) = &self.answers else {
            return Got::Unanswered;
        };
        match read(answers) {
            Field::Answered(v) => Got::Answered(v),
            Field::Unanswered => Got::Unanswered,
            Field::Invalid(problem) => {
                let reason = format!("cannot be graded: {}", problem.message);
                self.report.problems.push(problem);
                Got::Invalid(reason)
            }
        }
    }

    pub fn text(&mut self, path: &str) -> Got<String> {
        self.field(|a| a.text(path))
    }

    pub fn number(&mut self, path: &str) -> Got<f64> {
        self.field(|a| a.number(path))
    }

    pub fn choices(&mut self, path: &str) -> Got<Vec<String>> {
        self.field(|a| a.choices(path))
    }

    pub fn flag(&mut self, path: &str) -> Got<bool> {
        self.field(|a| a.flag(path))
    }

    /// Read a results file by role; on failure the problem is recorded once and the reason
    /// returned for the questions that needed the file.
    /// Whether the results file of `role` is in the submission at all (for a file the exercise
    /// writes only once the learner gets that far: its absence is an answer, not a problem).
    pub fn has_result(&self, role: &str) -> bool {
        self.info
            .result_path(role)
            .is_some_and(|rel| !matches!(self.submission.file(&rel), FileState::Missing))
    }

    fn results_text(&mut self, role: &str) -> Result<(String, String), String> {
        let Some(rel) = self.info.result_path(role) else {
            return Err(format!(
                "the exercise manifest declares no `{role}` results file; tell the instructor"
            ));
        };
        let shown = self.submission.display(&rel);
        match self.submission.file(&rel) {
            FileState::Text(text) => Ok((text.to_string(), shown)),
            FileState::Missing => {
                let producer = rel
                    .split('/')
                    .next()
                    .unwrap_or("")
                    .trim_start_matches("exercise-")
                    .to_string();
                let problem = Problem::new(
                    ProblemKind::Missing,
                    Some(Location::file(shown.clone())),
                    "this results file is missing",
                    format!("run the exercise first (`course run {producer}`) so that it writes its results"),
                );
                Err(self.record(problem))
            }
            FileState::Problem(problem) => {
                let problem = problem.clone();
                Err(self.record(problem))
            }
        }
    }

    /// Record a problem unless the same one is there already; return the reason to show.
    fn record(&mut self, problem: Problem) -> String {
        let reason = match &problem.location {
            Some(location) => format!(
                "cannot be checked: see the problem with {} below",
                location.file
            ),
            None => format!("cannot be checked: {}", problem.message),
        };
        if !self.report.problems.contains(&problem) {
            self.report.problems.push(problem);
        }
        reason
    }

    pub fn profile(&mut self, role: &str) -> Result<ProfileReport, String> {
        let (text, shown) = self.results_text(role)?;
        let profile = ProfileReport::parse(&text, &shown).map_err(|p| self.record(p))?;
        if profile.optimized_build == Some(false) {
            let note = format!(
                "{shown} was measured in a debug build: its timings may not be representative"
            );
            if !self.report.notes.contains(&note) {
                self.report.notes.push(note);
            }
        }
        Ok(profile)
    }

    pub fn bench(&mut self, role: &str) -> Result<BenchReport, String> {
        let (text, shown) = self.results_text(role)?;
        BenchReport::parse(&text, &shown).map_err(|p| self.record(p))
    }

    pub fn budget_lines(
        &mut self,
        role: &str,
        profile: &ProfileReport,
    ) -> Result<BudgetLines, String> {
        let (text, shown) = self.results_text(role)?;
        BudgetLines::parse(&text, &shown, profile).map_err(|p| self.record(p))
    }

    pub fn fused_check(&mut self, role: &str) -> Result<FusedCheck, String> {
        let (text, shown) = self.results_text(role)?;
        FusedCheck::parse(&text, &shown).map_err(|p| self.record(p))
    }

    pub fn push(&mut self, result: QuestionResult) {
        self.report.questions.push(result);
    }
}

pub(crate) const NOT_ANSWERED: &str = "not answered";

/// Grade a number answer against an expected value; `source` says where the expected value
/// comes from (for the reason).
pub(crate) fn number_question(
    got: Got<f64>,
    expected: Result<f64, String>,
    abs: f64,
    rel: f64,
    source: &str,
    result: QuestionResult,
) -> QuestionResult {
    match got {
        Got::Unanswered => result.unanswered(NOT_ANSWERED),
        Got::Invalid(reason) => result.wrong(reason),
        Got::Answered(given) => {
            let result = result.answer(show(given));
            match expected {
                Err(reason) => result.wrong(reason),
                Ok(expected) if within(given, expected, abs, rel) => {
                    result.right(format!("matches {source} ({})", show(expected)))
                }
                Ok(expected) => result.wrong(format!(
                    "{source} gives {}, you wrote {}",
                    show(expected),
                    show(given)
                )),
            }
        }
    }
}
