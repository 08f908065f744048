//! Grades the course's exercises: the learner's `answers.toml` and their own measured results
//! (`results/*.json`) against the graded question bank (`crates/grader/bank`, mdbook-quiz files
//! the book never renders; each learner is asked a draw made from their id, `course_model::variant`) and the
//! answer key, into reports for the terminal, Markdown and JSON; and whole workshop cohorts into
//! a gradebook. The grader reads files only: re-running a submission's tests is `course grade
//! --run-tests`, in a sandbox of the `course` crate. What the course is (its manifest, question
//! bank, learner id and variants) is `course_model`'s; this crate checks against it.
//!
//! ```text
//! exercises/info.toml ─┐
//! crates/grader/bank ──┼─► Grader ──grade_exercise(Submission, N)──► ExerciseReport ──► render
//! crates/grader/key ───┘                                  cohort::grade_cohort ──► gradebook.csv, feedback/
//! ```

pub mod answers;
pub mod archive;
pub mod cohort;
pub mod exercise_checks;
pub mod export;
pub use answers_file::fill_answers;
pub mod grade;
pub mod key;
pub mod late;
pub mod overrides;
pub mod prediction;
pub mod question_types;
pub mod render;
pub mod report;
pub mod results;
pub mod similarity;
pub mod sources;
pub mod submission;
pub mod tree;

// Below the grader, so that the reference solutions use them without linking it: the problems
// found in a learner's files and the course's rule for a plan (`course_model::{problem,
// plan_rule}`), which the checks name as the grader's own modules.
use course_model::{plan_rule, problem};

pub use course_model::manifest::{ExerciseInfo, Manifest};
pub use grade::{Grader, SetupError};
pub use problem::{Problem, ProblemKind};
pub use report::{ExerciseReport, Outcome, QuestionResult};
pub use submission::{Limits, Submission};
