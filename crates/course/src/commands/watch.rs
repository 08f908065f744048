//! `course watch`: check the current exercise, then again whenever the content of a file in
//! its folder changes; move on to the next exercise when it passes. Ctrl-C stops it.
//!
//! Two filters keep a watch that is left alone from checking again and again. The watcher
//! reports opens and reads too (inotify's access events), and every check makes cargo read
//! the package folder, so reacting to every event re-checked in a loop: only events that
//! can change content count (create, write, remove, rename). And an editor that saves an
//! unchanged file, or a check that rewrites one, still fires those: the folder's content
//! fingerprint must differ from the last checked one before a new check runs.

use super::check::{pipeline, print};
use super::Course;
use crate::cargo::Build;
use crate::cli::Format;
use anyhow::{Context, Result};
use notify::event::{EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::Path;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

/// How long a burst of events (an editor's write, rename and chmod) is drained before the
/// folder is fingerprinted.
const SETTLE: Duration = Duration::from_millis(300);

pub fn watch(course: &Course, exercise: Option<u32>, build: &Build) -> Result<ExitCode> {
    let mut n = match exercise {
        Some(n) => course.exercise(n)?.number,
        None => course.current(&course.progress()?),
    };
    let (tx, rx) = mpsc::channel::<notify::Result<notify::Event>>();
    let mut watcher = RecommendedWatcher::new(tx, notify::Config::default())
        .context("cannot watch files on this system")?;
    loop {
        let dir = course.path(&course.exercise(n)?.dir);
        watcher
            .watch(&dir, RecursiveMode::Recursive)
            .with_context(|| format!("cannot watch {}", dir.display()))?;
        let passed = check_once(course, n, build)?;
        if passed {
            watcher.unwatch(&dir).ok();
            match course.manifest.exercise(n + 1) {
                Some(next) => {
                    eprintln!(
                        "==> Watching exercise {} next ({}).",
                        next.number, next.title
                    );
                    n = next.number;
                    continue;
                }
                None => {
                    eprintln!("==> Every exercise passes. Nothing left to watch.");
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
        // The fingerprint after the check, taken before the learner is told to edit: whatever
        // the check itself left behind is not a change, and an edit made right away is.
        let checked = fingerprint(&dir);
        eprintln!(
            "==> Watching {} for changes (Ctrl-C to stop)...",
            dir.display()
        );
        loop {
            let event = rx.recv().context("the file watcher stopped")?;
            if !changes_content(&event) {
                continue;
            }
            std::thread::sleep(SETTLE);
            while rx.try_recv().is_ok() {}
            if fingerprint(&dir) != checked {
                break;
            }
        }
        watcher.unwatch(&dir).ok();
    }
}

/// Whether an event can have changed a file the exercise owns: a create, a write, a remove
/// or a rename outside build output. Opens, reads, closes and metadata changes cannot.
fn changes_content(event: &notify::Result<notify::Event>) -> bool {
    let Ok(event) = event else { return true };
    let kind = matches!(
        event.kind,
        EventKind::Create(_)
            | EventKind::Remove(_)
            | EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Name(_) | ModifyKind::Any)
    );
    kind && event.paths.iter().any(|p| !in_build_output(p))
}

fn in_build_output(path: &Path) -> bool {
    path.components().any(|c| c.as_os_str() == "target")
}

/// Paths, sizes and contents of every file under `dir` outside build output, hashed.
fn fingerprint(dir: &Path) -> u64 {
    let mut files = Vec::new();
    collect_files(dir, &mut files);
    files.sort();
    let mut hasher = DefaultHasher::new();
    for path in files {
        path.hash(&mut hasher);
        // A file removed between listing and reading hashes as empty: the next event re-checks.
        std::fs::read(&path).unwrap_or_default().hash(&mut hasher);
    }
    hasher.finish()
}

fn collect_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if in_build_output(&path) {
            continue;
        }
        match entry.file_type() {
            Ok(t) if t.is_dir() => collect_files(&path, out),
            Ok(t) if t.is_file() => out.push(path),
            _ => {}
        }
    }
}

fn check_once(course: &Course, n: u32, build: &Build) -> Result<bool> {
    if crate::term::colour() {
        // Clear the screen so each check starts at the top, as rustlings does.
        print!("\x1b[2J\x1b[H");
    }
    match pipeline(course, n, build)? {
        Some(report) => {
            print(&report, Format::Terminal);
            Ok(report.passed)
        }
        None => Ok(false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{AccessKind, AccessMode, CreateKind, DataChange, MetadataKind};

    fn event(kind: EventKind, path: &str) -> notify::Result<notify::Event> {
        Ok(notify::Event::new(kind).add_path(path.into()))
    }

    #[test]
    fn reads_and_metadata_are_not_changes() {
        assert!(!changes_content(&event(
            EventKind::Access(AccessKind::Open(AccessMode::Read)),
            "ex/src/main.rs"
        )));
        assert!(!changes_content(&event(
            EventKind::Access(AccessKind::Close(AccessMode::Read)),
            "ex/Cargo.toml"
        )));
        assert!(!changes_content(&event(
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::AccessTime)),
            "ex/answers.toml"
        )));
        assert!(changes_content(&event(
            EventKind::Modify(ModifyKind::Data(DataChange::Content)),
            "ex/answers.toml"
        )));
        assert!(changes_content(&event(
            EventKind::Create(CreateKind::File),
            "ex/src/new.rs"
        )));
        assert!(!changes_content(&event(
            EventKind::Create(CreateKind::File),
            "ex/target/debug/x"
        )));
    }

    #[test]
    fn the_fingerprint_follows_content_not_time() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("answers.toml"), "a = 1\n").unwrap();
        let before = fingerprint(dir.path());
        std::fs::write(dir.path().join("answers.toml"), "a = 1\n").unwrap();
        assert_eq!(
            fingerprint(dir.path()),
            before,
            "rewriting the same bytes is not a change"
        );
        std::fs::create_dir_all(dir.path().join("target")).unwrap();
        std::fs::write(dir.path().join("target/out"), "x").unwrap();
        assert_eq!(
            fingerprint(dir.path()),
            before,
            "build output is not the exercise's"
        );
        std::fs::write(dir.path().join("answers.toml"), "a = 2\n").unwrap();
        assert_ne!(fingerprint(dir.path()), before);
    }
}
