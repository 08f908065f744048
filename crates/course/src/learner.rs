//! The learner id: asked once, on the first `course run` or `course check`, and stored in
//! `exercises/learner.toml` (which travels with a submission). The per-learner variants
//! (exercise 4's step, the quiz scenarios) are drawn from it, so `course check` here and the
//! instructor's `course grade` regenerate the same questions.
//!
//! Where the id comes from, in order: the stored file; `COURSE_LEARNER_ID` (then stored); a
//! question in the terminal (then stored). Without a terminal and without either, the command
//! stops and says how to give one (`course id NAME`).

use anyhow::{bail, Result};
use course_model::learner_id::{
    check_learner_id, find_learner_id, write_learner_id, Found, LEARNER_FILE, LEARNER_ID_ENV,
    NO_LEARNER_ID,
};
use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

/// The learner's id from the course's `exercises` folder, asking for it (and storing it there)
/// the first time.
pub fn ensure(dir: &Path) -> Result<String> {
    match find_learner_id(dir).map_err(anyhow::Error::msg)? {
        Some(Found::Stored(stored)) => {
            let env = std::env::var(LEARNER_ID_ENV).unwrap_or_default();
            if !env.trim().is_empty() && env.trim().to_lowercase() != stored.to_lowercase() {
                eprintln!("==> note: {LEARNER_ID_ENV}={env} is set, but exercises/{LEARNER_FILE} says {stored:?}: using {stored:?} (change it with `course id NAME`).");
            }
            return Ok(stored);
        }
        Some(Found::FromEnv(id)) => return store(dir, &id),
        None => {}
    }
    if !std::io::stdin().is_terminal() {
        bail!("{NO_LEARNER_ID}");
    }
    eprintln!("==> First, your learner id: your name or student number, as your instructor asks.");
    eprintln!("    Your own variant of some exercises is drawn from it, and `course grade` checks it against your submission's name.");
    for _ in 0..3 {
        eprint!("    Learner id: ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        if std::io::stdin().lock().read_line(&mut line)? == 0 {
            break;
        }
        match check_learner_id(&line) {
            Ok(id) => return store(dir, &id),
            Err(e) => eprintln!("    {e}"),
        }
    }
    bail!("{NO_LEARNER_ID}")
}

/// Stores `id` in `dir`'s learner file and says so.
pub fn store(dir: &Path, id: &str) -> Result<String> {
    let id = write_learner_id(dir, id).map_err(anyhow::Error::msg)?;
    eprintln!("==> Learner id {id:?} stored in exercises/{LEARNER_FILE} (submit it with your exercises; `course id NAME` changes it).");
    Ok(id)
}
