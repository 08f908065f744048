//! `course run N`: build and run the exercise in release, passing arguments through.

use super::Course;
use crate::cargo::Build;
use anyhow::Result;
use std::process::ExitCode;

pub fn run(course: &Course, n: u32, build: &Build, args: &[String]) -> Result<ExitCode> {
    let exercise = course.exercise(n)?;
    let build = build.for_package(&exercise.package, &course.path(&exercise.dir).join("Cargo.toml"));
    eprintln!("==> cargo run --release -p {}{}", exercise.package, build.describe());
    let status = crate::cargo::run(&course.root, "run", &exercise.package, &build, args)?;
    if status.success() {
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
