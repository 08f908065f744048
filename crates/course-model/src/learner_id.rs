//! The learner id: one line in `exercises/learner.toml`, `id = "alice"`. Every per-learner
//! variant is drawn from it (`crate::variant`), so `course check` and the instructor's `course
//! grade` regenerate the same questions. This module reads, checks and writes it, and asks for
//! it the first time ([`ensure_learner_id`]): `course run` and `course check` do, and so do the
//! exercises that draw questions (1 and 6) before they draw, whether run by `course run` or by
//! `cargo run -p exercise-N`.

use std::io::{BufRead, IsTerminal, Write};
use std::path::Path;

/// The learner's id file, inside the exercises folder (so a submission of that folder carries
/// it): one line, `id = "alice"`. Every per-learner variant is drawn from this id
/// (`crate::variant`), so `course check` and `course grade` regenerate the same questions.
pub const LEARNER_FILE: &str = "learner.toml";

/// The environment variable that gives the id where no `learner.toml` exists yet (CI, scripts,
/// a workshop machine set up in advance). `course` stores it on first use.
pub const LEARNER_ID_ENV: &str = "COURSE_LEARNER_ID";

/// Longest id accepted: a name or a student number, not an essay.
const MAX_ID_CHARS: usize = 64;

/// The id stored in `exercises_dir/learner.toml`, if that file holds a valid one.
pub fn learner_id(exercises_dir: &Path) -> Option<String> {
    read_learner_id(exercises_dir).ok().flatten()
}

/// The id stored in `exercises_dir/learner.toml`: `Ok(None)` when there is no such file, `Err`
/// with a message naming the file and the fix when it cannot be read or is not valid.
pub fn read_learner_id(exercises_dir: &Path) -> Result<Option<String>, String> {
    let path = exercises_dir.join(LEARNER_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_learner_file(&text)
            .map(Some)
            .map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "{}: cannot read it ({e}); check its permissions",
            path.display()
        )),
    }
}

/// Where a learner's id was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// In `learner.toml`.
    Stored(String),
    /// In `COURSE_LEARNER_ID` (checked), with no `learner.toml` yet.
    FromEnv(String),
}

impl Found {
    pub fn id(&self) -> &str {
        match self {
            Found::Stored(id) | Found::FromEnv(id) => id,
        }
    }
}

/// The one lookup of a learner's id: the one stored in `exercises_dir/learner.toml`, else
/// `COURSE_LEARNER_ID` (checked, not stored here). `Ok(None)` when neither says.
pub fn find_learner_id(exercises_dir: &Path) -> Result<Option<Found>, String> {
    if let Some(id) = read_learner_id(exercises_dir)? {
        return Ok(Some(Found::Stored(id)));
    }
    match std::env::var(LEARNER_ID_ENV) {
        Ok(id) if !id.trim().is_empty() => check_learner_id(&id)
            .map(|id| Some(Found::FromEnv(id)))
            .map_err(|e| format!("{LEARNER_ID_ENV}: {e}")),
        _ => Ok(None),
    }
}

/// The id a learner's tools work with ([`find_learner_id`]'s, wherever it was found).
pub fn current_learner_id(exercises_dir: &Path) -> Result<Option<String>, String> {
    Ok(find_learner_id(exercises_dir)?.map(|found| found.id().to_string()))
}

/// What to tell a learner whose tools found no id.
pub const NO_LEARNER_ID: &str = "no learner id yet: run `course id NAME` once (your name or student number, as your instructor asks; \
     `course run`, `course check` and the quiz exercises 1 and 6 also ask), or set COURSE_LEARNER_ID; it is stored in exercises/learner.toml";

/// The learner's id, given before anything is drawn from it: the one stored in
/// `exercises_dir/learner.toml`; else `COURSE_LEARNER_ID` (then stored); else asked in the
/// terminal (then stored). Without a terminal and without either, an error that says what to
/// do: the command that stores an id, the file it writes, and `rerun`, the command to run
/// again after. Messages go to standard error, prefixed as `course` prints its own (`==> `).
pub fn ensure_learner_id(exercises_dir: &Path, rerun: &str) -> Result<String, String> {
    let stdin = std::io::stdin();
    let terminal = stdin.is_terminal();
    ensure_with(
        exercises_dir,
        rerun,
        terminal.then(|| stdin.lock()),
        &mut std::io::stderr(),
    )
}

/// [`ensure_learner_id`] with its terminal given: `input` is `None` when there is none.
fn ensure_with(
    exercises_dir: &Path,
    rerun: &str,
    input: Option<impl BufRead>,
    out: &mut impl Write,
) -> Result<String, String> {
    let shown = exercises_dir.join(LEARNER_FILE);
    match find_learner_id(exercises_dir)? {
        Some(Found::Stored(stored)) => {
            let env = std::env::var(LEARNER_ID_ENV).unwrap_or_default();
            if !env.trim().is_empty() && env.trim().to_lowercase() != stored.to_lowercase() {
                let _ = writeln!(out, "==> note: {LEARNER_ID_ENV}={env} is set, but {} says {stored:?}: using {stored:?} (change it with `course id NAME`).", shown.display());
            }
            return Ok(stored);
        }
        Some(Found::FromEnv(id)) => return store_and_say(exercises_dir, &id, out),
        None => {}
    }
    let Some(mut input) = input else {
        return Err(format!(
            "no learner id yet, and no terminal to ask for one: your questions are drawn from it. Run `course id NAME` \
             (your name or student number, as your instructor asks), or write the line id = \"NAME\" in {}, or set \
             {LEARNER_ID_ENV}=NAME; then run `{rerun}` again",
            shown.display()
        ));
    };
    let io = |e: std::io::Error| format!("cannot ask for your learner id: {e}");
    writeln!(
        out,
        "==> First, your learner id: your name or student number, as your instructor asks."
    )
    .map_err(io)?;
    writeln!(out, "    Your own questions are drawn from it, `course check` grades the same ones, and `course grade` checks it against your submission's name.").map_err(io)?;
    for _ in 0..3 {
        write!(out, "    Learner id: ").map_err(io)?;
        out.flush().map_err(io)?;
        let mut line = String::new();
        if input.read_line(&mut line).map_err(io)? == 0 {
            break;
        }
        match check_learner_id(&line) {
            Ok(id) => return store_and_say(exercises_dir, &id, out),
            Err(e) => writeln!(out, "    {e}").map_err(io)?,
        }
    }
    Err(format!(
        "no learner id given; run `course id NAME` (it writes {}), then run `{rerun}` again",
        shown.display()
    ))
}

/// Store `id` in `exercises_dir`'s learner file and say so on `out`.
pub fn store_and_say(
    exercises_dir: &Path,
    id: &str,
    out: &mut impl Write,
) -> Result<String, String> {
    let id = write_learner_id(exercises_dir, id)?;
    let _ = writeln!(out, "==> Learner id {id:?} stored in exercises/{LEARNER_FILE} (submit it with your exercises; `course id NAME` changes it).");
    Ok(id)
}

/// Store `id` (checked with [`check_learner_id`]) in `exercises_dir/learner.toml`, atomically.
pub fn write_learner_id(exercises_dir: &Path, id: &str) -> Result<String, String> {
    let id = check_learner_id(id)?;
    let path = exercises_dir.join(LEARNER_FILE);
    let text = format!(
        "# Your learner id: `course` draws your own variant of the exercises from it, and the\n\
         # instructor's `course grade` regenerates the same one. Change it with `course id NAME`.\n\
         id = {}\n",
        toml::Value::String(id.clone())
    );
    output::write_file(&path, text.as_bytes(), output::Flush::ToDisk)
        .map_err(|e| format!("{}: cannot write it ({e})", path.display()))?;
    Ok(id)
}

/// The id a `learner.toml` holds, checked.
pub fn parse_learner_file(text: &str) -> Result<String, String> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct LearnerFile {
        id: String,
    }
    let file: LearnerFile = toml::from_str(text).map_err(|e| format!("not a learner file ({}); it should hold one line, id = \"your-name\" (or run `course id NAME`)", e.message()))?;
    check_learner_id(&file.id)
}

/// An id is trimmed; it must be 1 to 64 letters, digits, `-`, `_` or `.`, not starting with a
/// dot, so that it can also name the learner's folder or archive in a cohort.
pub fn check_learner_id(id: &str) -> Result<String, String> {
    let id = id.trim();
    if id.is_empty() {
        return Err(
            "the learner id is empty; use your name or student number, e.g. `course id alice`"
                .to_string(),
        );
    }
    if id.chars().count() > MAX_ID_CHARS {
        return Err(format!("the learner id is over {MAX_ID_CHARS} characters; use a short name or your student number"));
    }
    if let Some(bad) = id
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!("the learner id {id:?} holds {bad:?}; use letters, digits, '-', '_' or '.' only (it also names your submission)"));
    }
    if id.starts_with('.') {
        return Err(format!(
            "the learner id {id:?} starts with a dot; start it with a letter or digit"
        ));
    }
    Ok(id.to_string())
}

/// Whether a stored id matches the name of the folder or archive it was submitted as: the
/// name without its archive extension (`alice.zip`, `alice.tar.gz`, `alice`), compared as the
/// variant seed compares ids (trimmed, case-insensitive).
pub fn id_matches_name(id: &str, submitted_as: &str) -> bool {
    let stem = [".tar.gz", ".tgz", ".zip"]
        .iter()
        .find_map(|ext| {
            submitted_as
                .len()
                .checked_sub(ext.len())
                .filter(|&n| submitted_as[n..].eq_ignore_ascii_case(ext))
                .map(|n| &submitted_as[..n])
        })
        .unwrap_or(submitted_as);
    id.trim().to_lowercase() == stem.trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_learner_id_is_written_read_back_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(read_learner_id(dir.path()), Ok(None));
        assert_eq!(
            write_learner_id(dir.path(), "  alice-2 ").unwrap(),
            "alice-2"
        );
        assert_eq!(learner_id(dir.path()).as_deref(), Some("alice-2"));
        let text = std::fs::read_to_string(dir.path().join(LEARNER_FILE)).unwrap();
        assert!(text.contains("id = \"alice-2\""), "{text}");
        for bad in ["", "   ", "../bob", "a b", ".hidden", &"x".repeat(65)] {
            assert!(check_learner_id(bad).is_err(), "{bad:?} should be refused");
        }
        std::fs::write(dir.path().join(LEARNER_FILE), "name = \"alice\"\n").unwrap();
        let err = read_learner_id(dir.path()).unwrap_err();
        assert!(
            err.contains("learner.toml") && err.contains("course id"),
            "{err}"
        );
        assert_eq!(learner_id(dir.path()), None);
    }

    #[test]
    fn an_id_is_asked_in_a_terminal_and_stored_before_anything_is_drawn() {
        let dir = tempfile::tempdir().unwrap();
        let mut out = Vec::new();
        let typed: &[u8] = b"a b\n  carol \n";
        let id = ensure_with(dir.path(), "cargo run -p exercise-1", Some(typed), &mut out).unwrap();
        assert_eq!(id, "carol");
        assert_eq!(read_learner_id(dir.path()), Ok(Some("carol".into())));
        let said = String::from_utf8(out).unwrap();
        assert!(
            said.contains("Learner id: ")
                && said.contains("holds ' '")
                && said.contains("stored in exercises/learner.toml"),
            "{said}"
        );
        // Stored: not asked again.
        let mut out = Vec::new();
        let none: Option<&[u8]> = None;
        assert_eq!(
            ensure_with(dir.path(), "x", none, &mut out).unwrap(),
            "carol"
        );
    }

    #[test]
    fn without_a_terminal_the_error_names_the_file_and_the_commands() {
        let dir = tempfile::tempdir().unwrap();
        let none: Option<&[u8]> = None;
        let err =
            ensure_with(dir.path(), "cargo run -p exercise-6", none, &mut Vec::new()).unwrap_err();
        let file = dir.path().join(LEARNER_FILE).display().to_string();
        assert!(
            err.contains(&file)
                && err.contains("course id NAME")
                && err.contains("`cargo run -p exercise-6` again")
                && !err.contains("  "),
            "{err}"
        );
        assert_eq!(read_learner_id(dir.path()), Ok(None), "nothing stored");
        // Input that ends before a valid id: the same way out.
        let err = ensure_with(
            dir.path(),
            "cargo run -p exercise-6",
            Some(&b""[..]),
            &mut Vec::new(),
        )
        .unwrap_err();
        assert!(err.contains("course id NAME"), "{err}");
    }

    #[test]
    fn the_stored_id_comes_before_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        write_learner_id(dir.path(), "alice").unwrap();
        assert_eq!(
            find_learner_id(dir.path()),
            Ok(Some(Found::Stored("alice".into())))
        );
        assert_eq!(
            current_learner_id(dir.path()).unwrap().as_deref(),
            Some("alice")
        );
    }
}
