//! `course`: the course runner. Learners list, run, check, get hints, watch, reset and see
//! solutions of the exercises; instructors grade a workshop cohort; the course's authors lint
//! the course itself with `course dev check`. A thin binary over the `grader` crate; every
//! exercise fact comes from exercises/info.toml.

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
    // Under `course dev check`, this binary is also the cargo that `course` runs (linked as
    // `cargo`): then it does that cargo's work and nothing else.
    if let Some(code) = commands::dev::shim::intercept() {
        return code;
    }
    // clap exits 0 after --help and 2 on a bad argument, as the rule below says.
    let cli = cli::Cli::parse();
    // The exit-code rule (course_model::exit): a command's own 0 (passed, done) or 1 (not
    // passed); an error, or a panic (a bug: `course` runs no learner code in-process), is 2.
    course_model::exit::guard(None, || commands::dispatch(cli))
}
