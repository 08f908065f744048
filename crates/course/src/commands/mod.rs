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
use anyhow::{Context, Result};
use course_model::manifest::{ExerciseInfo, Manifest, MANIFEST_PATH};
use course_model::progress::{Progress, PROGRESS_FILE};
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

/// The course on disk: its root, manifest and the learner's progress file.
pub struct Course {
    pub root: PathBuf,
    pub manifest: Manifest,
}

impl Course {
    fn open(root: PathBuf) -> Result<Course> {
        let manifest = Manifest::load(&root.join(MANIFEST_PATH))?;
        Ok(Course { root, manifest })
    }

    pub fn exercise(&self, n: u32) -> Result<&ExerciseInfo> {
        self.manifest.exercise(n).with_context(|| {
            format!(
                "there is no exercise {n}: the course has exercises 1 to {} (see `course list`)",
                self.manifest.exercises.len()
            )
        })
    }

    pub fn exercises_dir(&self) -> PathBuf {
        self.root.join("exercises")
    }

    pub fn progress_path(&self) -> PathBuf {
        self.exercises_dir().join(PROGRESS_FILE)
    }

    pub fn progress(&self) -> Result<Progress> {
        Progress::load(&self.progress_path()).map_err(anyhow::Error::msg)
    }

    pub fn save_progress(&self, progress: &Progress) -> Result<()> {
        let path = self.progress_path();
        progress
            .save(&path)
            .with_context(|| format!("cannot save your progress to {}", path.display()))
    }

    /// The first exercise not passed yet (the last one when all have passed).
    pub fn current(&self, progress: &Progress) -> u32 {
        self.manifest
            .exercises
            .iter()
            .find(|e| !progress.exercise(e.number).passed)
            .or(self.manifest.exercises.last())
            .map_or(1, |e| e.number)
    }

    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}

/// Show a path relative to the course root when it lies inside.
pub fn shown(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}
