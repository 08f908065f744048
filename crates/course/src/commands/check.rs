//! `course check N`: a pipeline a learner can predict. Build and the exercise's own tests (if it
//! has any) → grade answers.toml and results/*.json → report. Exits by the course's rule
//! (`course_model::exit`): 0 passed; 1 not passed (a build or a test that fails included);
//! 2 could not run (an error: no cargo, a corrupt course file).
//!
//! An exercise without tests (`test = false` in exercises/info.toml) is graded without a build:
//! what is graded is its answers and the results `course run N` wrote, and building would only
//! make the learner wait (or, in another profile, compile everything again).

use super::check_json::{CheckOutput, Status};
use super::Course;
use crate::cargo::Build;
use crate::cli::Format;
use anyhow::Result;
use course_model::exit::Exit;
use grader::submission::{Limits, Submission};
use grader::{ExerciseReport, Grader};
use std::process::ExitCode;

/// How the pipeline ended.
pub enum Checked {
    BuildFailed,
    TestsFailed,
    Graded(ExerciseReport),
}

/// Run the pipeline; `Ok(None)` when the build or the tests failed (already reported).
pub fn pipeline(course: &Course, n: u32, build: &Build) -> Result<Option<ExerciseReport>> {
    Ok(match run_pipeline(course, n, build, false)? {
        Checked::Graded(report) => Some(report),
        Checked::BuildFailed | Checked::TestsFailed => None,
    })
}

/// Run the pipeline, saying which step stopped it. `json`: cargo's own output (the test
/// harness prints on standard output) goes to standard error, so that standard output holds
/// the JSON report alone.
pub fn run_pipeline(course: &Course, n: u32, build: &Build, json: bool) -> Result<Checked> {
    let cargo = |subcommand: &str, package: &str, build: &Build| -> Result<bool> {
        if !json {
            return Ok(crate::cargo::run(&course.root, subcommand, package, build, &[])?.success());
        }
        use std::os::fd::AsFd;
        let mut command = crate::cargo::command(&course.root, subcommand, package, build, &[])?;
        command.stdout(std::io::stderr().as_fd().try_clone_to_owned()?);
        let status = command.status().map_err(|e| {
            anyhow::anyhow!(
                "cannot start `cargo {subcommand}`: is cargo installed and on PATH? ({e})"
            )
        })?;
        Ok(status.success())
    };
    let exercise = course.exercise(n)?;
    // The id first: the variant graded below is drawn from it, and asking comes before a build.
    crate::learner::ensure(&course.exercises_dir())?;
    // Load the question bank and the key first: a broken course should say so before a build.
    let grader = Grader::load(&course.root, None)?;
    if !course.path(&exercise.dir).join("Cargo.toml").is_file() {
        anyhow::bail!(
            "{}/Cargo.toml is missing: restore the exercise with `course reset {n}` (or `git checkout -- {}`)",
            exercise.dir,
            exercise.dir
        );
    }
    let build = build.for_package(
        &exercise.package,
        &course.path(&exercise.dir).join("Cargo.toml"),
    );
    if exercise.test {
        eprintln!(
            "==> [1/3] build: {}",
            build.shown("build", &exercise.package)
        );
        if !cargo("build", &exercise.package, &build)? {
            eprintln!("==> exercise-{n} does not build: fix the first compiler error above, then check again.");
            record_attempt(course, n, None)?;
            return Ok(Checked::BuildFailed);
        }
        eprintln!("==> [2/3] test: {}", build.shown("test", &exercise.package));
        if !cargo("test", &exercise.package, &build)? {
            eprintln!(
                "==> exercise-{n}'s tests fail: the first failing test above says what to fix."
            );
            record_attempt(course, n, None)?;
            return Ok(Checked::TestsFailed);
        }
    } else {
        eprintln!("==> [1/3] build: none needed, exercise-{n} has no tests (its results come from `course run {n}`)");
        eprintln!("==> [2/3] test: exercise-{n} has no tests");
    }
    eprintln!("==> [3/3] grade: {}/answers.toml and results", exercise.dir);
    let submission = Submission::from_exercises_dir(
        &course.exercises_dir(),
        "exercises",
        grader.wanted(),
        &Limits::default(),
    );
    let mut report = grader.grade_exercise(&submission, n);
    let progress = course.progress()?;
    report.solution_viewed_early = progress.exercise(n).solution_viewed_before_pass;
    record_attempt(course, n, Some(&report))?;
    Ok(Checked::Graded(report))
}

fn record_attempt(course: &Course, n: u32, report: Option<&ExerciseReport>) -> Result<()> {
    let mut progress = course.progress()?;
    let entry = progress.exercise_mut(n);
    entry.checks += 1;
    if let Some(report) = report {
        entry.best_percent = entry.best_percent.max(report.percent());
        // Passing is sticky: a later failed check (say, after `course reset`) does not
        // take back an exercise already passed.
        entry.passed |= report.passed;
    }
    course.save_progress(&progress)
}

pub fn print(report: &ExerciseReport, format: Format) {
    match format {
        Format::Terminal => print!(
            "{}",
            grader::render::terminal(report, crate::term::colour())
        ),
        Format::Markdown => print!("{}", grader::render::markdown(report)),
        Format::Json => println!("{}", CheckOutput::graded(report).to_json()),
    }
}

pub fn check(course: &Course, n: u32, build: &Build, format: Format) -> Result<ExitCode> {
    let json = matches!(format, Format::Json);
    let report = match run_pipeline(course, n, build, json)? {
        Checked::Graded(report) => report,
        stopped => {
            if let Format::Json = format {
                let status = match stopped {
                    Checked::BuildFailed => Status::BuildFailed,
                    _ => Status::TestsFailed,
                };
                let exercise = course.exercise(n)?;
                // The key's pass mark, as a report of nothing submitted carries it.
                let pass_mark = Grader::load(&course.root, None)?
                    .grade_exercise(&Submission::default(), n)
                    .pass_mark;
                let out = CheckOutput::stopped(n, &exercise.title, pass_mark, status);
                println!("{}", out.to_json());
            }
            return Ok(Exit::NotPassed.into());
        }
    };
    print(&report, format);
    if report.passed {
        if let Some(next) = course.manifest.exercise(n + 1) {
            eprintln!(
                "==> Exercise {n} passes. Next: exercise {} ({}).",
                next.number, next.title
            );
        } else {
            eprintln!("==> Exercise {n} passes. That was the last exercise: well done.");
        }
    } else {
        eprintln!(
            "==> Not passed yet. Fix what is marked wrong above; `course hint {n}` reveals a hint."
        );
    }
    Ok(Exit::passed_if(report.passed).into())
}
