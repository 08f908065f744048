//! `course solution N`: the reference solution, once the exercise passes; `--force` shows it
//! earlier and records that in the progress file (and so in the instructor's report).

use super::{shown, Course};
use anyhow::{bail, Result};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Largest file printed; anything bigger is listed, not shown.
const MAX_SHOWN_BYTES: u64 = 64 * 1024;

pub fn solution(course: &Course, n: u32, force: bool) -> Result<ExitCode> {
    let exercise = course.exercise(n)?;
    let mut progress = course.progress()?;
    let entry = progress.exercise_mut(n);
    if !entry.passed && !force {
        eprintln!(
            "Exercise {n} has not passed yet: the solution is shown once `course check {n}` passes.\n\
             To see it now, run `course solution {n} --force` (this is recorded in your progress and your report)."
        );
        return Ok(ExitCode::FAILURE);
    }
    if !entry.passed {
        entry.solution_viewed_before_pass = true;
    }
    entry.solution_viewed = true;
    course.save_progress(&progress)?;
    let dir = course.path(&exercise.solution_dir);
    if !dir.is_dir() {
        bail!(
            "the solution folder {} is missing from your copy of the course",
            exercise.solution_dir
        );
    }
    let mut files = Vec::new();
    collect(&dir, &mut files);
    files.sort();
    for file in files {
        let name = shown(&course.root, &file);
        let size = std::fs::metadata(&file).map(|m| m.len()).unwrap_or(0);
        match std::fs::read_to_string(&file) {
            Ok(text) if size <= MAX_SHOWN_BYTES => println!("==> {name}\n{}\n", text.trim_end()),
            _ => println!("==> {name} (not shown: not small text)\n"),
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Source, answers and manifests; never build output or measured results.
fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || matches!(name.as_str(), "target" | "results" | "Cargo.lock") {
            continue;
        }
        if path.is_dir() {
            collect(&path, out);
        } else {
            out.push(path);
        }
    }
}
