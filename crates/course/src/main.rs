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
    let cli = cli::Cli::parse();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
