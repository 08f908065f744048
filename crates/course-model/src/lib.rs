//! The course's own model, apart from its grading: what a learner's exercise programs and the
//! `course` command need to know about the course, without linking the grader.
//!
//! - [`learner_id`]: the learner's id, stored in `exercises/learner.toml`, from which every
//!   per-learner variant is drawn;
//! - [`variant`]: the per-learner random choices drawn from that id;
//! - [`progress`]: the learner's progress file (hints, passes, solutions seen);
//! - [`exercise`]: what every exercise's program shares (its `--exercise-dir` and its `main`);
//! - [`atomic`]: file writes that a crash cannot leave half done.
//!
//! The grader (`crates/grader`) checks submissions against answer keys on top of this.

pub mod atomic;
pub mod exercise;
pub mod learner_id;
pub mod progress;
pub mod variant;
