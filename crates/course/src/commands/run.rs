//! `course run N`: build and run the exercise in release, passing arguments through.

use super::Course;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(course: &Course, n: u32, args: &[String]) -> Result<ExitCode> {
    let exercise = course.exercise(n)?;
    eprintln!("==> cargo run --release -p {}", exercise.package);
    let status = crate::cargo::run(&course.root, "run", &exercise.package, args)?;
    if status.success() {
        eprintln!("==> Done. When its results are written, grade it with `course check {n}`.");
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("==> exercise-{n} stopped with {status}; the output above says why.");
        Ok(ExitCode::FAILURE)
    }
}
