//! What every exercise's program shares: the folder it works in and how its `main` ends.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args as _, FromArgMatches as _};

/// `--exercise-dir`, which [`main`] adds to each exercise's arguments: the folder whose
/// answers.toml and results/ a run reads and writes (the course is two folders above it).
#[derive(clap::Args, Debug, Clone, Default)]
struct ExerciseDir {
    /// The exercise folder whose answers.toml and results/ this run reads and writes; the
    /// course is two folders above it [default: this exercise's folder].
    #[arg(long = "exercise-dir", value_name = "DIR")]
    exercise_dir: Option<PathBuf>,
}

/// An exercise's `main`: parses its arguments `A` with `--exercise-dir` added, runs `run` with
/// them and the exercise's folder, and on an error prints the one message every exercise prints
/// (`error: ` with each cause after a colon) and exits with status 1. The folder is the one
/// given, else `manifest_dir`: the exercise's own, `env!("CARGO_MANIFEST_DIR")`, which only the
/// exercise's crate can expand.
pub fn main<A: clap::Parser>(manifest_dir: &str, run: impl FnOnce(A, &Path) -> anyhow::Result<()>) -> ExitCode {
    let (args, dir) = parse::<A>(std::env::args_os(), manifest_dir).unwrap_or_else(|e| e.exit());
    match run(args, &dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{}", message(&e));
            ExitCode::FAILURE
        }
    }
}

/// `A` and the exercise's folder from the command line `argv`.
fn parse<A: clap::Parser>(argv: impl IntoIterator<Item = impl Into<OsString> + Clone>, manifest_dir: &str) -> Result<(A, PathBuf), clap::Error> {
    let matches = ExerciseDir::augment_args(A::command()).try_get_matches_from(argv)?;
    let dir = ExerciseDir::from_arg_matches(&matches)?.exercise_dir.unwrap_or_else(|| PathBuf::from(manifest_dir));
    Ok((A::from_arg_matches(&matches)?, dir))
}

fn message(e: &anyhow::Error) -> String {
    format!("error: {e:#}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exercise's own arguments, as each program declares them.
    #[derive(clap::Parser, Debug)]
    struct Args {
        /// Rows printed.
        #[arg(long, default_value_t = 10)]
        row_limit: usize,
    }

    #[test]
    fn the_folder_defaults_to_the_exercise_s_own() {
        let (args, dir) = parse::<Args>(["ex"], "/course/exercises/exercise-3").unwrap();
        assert_eq!((args.row_limit, dir), (10, PathBuf::from("/course/exercises/exercise-3")));
        let (args, dir) = parse::<Args>(["ex", "--row-limit", "4", "--exercise-dir", "/tmp/copy"], "/course/exercises/exercise-3").unwrap();
        assert_eq!((args.row_limit, dir), (4, PathBuf::from("/tmp/copy")));
    }

    #[test]
    fn help_names_the_folder_flag_and_a_wrong_flag_is_refused() {
        let help = parse::<Args>(["ex", "--help"], "/x").unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        let text = help.to_string();
        assert!(text.contains("--row-limit") && text.contains("--exercise-dir <DIR>"), "{text}");
        let wrong = parse::<Args>(["ex", "--exercise-folder", "/tmp"], "/x").unwrap_err();
        assert_eq!(wrong.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    #[test]
    fn an_error_is_printed_with_its_causes() {
        let e = anyhow::anyhow!("results/report.json: no such file").context("cannot read the profile");
        assert_eq!(message(&e), "error: cannot read the profile: results/report.json: no such file");
    }
}
