//! `course`: the course runner. Learners list, run, check, get hints, watch, reset and see
//! solutions of the exercises; instructors grade a workshop cohort. (The course's authors lint
//! the course itself with another binary, `course-dev check`: crates/course-dev.) A thin binary
//! over the `grader` crate; every exercise fact comes from exercises/info.toml.

mod cargo;
mod cli;
mod commands;
mod containment;
mod learner;
mod root;
mod sandbox;
mod term;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    // `course list | head`: the reader leaving ends the program quietly, status 0.
    output::pipe::end_quietly_when_closed();
    // clap exits 0 after --help and 2 on a bad argument, as the rule below says.
    let cli = cli::Cli::parse();
    // The exit-code rule (course_model::exit): a command's own 0 (passed, done) or 1 (not
    // passed); an error, or a panic (a bug: `course` runs no learner code in-process), is 2.
    course_model::exit::guard(None, || commands::dispatch(cli))
}
