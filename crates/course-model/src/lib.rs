//! The course's own model, apart from its grading: what a learner's exercise programs and the
//! `course` command need to know about the course, without linking the grader.
//!
//! - [`learner_id`]: the learner's id, stored in `exercises/learner.toml`, from which every
//!   per-learner variant is drawn;
//! - [`variant`]: the per-learner random choices drawn from that id;
//! - [`progress`]: the learner's progress file (hints, passes, solutions seen);
//! - [`manifest`]: `exercises/info.toml`, the list of exercises and what each one is;
//! - [`course`]: a checkout of the course, opened (its root and manifest), as `course` and
//!   `course-dev` both read it;
//! - [`quiz`], [`quiz_variant`], [`quiz_terminal`]: the question bank, the questions a learner
//!   is drawn, and asking them in the terminal (exercises 1 and 6);
//! - [`exercise`]: what every exercise's program shares (its `--exercise-dir` and its `main`);
//! - [`illustrative_step`], [`fewer_bytes`], [`traffic`]: what exercises 4 and 7 compute and
//!   show by the same rules `course check` grades by (the learner's illustrative step, the
//!   half-bytes prediction's inputs, the P90 target and the rate rule);
//! - [`results`], [`plan_rule`], [`top_ops_reference`]: reading a learner's `report.json` (its
//!   consistency checks and its ranking), the course's rule for a plan to cut the step time,
//!   and the reference answers of exercises 3 and 8 worked out by them: `course check` grades by
//!   the same reader and rule, and the reference solutions derive their answers with them;
//! - [`problem`]: what can be wrong with a learner's files, with the file, line and column;
//! - [`text`]: numbers and positions as messages show them;
//! - [`exit`]: the exit-code rule (0 passed, 1 not passed, 2 could not run).
//!
//! The grader (`crates/grader`) checks submissions against answer keys on top of this.

pub mod course;
pub mod exercise;
pub mod exit;
pub mod fewer_bytes;
pub mod illustrative_step;
pub mod learner_id;
pub mod manifest;
pub mod plan_rule;
pub mod problem;
pub mod progress;
pub mod quiz;
pub mod quiz_terminal;
pub mod quiz_variant;
pub mod results;
pub mod text;
pub mod top_ops_reference;
pub mod traffic;
pub mod variant;
