//! The learner id: asked once, on the first `course run` or `course check`, and stored in
//! `exercises/learner.toml` (which travels with a submission). The per-learner variants
//! (exercise 4's step, the quiz scenarios) are drawn from it, so `course check` here and the
//! instructor's `course grade` regenerate the same questions.
//!
//! Where the id comes from, in order: the stored file; `COURSE_LEARNER_ID` (then stored); a
//! question in the terminal (then stored). Without a terminal and without either, the command
//! stops and says how to give one (`course id NAME`).

use anyhow::Result;
use course_model::learner_id::{ensure_learner_id, store_and_say};
use std::path::Path;

/// The learner's id from the course's `exercises` folder, asking for it (and storing it there)
/// the first time: `course_model::learner_id::ensure_learner_id`, which the quiz exercises'
/// programs call too. Without a terminal the error says to run this same command again after.
pub fn ensure(dir: &Path) -> Result<String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let rerun = format!("course {}", args.join(" "));
    ensure_learner_id(dir, rerun.trim_end()).map_err(anyhow::Error::msg)
}

/// Stores `id` in `dir`'s learner file and says so.
pub fn store(dir: &Path, id: &str) -> Result<String> {
    store_and_say(dir, id, &mut std::io::stderr()).map_err(anyhow::Error::msg)
}
