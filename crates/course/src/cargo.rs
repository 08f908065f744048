//! Running cargo for an exercise, always in release: the tests and `course run` share one
//! profile, so dependencies are compiled once.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::{Command, ExitStatus};

fn cargo() -> Command {
    // Under `cargo run`/`cargo test` CARGO names the cargo in use; otherwise take it from PATH.
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `cargo SUBCOMMAND --release -p PACKAGE [-- args]`, in the course root, output to the terminal.
pub fn run(root: &Path, subcommand: &str, package: &str, args: &[String]) -> Result<ExitStatus> {
    let mut command = cargo();
    command.current_dir(root).arg(subcommand).arg("--release").arg("-p").arg(package);
    if !args.is_empty() {
        command.arg("--").args(args);
    }
    command.status().with_context(|| format!("cannot start `cargo {subcommand}`: is cargo installed and on PATH?"))
}
