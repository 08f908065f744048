//! `course-dev`: the course's authors' lint of the course itself, kept out of the learner's
//! `course` binary. `course-dev check` proves, in a checkout of the course, that every untouched
//! exercise fails `course check N` saying what to do next, and that every solution, run for real,
//! passes it (scripts/test.sh runs it after its build: `cargo run -p course-dev -- check`).
//! It drives the dev build's own `course`, beside this binary, on temporary course roots.

mod check;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand};
// The course, opened (its root and manifest): one definition, `course`'s too.
use course_model::course::Course;
use course_model::manifest::MANIFEST_PATH;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "course-dev",
    version,
    about = "For the course's authors: lint the course itself (course-dev check)",
    after_help = "Exit status: 0 every check passed; 1 a check failed (its output is above); 2 the check \
        could not run (not a checkout of the course, no dev build beside this binary, a bad argument)."
)]
struct Cli {
    /// The checkout of the course (the folder holding exercises/info.toml); default: found from
    /// the current folder.
    #[arg(long, global = true, value_name = "DIR")]
    root: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Prove the course sound: every untouched exercise fails `course check N` saying what to do, every
    /// solution, run for real, passes it.
    #[command(
        long_about = "Prove the course sound, as scripts/test.sh does after its build. In this checkout of the \
        course (it needs solutions/ and the workspace's Cargo.toml), driven by exercises/info.toml:\n\n\
        - the workspace builds (`cargo build --workspace --all-targets`, the dev profile);\n\
        - every exercise has a TODO, its program answers --help, and its untouched copy FAILS `course check N` \
        printing what to do next (the entry's dev_check.untouched_says), and, without a terminal, says how to \
        answer by hand (no_terminal_says);\n\
        - every solution with dev_check.args runs for real (synthetic GPT-2, small sizes; against a `gpt2 serve` \
        it starts where dev_check.server says) and writes its results, and `course check N` PASSES on them;\n\
        - in a pseudo-terminal, `course run N` records the prediction it asks for (dev_check.prediction), and each \
        quiz exercise's questions, answered as its bank says, are written to answers.toml and pass.\n\n\
        Each check runs the dev build's `course` (beside this binary) on a temporary course root holding copies \
        of the exercises' (or the solutions') files as git would commit them; `course check` there builds and \
        tests the real package (exercise-N or solution-N) in this checkout, through a stand-in for cargo (this \
        binary, linked as `cargo`). Prints one `ok` or `FAIL` line per check, the output of each failure, and \
        `N passed, M failed`; exits 1 when any check fails. Needs git, and cargo-nextest for the exercises with \
        tests."
    )]
    Check {
        /// Check these exercises only, e.g. `--only 3,4,5`. Their solutions still run in order, so one that
        /// reads another's results needs it too (4 reads 3's profile: give 3 with 4).
        #[arg(long, value_name = "N,N,...", value_delimiter = ',', num_args = 1)]
        only: Vec<u32>,
        /// Keep the temporary course roots (and the logs in them) and say where they are.
        #[arg(long)]
        keep: bool,
    },
}

fn main() -> ExitCode {
    // Under `course-dev check`, this binary is also the cargo that `course` runs (linked as
    // `cargo`): then it does that cargo's work and nothing else.
    if let Some(code) = check::shim::intercept() {
        return code;
    }
    // clap exits 0 after --help and 2 on a bad argument: the course's exit-code rule.
    let cli = Cli::parse();
    // The course's exit-code rule (course_model::exit): the check's own 0 (all passed) or 1 (one
    // failed); an error, or a panic (a bug in the lint), is 2.
    course_model::exit::guard(None, || match cli.command {
        Command::Check { only, keep } => find_root(cli.root.as_deref())
            .and_then(Course::open)
            .and_then(|course| check::check(&course, &only, keep)),
    })
}

/// The folder holding exercises/info.toml: `explicit`, or the nearest from the current folder up.
fn find_root(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        if dir.join(MANIFEST_PATH).is_file() {
            return Ok(dir.to_path_buf());
        }
        bail!(
            "{} has no {MANIFEST_PATH}: pass --root the folder of a checkout of the course",
            dir.display()
        );
    }
    let start = std::env::current_dir().context("cannot read the current folder")?;
    match start
        .ancestors()
        .find(|dir| dir.join(MANIFEST_PATH).is_file())
    {
        Some(dir) => Ok(dir.to_path_buf()),
        None => bail!(
            "no {MANIFEST_PATH} in {} or any folder above it: run course-dev inside a checkout of the course, or pass --root",
            start.display()
        ),
    }
}
