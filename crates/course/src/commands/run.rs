//! `course run N`: build and run the exercise as `cargo run -p exercise-N` does (the same
//! profile, so the same build), passing arguments through.
//!
//! An exercise whose answers have a `[prediction]` table (exercises 3 and 5) first asks, in the
//! terminal, what the learner expects the profile to show (the questions of the form its table
//! names), and records it with the time and whether the first results file existed then;
//! afterwards exercise 3's is shown next to what was measured (exercise 5's binary shows its own
//! beside each stage). Without a terminal (CI, no stdin) it says so and does not ask.

use super::Course;
use crate::cargo::Build;
use anyhow::{Context, Result};
use course_model::exit::Exit;
use course_model::manifest::ExerciseInfo;
use course_model::results::profile_report::ProfileReport;
use grader::prediction::{self, Form, Outcome};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

pub fn run(course: &Course, n: u32, build: &Build, args: &[String]) -> Result<ExitCode> {
    let exercise = course.exercise(n)?;
    // The exercise prints the learner's own variant, drawn from this id.
    crate::learner::ensure(&course.exercises_dir())?;
    let form = form(exercise);
    if let Some(form) = form {
        ask_prediction(course, exercise, form)?;
    }
    let build = build.for_package(
        &exercise.package,
        &course.path(&exercise.dir).join("Cargo.toml"),
    );
    eprintln!("==> {}", build.shown("run", &exercise.package));
    let mut command = crate::cargo::command(&course.root, "run", &exercise.package, &build, args)?;
    if form.is_some() {
        // The exercise's binary asks for the prediction itself (so that `cargo run -p
        // exercise-N` asks too), unless told it has been asked here already.
        command.env(prediction::ASKED_ENV, "1");
    }
    let status = command
        .status()
        .context("cannot start `cargo run`: is cargo installed and on PATH?")?;
    if status.success() {
        if form == Some(&prediction::TOP_OP) {
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
        Ok(Exit::CouldNotRun.into())
    } else if status.code() == Some(i32::from(Exit::CouldNotRun.code())) {
        // The exercise's program follows the same rule: 2 is "the course could not run" (a
        // missing or corrupt file, a bug), not the learner's part unfinished; pass it on.
        eprintln!("==> exercise-{n} could not run; the output above says why.");
        Ok(Exit::CouldNotRun.into())
    } else {
        eprintln!("==> exercise-{n} stopped with {status}; the output above says why.");
        Ok(ExitCode::FAILURE)
    }
}

/// The prediction this exercise starts with: the form its answers template's `[prediction]`
/// table names, where it also declares the `profile` results file the prediction comes before.
fn form(exercise: &ExerciseInfo) -> Option<&'static Form> {
    exercise.result_path("profile")?;
    Form::for_template(&exercise.answers_template)
}

fn answers_path(course: &Course, exercise: &ExerciseInfo) -> PathBuf {
    course.exercises_dir().join(exercise.answers_path())
}

fn report_path(course: &Course, exercise: &ExerciseInfo) -> Option<PathBuf> {
    exercise
        .result_path("profile")
        .map(|rel| course.exercises_dir().join(rel))
}

fn ask_prediction(course: &Course, exercise: &ExerciseInfo, form: &Form) -> Result<()> {
    let path = answers_path(course, exercise);
    let shown = super::shown(&course.root, &path);
    let Some(report) = report_path(course, exercise) else {
        return Ok(());
    };
    let outcome = match form.recorded(&path) {
        Some(p) => Outcome::AlreadyRecorded(p),
        None if !std::io::stdin().is_terminal() => Outcome::NoTerminal,
        None => {
            eprint!("==> ");
            let stdin = std::io::stdin();
            form.ask(&path, &report, &mut stdin.lock(), &mut std::io::stderr())?
        }
    };
    match outcome {
        Outcome::AlreadyRecorded(p) => eprintln!(
            "==> Your prediction is recorded in {shown}: {}. (To predict again, clear [prediction] there and delete the results first.)",
            p.describe()
        ),
        Outcome::NoTerminal => eprintln!(
            "==> Not asking for your prediction: stdin is not a terminal (CI?). Run `course run {}` in a terminal to make one \
             before the profile runs; until then the prediction question stays unanswered.",
            exercise.number
        ),
        Outcome::Declined => eprintln!("==> No prediction made; `course run {}` will ask again next time.", exercise.number),
        Outcome::Made { made_at, .. } => eprintln!("==> Recorded in {shown} ({}).", prediction::format_time(made_at)),
        Outcome::AskedByCourse => {}
    }
    Ok(())
}

/// After the run: the prediction next to what the report measured.
fn show_prediction(course: &Course, exercise: &ExerciseInfo) {
    let (Some(p), Some(report)) = (
        prediction::TOP_OP.recorded(&answers_path(course, exercise)),
        report_path(course, exercise),
    ) else {
        return;
    };
    let shown = super::shown(&course.root, &report);
    let Ok(text) = std::fs::read_to_string(&report) else {
        return;
    };
    match ProfileReport::parse(&text, &shown) {
        Ok(profile) => eprintln!(
            "==> {}.",
            prediction::beside_measurement(
                p.text("op").unwrap_or_default(),
                p.number("share_pct"),
                &profile
            )
        ),
        Err(problem) => eprintln!("==> Cannot compare your prediction with {shown}: {problem}"),
    }
}
