//! `course`: the course runner. Learners list, run, check, get hints, watch, reset and see
//! solutions of the exercises; instructors grade a workshop cohort. A thin binary over the
//! `grader` crate; every exercise fact comes from exercises/info.toml.

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
    let cli = cli::Cli::parse();
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
