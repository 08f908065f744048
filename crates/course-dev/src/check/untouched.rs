//! The exercises as a learner gets them: each has a TODO, its program answers `--help`, its
//! `course check N` fails and says what to do next, and a quiz explains how to answer by hand
//! when there is no terminal to ask in.

use super::root::Source;
use super::shim::Packages;
use super::tally::missing;
use super::{failure, step, verdict, Lint, CHECK_LINES, QUICK_LIMIT, STEP_LIMIT};
use course_model::manifest::{ExerciseInfo, MANIFEST_PATH};
use std::path::Path;
use std::process::Command;

pub fn check(lint: &mut Lint) {
    let exercises = lint.exercises.clone();
    for exercise in &exercises {
        let outcome = has_todo(lint.checkout(), exercise);
        lint.tally
            .record(&format!("exercise-{} has TODOs", exercise.number), outcome);
    }
    let root = match lint.root("untouched", Source::Exercises, &exercises, &lint.learner) {
        Ok(root) => root,
        Err(e) => {
            return lint.tally.fail(
                "untouched exercises: a course root of their files",
                &format!("{e:#}"),
            )
        }
    };
    for exercise in &exercises {
        let outcome = answers_help(lint, exercise);
        lint.tally
            .record(&format!("{} --help", exercise.package), outcome);
        let says = &exercise.dev_check.untouched_says;
        let outcome = fails_saying_what_to_do(lint, &root, exercise);
        let n = exercise.number;
        lint.tally.record(
            &format!(
                "untouched exercise {n}: course check {n} fails and says what to do ({})",
                says.join("|")
            ),
            outcome,
        );
    }
    for exercise in exercises
        .iter()
        .filter(|e| !e.dev_check.no_terminal_says.is_empty())
    {
        let outcome = explains_without_a_terminal(lint, &root, exercise);
        lint.tally.record(
            &format!(
                "{} without a terminal explains how to answer by hand",
                exercise.package
            ),
            outcome,
        );
    }
}

/// A TODO in the exercise's src/ or its README.md: what the learner is to do is marked.
fn has_todo(checkout: &Path, exercise: &ExerciseInfo) -> Result<(), String> {
    let dir = checkout.join(&exercise.dir);
    let mut files = vec![dir.join("README.md")];
    collect_files(&dir.join("src"), &mut files);
    let marked = files.iter().any(|f| {
        std::fs::read(f).is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains("TODO"))
    });
    if marked {
        Ok(())
    } else {
        Err(format!(
            "no TODO in {}/src or {}/README.md: mark what the learner is to write",
            exercise.dir, exercise.dir
        ))
    }
}

fn collect_files(dir: &Path, into: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect_files(&path, into);
        } else {
            into.push(path);
        }
    }
}

fn answers_help(lint: &Lint, exercise: &ExerciseInfo) -> Result<(), String> {
    let mut command = Command::new(lint.program(&exercise.package));
    command.arg("--help");
    let ran = step::run(
        &mut command,
        &lint.log(&format!("help-{}", exercise.number)),
        QUICK_LIMIT,
    )
    .map_err(|e| format!("{e:#}"))?;
    let problems = missing(
        &ran.text,
        &[
            "Usage:".to_string(),
            format!("Exercise {}", exercise.number),
        ],
    );
    verdict(&problems, &ran, QUICK_LIMIT, super::tally::SHOWN_LINES)
}

fn fails_saying_what_to_do(
    lint: &Lint,
    root: &Path,
    exercise: &ExerciseInfo,
) -> Result<(), String> {
    let n = exercise.number;
    let says = &exercise.dev_check.untouched_says;
    if says.is_empty() {
        return Err(format!(
            "{MANIFEST_PATH}: exercise {n} has no dev_check.untouched_says: add to its [exercises.dev_check] the texts its failing \
             `course check {n}` must print (what is wrong, what to do next)"
        ));
    }
    let ran = lint
        .course_check(root, Packages::Exercises, n, &format!("untouched-{n}"))
        .map_err(|e| format!("{e:#}"))?;
    let mut problems = missing(&ran.text, says);
    if !ran.failed() {
        problems.insert(
            0,
            format!("`course check {n}` should fail on the untouched exercise"),
        );
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(failure(&problems, &ran, STEP_LIMIT, CHECK_LINES))
    }
}

fn explains_without_a_terminal(
    lint: &Lint,
    root: &Path,
    exercise: &ExerciseInfo,
) -> Result<(), String> {
    let mut command = Command::new(lint.program(&exercise.package));
    command.arg("--exercise-dir").arg(root.join(&exercise.dir));
    let ran = step::run(
        &mut command,
        &lint.log(&format!("no-terminal-{}", exercise.number)),
        QUICK_LIMIT,
    )
    .map_err(|e| format!("{e:#}"))?;
    let problems = missing(&ran.text, &exercise.dev_check.no_terminal_says);
    verdict(&problems, &ran, QUICK_LIMIT, super::tally::SHOWN_LINES)
}
