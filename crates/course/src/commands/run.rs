//! `course run N`: build and run the exercise as `cargo run -p exercise-N` does (the same
//! profile, so the same build), passing arguments through.
//!
//! An exercise whose answers have a `[prediction]` table (exercise 3) first asks, in the
//! terminal, what the learner expects the profile to show, and records it with the time and
//! whether the results file existed then; afterwards it shows the prediction next to what was
//! measured. Without a terminal (CI, no stdin) it says so and does not ask.

use super::Course;
use crate::cargo::Build;
use anyhow::{Context, Result};
use grader::answers::{Answers, Field};
use grader::manifest::ExerciseInfo;
use grader::prediction;
use grader::results::profile_report::ProfileReport;
use std::io::{BufRead, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn run(course: &Course, n: u32, build: &Build, args: &[String]) -> Result<ExitCode> {
    let exercise = course.exercise(n)?;
    // The exercise prints the learner's own variant, drawn from this id.
    crate::learner::ensure(course)?;
    let predicts = predicts(exercise);
    if predicts {
        ask_prediction(course, exercise)?;
    }
    let build = build.for_package(&exercise.package, &course.path(&exercise.dir).join("Cargo.toml"));
    eprintln!("==> {}", build.shown("run", &exercise.package));
    let status = crate::cargo::run(&course.root, "run", &exercise.package, &build, args)?;
    if status.success() {
        if predicts {
            show_prediction(course, exercise);
        }
        eprintln!("==> Done. When its results are written, grade it with `course check {n}`.");
        Ok(ExitCode::SUCCESS)
    } else if build.uses_cuda() && status.code() == Some(127) {
        // The dynamic loader's exit status: candle links the NVIDIA driver library at start.
        eprintln!(
            "==> exercise-{n} could not start: a `--features cuda` build needs the NVIDIA driver (libcuda.so.1) even to \
             start, so it runs only on a machine with an NVIDIA GPU. Here, leave out --features cuda (and unset COURSE_FEATURES)."
        );
        Ok(ExitCode::FAILURE)
    } else {
        eprintln!("==> exercise-{n} stopped with {status}; the output above says why.");
        Ok(ExitCode::FAILURE)
    }
}

/// Does this exercise start with a prediction (its answers template has the table)?
fn predicts(exercise: &ExerciseInfo) -> bool {
    exercise.answers_template.lines().any(|l| l.trim() == format!("[{}]", prediction::TABLE)) && exercise.result_path("profile").is_some()
}

fn answers_path(course: &Course, exercise: &ExerciseInfo) -> PathBuf {
    course.exercises_dir().join(exercise.answers_path())
}

fn report_path(course: &Course, exercise: &ExerciseInfo) -> Option<PathBuf> {
    exercise.result_path("profile").map(|rel| course.exercises_dir().join(rel))
}

/// The prediction already in answers.toml: (op, share).
fn recorded(path: &Path) -> Option<(String, Option<f64>)> {
    let text = std::fs::read_to_string(path).ok()?;
    let answers = Answers::parse(&text, &path.display().to_string()).ok()?;
    let op = answers.text(&format!("{}.op", prediction::TABLE)).answered()?;
    let share = match answers.number(&format!("{}.share_pct", prediction::TABLE)) {
        Field::Answered(v) => Some(v),
        _ => None,
    };
    Some((op, share))
}

fn ask_prediction(course: &Course, exercise: &ExerciseInfo) -> Result<()> {
    let path = answers_path(course, exercise);
    let shown = super::shown(&course.root, &path);
    if let Some((op, share)) = recorded(&path) {
        let share = share.map(|s| format!(" at {s}%")).unwrap_or_default();
        eprintln!("==> Your prediction is recorded in {shown}: `{op}`{share}. (To predict again, clear [prediction] there and delete the results first.)");
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        eprintln!(
            "==> Not asking for your prediction: stdin is not a terminal (CI?). Run `course run {}` in a terminal to make one \
             before the profile runs; until then the prediction question stays unanswered.",
            exercise.number
        );
        return Ok(());
    }
    let report = report_path(course, exercise);
    let existed = report.as_ref().is_some_and(|p| p.exists());
    eprintln!("==> Before the profile runs: what do you expect it to show?");
    if existed {
        eprintln!("    (results/report.json already exists, so this prediction will not count as made first; delete it to predict blind.)");
    }
    let op = ask("    Which op will top the table (its name, e.g. matmul, gelu, softmax)? ")?;
    if op.is_empty() {
        eprintln!("==> No prediction made; `course run {}` will ask again next time.", exercise.number);
        return Ok(());
    }
    let share = loop {
        let text = ask("    Its share of the step, in % (e.g. 40)? ")?;
        if text.is_empty() {
            break None;
        }
        match text.trim_end_matches('%').trim().parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..=100.0).contains(&v) => break Some(v),
            _ => eprintln!("    A percentage between 0 and 100, please (or Enter to skip)."),
        }
    };
    let at = std::time::SystemTime::now();
    grader::fill_answers::set(&path, &prediction::record(&op, share, at, existed))
        .with_context(|| format!("cannot record your prediction in {shown}"))?;
    eprintln!("==> Recorded in {shown} ({}).", prediction::format_time(at));
    Ok(())
}

fn ask(question: &str) -> Result<String> {
    eprint!("{question}");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim().to_string())
}

/// After the run: the prediction next to what the report measured.
fn show_prediction(course: &Course, exercise: &ExerciseInfo) {
    let (Some((op, share)), Some(report)) = (recorded(&answers_path(course, exercise)), report_path(course, exercise)) else { return };
    let shown = super::shown(&course.root, &report);
    let Ok(text) = std::fs::read_to_string(&report) else { return };
    match ProfileReport::parse(&text, &shown) {
        Ok(profile) => eprintln!("==> {}.", prediction::beside_measurement(&op, share, &profile)),
        Err(problem) => eprintln!("==> Cannot compare your prediction with {shown}: {problem}"),
    }
}
