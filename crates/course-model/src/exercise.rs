//! What every exercise's program shares: the folder it works in and how its `main` ends.

use std::path::PathBuf;
use std::process::ExitCode;

/// `--exercise-dir`, flattened into each exercise's arguments: the folder whose answers.toml
/// and results/ a run reads and writes (the course is two folders above it).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ExerciseDir {
    /// The exercise folder whose answers.toml and results/ this run reads and writes; the
    /// course is two folders above it [default: this exercise's folder].
    #[arg(long = "exercise-dir", value_name = "DIR")]
    exercise_dir: Option<PathBuf>,
}

impl ExerciseDir {
    /// The folder given, else `manifest_dir`: the exercise's own (`env!("CARGO_MANIFEST_DIR")`,
    /// which only the exercise's crate can expand).
    pub fn or(&self, manifest_dir: &str) -> PathBuf {
        self.exercise_dir.clone().unwrap_or_else(|| PathBuf::from(manifest_dir))
    }
}

/// An exercise's `main`: runs it, and on an error prints the one message every exercise prints
/// (`error: ` with each cause after a colon) and exits with status 1.
pub fn main(run: impl FnOnce() -> anyhow::Result<()>) -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", message(&e));
            ExitCode::FAILURE
        }
    }
}

fn message(e: &anyhow::Error) -> String {
    format!("error: {e:#}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Args {
        #[command(flatten)]
        dir: ExerciseDir,
    }

    #[test]
    fn the_folder_defaults_to_the_exercise_s_own() {
        assert_eq!(Args::parse_from(["ex"]).dir.or("/course/exercises/exercise-3"), PathBuf::from("/course/exercises/exercise-3"));
        let given = Args::parse_from(["ex", "--exercise-dir", "/tmp/copy"]);
        assert_eq!(given.dir.or("/course/exercises/exercise-3"), PathBuf::from("/tmp/copy"));
    }

    #[test]
    fn an_error_is_printed_with_its_causes() {
        let e = anyhow::anyhow!("results/report.json: no such file").context("cannot read the profile");
        assert_eq!(message(&e), "error: cannot read the profile: results/report.json: no such file");
    }
}
