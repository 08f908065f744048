//! What every exercise's program shares: the folder it works in and how its `main` ends.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// An exercise's `main`: parses its arguments `A` with `--exercise-dir` added, runs `run` with
/// them and the exercise's folder, and exits by the course's rule (`crate::exit`): 0 when it
/// ran; 1 for a panic in the learner's own code (`manifest_dir/src`: a `todo!()` left) or a
/// [`crate::exit::NotDone`] error; 2 for any other error (printed as every exercise prints it,
/// `error: ` with each cause after a colon) or panic, and for a bad argument. The folder is the
/// one given, else `manifest_dir`: the exercise's own, `env!("CARGO_MANIFEST_DIR")`, which only
/// the exercise's crate can expand.
pub fn main<A: clap::Parser>(
    manifest_dir: &str,
    run: impl FnOnce(A, &Path) -> anyhow::Result<()>,
) -> ExitCode {
    // A table piped into `head` ends quietly, status 0, when the reader leaves.
    output::pipe::end_quietly_when_closed();
    // clap exits 0 after --help and 2 on a bad argument: the rule's codes.
    let (args, dir) = parse::<A>(std::env::args_os(), manifest_dir).unwrap_or_else(|e| e.exit());
    let src = Path::new(manifest_dir).join("src");
    crate::exit::guard(Some(&src), || {
        run(args, &dir).map(|()| crate::exit::Exit::Passed)
    })
}

/// `A` and the exercise's folder from the command line `argv`.
fn parse<A: clap::Parser>(
    argv: impl IntoIterator<Item = impl Into<OsString> + Clone>,
    manifest_dir: &str,
) -> Result<(A, PathBuf), clap::Error> {
    let folder = clap::Arg::new(EXERCISE_DIR)
        .long(EXERCISE_DIR)
        .value_name("DIR")
        .value_parser(clap::value_parser!(PathBuf))
        .help(
            "The exercise folder whose answers.toml and results/ this run reads and writes; the course is two \
             folders above it [default: this exercise's folder]",
        );
    let matches = A::command().arg(folder).try_get_matches_from(argv)?;
    let dir = matches
        .get_one::<PathBuf>(EXERCISE_DIR)
        .cloned()
        .unwrap_or_else(|| PathBuf::from(manifest_dir));
    Ok((A::from_arg_matches(&matches)?, dir))
}

/// The flag `course run` and `course check` pass: the folder whose answers.toml and results/ a
/// run reads and writes (the course is two folders above it).
const EXERCISE_DIR: &str = "exercise-dir";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exit::error_line as message;

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
        assert_eq!(
            (args.row_limit, dir),
            (10, PathBuf::from("/course/exercises/exercise-3"))
        );
        let (args, dir) = parse::<Args>(
            ["ex", "--row-limit", "4", "--exercise-dir", "/tmp/copy"],
            "/course/exercises/exercise-3",
        )
        .unwrap();
        assert_eq!((args.row_limit, dir), (4, PathBuf::from("/tmp/copy")));
    }

    #[test]
    fn help_names_the_folder_flag_and_a_wrong_flag_is_refused() {
        let help = parse::<Args>(["ex", "--help"], "/x").unwrap_err();
        assert_eq!(help.kind(), clap::error::ErrorKind::DisplayHelp);
        let text = help.to_string();
        // The program's own description stays at the top.
        assert!(text.starts_with("An exercise's own arguments"), "{text}");
        assert!(
            text.contains("--row-limit") && text.contains("--exercise-dir <DIR>"),
            "{text}"
        );
        let wrong = parse::<Args>(["ex", "--exercise-folder", "/tmp"], "/x").unwrap_err();
        assert_eq!(wrong.kind(), clap::error::ErrorKind::UnknownArgument);
    }

    #[test]
    fn an_error_is_printed_with_its_causes() {
        let e =
            anyhow::anyhow!("results/report.json: no such file").context("cannot read the profile");
        assert_eq!(
            message(&e),
            "error: cannot read the profile: results/report.json: no such file"
        );
    }
}
