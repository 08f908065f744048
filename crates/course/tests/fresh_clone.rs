//! A fresh clone has no learner id: every learner's variants are drawn from their own id, so
//! `exercises/learner.toml` is never committed (it is ignored), and the first `course` command
//! that needs an id asks for it in a terminal, or says plainly how to give one without a
//! terminal. Run on a `git clone` of this repository, as a learner gets it.

mod common;

use common::{repo, text, BIN};
use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// A `git clone` of this repository's committed state, in `dir`.
fn fresh_clone(dir: &Path) -> PathBuf {
    let clone = dir.join("course");
    let o = Command::new("git")
        .args(["clone", "--quiet", "--no-hardlinks"])
        .arg(repo())
        .arg(&clone)
        .output()
        .unwrap_or_else(|e| {
            panic!("this test clones the course's repository and needs git on PATH: {e}")
        });
    assert!(
        o.status.success(),
        "git clone of {} failed (is it a git checkout?): {}",
        repo().display(),
        String::from_utf8_lossy(&o.stderr)
    );
    clone
}

fn course(root: &Path, args: &[&str], stdin: Stdio) -> Output {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("course-fresh-clone-target");
    Command::new(BIN)
        .arg("--root")
        .arg(root)
        .args(args)
        .env_remove("COURSE_LEARNER_ID")
        .env("CARGO_TARGET_DIR", target)
        .env("NO_COLOR", "1")
        .stdin(stdin)
        .output()
        .unwrap()
}

#[test]
fn a_fresh_clone_has_no_learner_id_and_course_asks_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let clone = fresh_clone(dir.path());
    let id_file = clone
        .join("exercises")
        .join(course_model::learner_id::LEARNER_FILE);
    assert!(
        !id_file.exists(),
        "a clone comes with {}: every learner would share its id and variants; untrack it",
        id_file.display()
    );
    let ignored = Command::new("git")
        .arg("-C")
        .arg(&clone)
        .args(["check-ignore", "-q", "exercises/learner.toml"])
        .status()
        .unwrap();
    assert!(ignored.success(), "exercises/learner.toml is not ignored: a learner's `git add -A` would commit their id for everyone");

    // Without a terminal: no id is invented, and the message says how to give one.
    let o = course(&clone, &["check", "1"], Stdio::null());
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no learner id yet")
            && text(&o).contains("course id NAME")
            && text(&o).contains("COURSE_LEARNER_ID"),
        "{}",
        text(&o)
    );
    assert!(!id_file.exists());

    // In a terminal (a pseudo-terminal here): it asks, and stores the answer.
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty writes two new file descriptors, which are owned from here on.
    let rc = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty succeeded: both descriptors are open and owned by nothing else.
    let (terminal, mut keyboard) = unsafe {
        (
            OwnedFd::from_raw_fd(terminal),
            std::fs::File::from(OwnedFd::from_raw_fd(controller)),
        )
    };
    keyboard.write_all(b"alice\n").unwrap();
    let o = course(&clone, &["check", "1"], Stdio::from(terminal));
    let out = text(&o);
    assert!(
        out.contains("First, your learner id") && out.contains("Learner id \"alice\" stored"),
        "{out}"
    );
    assert_eq!(
        course_model::learner_id::learner_id(&clone.join("exercises")).as_deref(),
        Some("alice")
    );
    // And the check goes on, with alice's own scenarios (none answered yet).
    assert!(out.contains("unanswered"), "{out}");
}
