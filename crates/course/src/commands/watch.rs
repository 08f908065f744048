//! `course watch`: check the current exercise, then again whenever a file in its folder
//! changes; move on to the next exercise when it passes. Ctrl-C stops it.

use super::check::{pipeline, print};
use super::Course;
use crate::cargo::Build;
use crate::cli::Format;
use anyhow::{Context, Result};
use notify_debouncer_mini::{new_debouncer, notify::RecursiveMode, DebounceEventResult};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

pub fn watch(course: &Course, exercise: Option<u32>, build: &Build) -> Result<ExitCode> {
    let mut n = match exercise {
        Some(n) => course.exercise(n)?.number,
        None => course.current(&course.progress()?),
    };
    let (tx, rx) = mpsc::channel::<DebounceEventResult>();
    let mut debouncer = new_debouncer(Duration::from_millis(400), tx).context("cannot watch files on this system")?;
    loop {
        let dir = course.path(&course.exercise(n)?.dir);
        debouncer.watcher().watch(&dir, RecursiveMode::Recursive).with_context(|| format!("cannot watch {}", dir.display()))?;
        let passed = check_once(course, n, build)?;
        if passed {
            debouncer.watcher().unwatch(&dir).ok();
            match course.manifest.exercise(n + 1) {
                Some(next) => {
                    eprintln!("==> Watching exercise {} next ({}).", next.number, next.title);
                    n = next.number;
                    continue;
                }
                None => {
                    eprintln!("==> Every exercise passes. Nothing left to watch.");
                    return Ok(ExitCode::SUCCESS);
                }
            }
        }
        eprintln!("==> Watching {} for changes (Ctrl-C to stop)...", dir.display());
        // Wait for a change outside build output, then drain the burst that came with it.
        loop {
            let events = rx.recv().context("the file watcher stopped")?;
            let relevant = events.map(|evs| evs.iter().any(|e| !e.path.components().any(|c| c.as_os_str() == "target"))).unwrap_or(true);
            if relevant {
                while rx.try_recv().is_ok() {}
                break;
            }
        }
        debouncer.watcher().unwatch(&dir).ok();
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
