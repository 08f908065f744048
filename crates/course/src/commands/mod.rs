//! One module per command.

mod check;
mod check_json;
mod github_classroom;
pub mod grade;
mod gradescope;
mod hint;
mod id;
mod list;
mod reset;
mod run;
mod solution;
mod watch;

use crate::cargo::Build;
use crate::cli::{Cli, Command};
use anyhow::Result;
// The course, opened (its root and manifest): one definition, course-dev's too.
pub(crate) use course_model::course::Course;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    // Every command but `bench` reads the course: exercises/info.toml, found from the current
    // folder or --root. The load client measures any server and needs no course copy.
    let root = cli.root.as_deref();
    let open = || -> Result<Course> { Course::open(crate::root::find(root)?) };
    match cli.command {
        Command::Bench(args) => bench::cli::run(*args),
        Command::List => list::list(&open()?),
        Command::Run { n, build, args } => run::run(
            &open()?,
            n,
            &Build::from_flag(build.features.as_deref()),
            &args,
        ),
        Command::Check { n, build, format } => check::check(
            &open()?,
            n,
            &Build::from_flag(build.features.as_deref()),
            format,
        ),
        Command::Hint { n } => hint::hint(&open()?, n),
        Command::Watch { exercise, build } => watch::watch(
            &open()?,
            exercise,
            &Build::from_flag(build.features.as_deref()),
        ),
        Command::Reset { n, yes } => reset::reset(&open()?, n, yes),
        Command::Solution { n, force } => solution::solution(&open()?, n, force),
        Command::Id { name } => id::id(&open()?, name.as_deref()),
        Command::Gradescope {
            autograder_root,
            roster,
            exercises,
            key,
        } => {
            let autograder_root = autograder_root
                .or_else(|| std::env::var_os("AUTOGRADER_ROOT").map(PathBuf::from))
                .unwrap_or_else(|| PathBuf::from("/autograder"));
            gradescope::gradescope(
                &open()?,
                &gradescope::Options {
                    autograder_root: &autograder_root,
                    roster: roster.as_deref(),
                    exercises: &exercises,
                    key: key.as_deref(),
                },
            )
        }
        Command::GithubClassroom => {
            let course = open()?;
            let grader = grader::Grader::load(&course.root, None)?;
            print!("{}", github_classroom::workflow(&course.manifest, &grader)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Grade {
            cohort_dir,
            key,
            overrides,
            out,
            threads,
            run_tests,
            test_timeout,
            test_memory,
            test_build_timeout,
            test_dir,
            gradebook,
        } => {
            let tests = run_tests.then_some(grade::RunTests {
                limits: crate::sandbox::Limits {
                    test_timeout,
                    build_timeout: test_build_timeout,
                    memory_bytes: test_memory,
                },
                dir: test_dir,
            });
            grade::grade(
                &open()?,
                &cohort_dir,
                key.as_deref(),
                overrides.as_deref(),
                &out,
                threads,
                tests,
                &gradebook,
            )
        }
    }
}

/// Show a path relative to the course root when it lies inside.
pub fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}
