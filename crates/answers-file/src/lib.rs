//! A learner's `answers.toml`, written: the one writer of the file ([`fill_answers`]: values set
//! in place, the template's comments kept) and exercise 3's prediction ([`prediction`]: asked in
//! the terminal before the profile runs and recorded with the time it was made).
//!
//! Both exercise 3's own binary and `course run 3` ask for the prediction, with this crate's
//! code, so the learner who follows the README (`cargo run -p exercise-3`) is asked as well as
//! the one who types `course run 3`. It is a crate of its own, not a part of the grader, so that
//! exercise 3's first build stays light: the grader and its dependencies are not in it. The
//! grader re-exports both modules (`grader::fill_answers`, `grader::prediction`) and reads the
//! file with its own parser.

pub mod fill_answers;
pub mod prediction;

pub use fill_answers::Answer;
