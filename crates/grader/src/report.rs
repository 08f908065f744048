//! The graded result of one exercise: per question right / partial / wrong / unanswered, the
//! points, the reason, and the quiz's explanation after an attempt; a total and a pass mark.
//! Rendered by `crate::render` for the terminal and as Markdown; serialised as JSON.

use crate::problem::Problem;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Right,
    Partial,
    Wrong,
    Unanswered,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Right => "right",
            Outcome::Partial => "partial",
            Outcome::Wrong => "wrong",
            Outcome::Unanswered => "unanswered",
        }
    }
}

/// A manual grade that replaced the autograder's (see `crate::overrides`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverrideNote {
    pub autograded_points: f64,
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionResult {
    /// Stable id: the quiz question id, or the answer field (e.g. `top_ops.1.name`).
    pub id: String,
    /// What was asked, in a few words.
    pub label: String,
    /// What the learner wrote, as written (None when unanswered).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
    pub outcome: Outcome,
    pub points: f64,
    pub max_points: f64,
    pub reason: String,
    /// The quiz's explanation, shown once the question has been attempted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The autograder is unsure: an instructor should read this answer.
    pub needs_review: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overridden: Option<OverrideNote>,
}

impl QuestionResult {
    pub fn new(id: impl Into<String>, label: impl Into<String>, max_points: f64) -> Self {
        QuestionResult {
            id: id.into(),
            label: label.into(),
            answer: None,
            outcome: Outcome::Unanswered,
            points: 0.0,
            max_points,
            reason: String::new(),
            context: None,
            needs_review: false,
            overridden: None,
        }
    }

    pub fn answer(mut self, answer: impl Into<String>) -> Self {
        self.answer = Some(answer.into());
        self
    }

    pub fn right(mut self, reason: impl Into<String>) -> Self {
        self.outcome = Outcome::Right;
        self.points = self.max_points;
        self.reason = reason.into();
        self
    }

    pub fn wrong(mut self, reason: impl Into<String>) -> Self {
        self.outcome = Outcome::Wrong;
        self.points = 0.0;
        self.reason = reason.into();
        self
    }

    pub fn unanswered(mut self, reason: impl Into<String>) -> Self {
        self.outcome = Outcome::Unanswered;
        self.points = 0.0;
        self.reason = reason.into();
        self
    }

    /// Credit a fraction of the points (rounded to hundredths so reports stay stable).
    pub fn partial(mut self, fraction: f64, reason: impl Into<String>) -> Self {
        let fraction = fraction.clamp(0.0, 1.0);
        self.points = round2(self.max_points * fraction);
        self.outcome = if fraction >= 1.0 {
            Outcome::Right
        } else if fraction <= 0.0 {
            Outcome::Wrong
        } else {
            Outcome::Partial
        };
        self.reason = reason.into();
        self
    }
}

pub(crate) fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExerciseReport {
    pub exercise: u32,
    pub title: String,
    /// The device the learner's results were measured on, when the exercise reads a profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    pub questions: Vec<QuestionResult>,
    /// Problems with the files; each one is also a gradebook flag.
    pub problems: Vec<Problem>,
    /// Remarks that are not problems (e.g. "measured in a debug build").
    pub notes: Vec<String>,
    pub points: f64,
    pub max_points: f64,
    /// Fraction of `max_points` needed to pass.
    pub pass_mark: f64,
    pub passed: bool,
    /// The learner looked at the solution before passing (from the progress file).
    pub solution_viewed_early: bool,
    /// The learner's own variant of a per-learner exercise, in words (drawn from the id in
    /// learner.toml), so that a report shows the very questions it graded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl ExerciseReport {
    /// A report with nothing graded yet: no questions, no points, not passed.
    pub fn new(exercise: u32, title: impl Into<String>, pass_mark: f64) -> Self {
        Self {
            exercise,
            title: title.into(),
            device: None,
            questions: Vec::new(),
            problems: Vec::new(),
            notes: Vec::new(),
            points: 0.0,
            max_points: 0.0,
            pass_mark,
            passed: false,
            solution_viewed_early: false,
            variant: None,
        }
    }

    /// Recompute the total and the pass from the questions.
    pub fn total(&mut self) {
        self.points = round2(self.questions.iter().map(|q| q.points).sum());
        self.max_points = round2(self.questions.iter().map(|q| q.max_points).sum());
        self.passed =
            self.max_points > 0.0 && self.points + 1e-9 >= self.pass_mark * self.max_points;
    }

    /// Score as a percentage of the points.
    pub fn percent(&self) -> f64 {
        if self.max_points > 0.0 {
            round2(self.points / self.max_points * 100.0)
        } else {
            0.0
        }
    }

    pub fn needs_review(&self) -> bool {
        self.questions
            .iter()
            .any(|q| q.needs_review && q.overridden.is_none())
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }
}
