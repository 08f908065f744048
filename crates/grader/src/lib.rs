//! Grades the course's exercises: the learner's `answers.toml` and their own measured results
//! (`results/*.json`) against the question bank (the book's mdbook-quiz files) and the answer
//! key, into reports for the terminal, Markdown and JSON; and whole workshop cohorts into a
//! gradebook. The grader reads files only: it never runs a submission's code.
//!
//! ```text
//! exercises/info.toml ─┐
//! book/src/quizzes ────┼─► Grader ──grade_exercise(Submission, N)──► ExerciseReport ──► render
//! crates/grader/key ───┘                                  cohort::grade_cohort ──► gradebook.csv, feedback/
//! ```

pub mod answers;
pub mod archive;
pub mod atomic;
pub mod cohort;
pub mod exercise_checks;
pub mod fill_answers;
pub mod grade;
pub mod key;
pub mod manifest;
pub mod overrides;
pub mod plan_rule;
pub mod prediction;
pub mod problem;
pub mod progress;
pub mod quiz;
pub mod quiz_variant;
pub mod question_types;
pub mod quiz_terminal;
pub mod render;
pub mod report;
pub mod results;
pub mod sources;
pub mod submission;
pub mod variant;

pub use grade::{Grader, SetupError};
pub use manifest::{ExerciseInfo, Manifest};
pub use problem::{Problem, ProblemKind};
pub use report::{ExerciseReport, Outcome, QuestionResult};
pub use submission::{Limits, Submission};
