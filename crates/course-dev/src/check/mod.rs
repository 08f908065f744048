//! `course-dev check`: the course's lint of itself, as rustlings' `dev check` is of its own. In a
//! checkout of the course, driven by exercises/info.toml (each entry's `[exercises.dev_check]`
//! holds what the rest of the entry cannot say), it proves that every untouched exercise fails
//! `course check N` saying what to do next, and that every solution, run for real, passes it.
//!
//! Order: the build ([`Lint::build`]); the untouched exercises ([`untouched`]); the solutions
//! ([`solved`]); the programs that ask in a terminal ([`terminal`]). Each check is one line of
//! the [`tally`], and each runs `course` on a temporary course root ([`root`]) whose cargo is a
//! stand-in that works in this checkout ([`shim`]).

mod pty;
mod quiz_screen;
mod root;
mod server;
pub mod shim;
mod solved;
mod step;
mod tally;
mod terminal;
mod untouched;

use crate::Course;
use anyhow::{bail, Context, Result};
use course_model::learner_id::{check_learner_id, LEARNER_ID_ENV};
use course_model::manifest::ExerciseInfo;
use root::{Scratch, Source};
use shim::Packages;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;
use tally::Tally;

/// The workspace build: long the first time, a few seconds after scripts/test.sh's own.
const BUILD_LIMIT: Duration = Duration::from_secs(3 * 60 * 60);
/// `course check N` (with its exercise's tests) and a solution's run at small sizes.
const STEP_LIMIT: Duration = Duration::from_secs(30 * 60);
/// A program that only prints: `--help`, the quiz without a terminal.
const QUICK_LIMIT: Duration = Duration::from_secs(2 * 60);
/// Lines of a failing `course check`'s output shown: its report is longer than a build error.
const CHECK_LINES: usize = 60;

/// `course`'s setting for the features it builds exercises with (crates/course/src/cargo.rs).
const FEATURES_ENV: &str = "COURSE_FEATURES";

/// The learner the roots are checked as, unless COURSE_LEARNER_ID names another.
const LEARNER: &str = "dev-check";

pub fn check(course: &Course, only: &[u32], keep: bool) -> Result<ExitCode> {
    let exercises = select(course, only)?;
    let mut lint = Lint::new(course, exercises, keep)?;
    if lint.build() {
        untouched::check(&mut lint);
        solved::check(&mut lint);
        terminal::check(&mut lint);
    }
    if keep {
        lint.tally.note(&format!(
            "kept: the course roots and logs in {}",
            lint.scratch.dir.display()
        ));
    }
    Ok(lint.tally.finish())
}

/// The exercises `--only` names, in the manifest's order (a solution may read an earlier one's
/// results); all of them without it.
fn select<'a>(course: &'a Course, only: &[u32]) -> Result<Vec<&'a ExerciseInfo>> {
    if only.is_empty() {
        return Ok(course.manifest.exercises.iter().collect());
    }
    let mut chosen = only
        .iter()
        .map(|&n| course.exercise(n))
        .collect::<Result<Vec<_>>>()?;
    chosen.sort_by_key(|e| e.number);
    chosen.dedup_by_key(|e| e.number);
    Ok(chosen)
}

/// One dev check's state: where everything is, and the score so far.
pub struct Lint<'a> {
    /// The checkout: its manifest, exercises, solutions and workspace.
    course: &'a Course,
    exercises: Vec<&'a ExerciseInfo>,
    /// The `course` binary of the dev build, beside this one: the program every check runs.
    course_exe: PathBuf,
    /// The dev profile's binaries: exercise-N, solution-N, gpt2, beside this one.
    bin: PathBuf,
    cargo: OsString,
    scratch: Scratch,
    /// The link named `cargo` to this binary, `course-dev` ([`shim`]).
    shim: PathBuf,
    learner: String,
    tally: Tally<std::io::Stdout>,
}

impl<'a> Lint<'a> {
    fn new(course: &'a Course, exercises: Vec<&'a ExerciseInfo>, keep: bool) -> Result<Lint<'a>> {
        let checkout = &course.root;
        for needed in ["Cargo.toml", "solutions"] {
            if !checkout.join(needed).exists() {
                bail!(
                    "{} has no {needed}: `course-dev check` lints the course's own repository (its workspace and solutions), \
                     not a learner's copy; run it in a checkout of the course",
                    checkout.display()
                );
            }
        }
        // Read before the build, which may replace the file: the stand-in's target.
        let dev_exe =
            std::env::current_exe().context("cannot tell where this course-dev binary is")?;
        let bin = dev_exe.parent().map(Path::to_path_buf).unwrap_or_default();
        check_beside_the_build(checkout, &bin)?;
        let course_exe = bin.join(format!("course{}", std::env::consts::EXE_SUFFIX));
        let learner = match std::env::var(LEARNER_ID_ENV) {
            Ok(id) if !id.trim().is_empty() => {
                check_learner_id(&id).map_err(|e| anyhow::anyhow!("{LEARNER_ID_ENV}={id}: {e}"))?
            }
            _ => LEARNER.to_string(),
        };
        let scratch = Scratch::new(keep)?;
        let shim = scratch.path("bin").join(shim::NAME);
        std::fs::create_dir_all(scratch.path("bin"))
            .with_context(|| format!("cannot create {}", scratch.path("bin").display()))?;
        std::fs::create_dir_all(scratch.path("logs"))
            .with_context(|| format!("cannot create {}", scratch.path("logs").display()))?;
        root::link(&dev_exe, &shim)?;
        // Under `cargo run`, CARGO names the cargo in use; otherwise it is the one on PATH.
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        Ok(Lint {
            course,
            exercises,
            course_exe,
            bin,
            cargo,
            scratch,
            shim,
            learner,
            tally: Tally::new(std::io::stdout()),
        })
    }

    fn checkout(&self) -> &Path {
        &self.course.root
    }

    /// The workspace build every later step uses, and cargo-nextest for the exercises with
    /// tests; false when either is missing (nothing else can be checked then).
    fn build(&mut self) -> bool {
        let what = "build: the workspace, course, gpt2 and every exercise and solution (cargo build --workspace --all-targets, dev profile)";
        let mut build = Command::new(&self.cargo);
        build
            .current_dir(self.checkout())
            .args(["build", "--workspace", "--all-targets"]);
        let outcome = step::run(&mut build, &self.log("build"), BUILD_LIMIT)
            .map_err(|e| format!("{e:#}"))
            .and_then(|ran| {
                if ran.succeeded() {
                    Ok(())
                } else {
                    Err(format!(
                        "{}; its output ends:\n{}",
                        ran.ending(BUILD_LIMIT),
                        tally::excerpt(&ran.text, tally::SHOWN_LINES)
                    ))
                }
            });
        let outcome = outcome.and_then(|()| self.nextest());
        let ok = outcome.is_ok();
        self.tally.record(what, outcome);
        ok
    }

    /// `course check N` tests an exercise with cargo-nextest ([`shim`]).
    fn nextest(&self) -> Result<(), String> {
        if !self.exercises.iter().any(|e| e.test) {
            return Ok(());
        }
        let mut version = Command::new(&self.cargo);
        version
            .current_dir(self.checkout())
            .args(["nextest", "--version"]);
        match step::run(&mut version, &self.log("nextest"), QUICK_LIMIT) {
            Ok(ran) if ran.succeeded() => Ok(()),
            _ => Err("cargo-nextest is not installed, and `course check` runs the exercises' tests with it here: \
                      `cargo install --locked cargo-nextest` (scripts/test.sh installs it)"
                .to_string()),
        }
    }

    /// A log file of the scratch folder.
    fn log(&self, name: &str) -> PathBuf {
        self.scratch.path("logs").join(format!("{name}.log"))
    }

    /// A new course root `name` for `exercises` from `source`, checked as `learner`.
    fn root(
        &self,
        name: &str,
        source: Source,
        exercises: &[&ExerciseInfo],
        learner: &str,
    ) -> Result<PathBuf> {
        let dir = self.scratch.path(name);
        root::make(self.checkout(), &dir, exercises, source, learner, |from| {
            root::committable_files(self.checkout(), from)
        })?;
        Ok(dir)
    }

    /// `course --root ROOT` whose cargo is the stand-in for the packages `packages` names.
    fn course_command(&self, root: &Path, packages: Packages) -> Command {
        let mut command = Command::new(&self.course_exe);
        command
            .arg("--root")
            .arg(root)
            .env("CARGO", &self.shim)
            .env(shim::CHECKOUT_ENV, self.checkout())
            .env(shim::PACKAGES_ENV, packages.env_value())
            .env(shim::REAL_CARGO_ENV, &self.cargo)
            .env("NO_COLOR", "1")
            // The root's learner.toml says who is checked.
            .env_remove(LEARNER_ID_ENV)
            // The stand-in builds for the CPU: a developer's cuda setting is not this check's.
            .env_remove(FEATURES_ENV);
        command
    }

    /// `course --root ROOT check N`, its output logged as `log`.
    fn course_check(
        &self,
        root: &Path,
        packages: Packages,
        n: u32,
        log: &str,
    ) -> Result<step::Transcript> {
        let mut command = self.course_command(root, packages);
        command.arg("check").arg(n.to_string());
        step::run(&mut command, &self.log(log), STEP_LIMIT)
    }

    /// An exercise's or solution's binary of the dev build.
    fn program(&self, package: &str) -> PathBuf {
        self.bin
            .join(format!("{package}{}", std::env::consts::EXE_SUFFIX))
    }
}

/// The binaries the dev check runs are the checkout's dev build (`course`, the exercises, the
/// solutions, gpt2), which cargo puts beside this binary only when it is that build's own.
fn check_beside_the_build(checkout: &Path, bin: &Path) -> Result<()> {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => checkout.join(dir),
        None => checkout.join("target"),
    };
    let expected = target.join("debug");
    let same = match (std::fs::canonicalize(&expected), std::fs::canonicalize(bin)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same {
        bail!(
            "`course-dev check` runs course, the exercises, solutions and gpt2 of the checkout's dev build, beside the \
             course-dev binary in {}; this one is in {}. Build the workspace (`cargo build --workspace --all-targets`) and \
             run {} (or `cargo run -p course-dev -- check`)",
            expected.display(),
            bin.display(),
            expected.join("course-dev").display()
        );
    }
    Ok(())
}

/// A step's verdict: passed when it succeeded and nothing was wrong, else the failure's reason.
fn verdict(
    problems: &[String],
    ran: &step::Transcript,
    limit: Duration,
    lines: usize,
) -> Result<(), String> {
    if ran.succeeded() && problems.is_empty() {
        Ok(())
    } else {
        Err(failure(problems, ran, limit, lines))
    }
}

/// `course check N` in `root` on the packages `packages` names: it must pass and say so.
fn check_passes(
    lint: &Lint,
    root: &Path,
    packages: Packages,
    n: u32,
    log: &str,
) -> Result<(), String> {
    let ran = lint
        .course_check(root, packages, n, log)
        .map_err(|e| format!("{e:#}"))?;
    let problems = tally::missing(&ran.text, &[format!("Exercise {n} passes")]);
    verdict(&problems, &ran, STEP_LIMIT, CHECK_LINES)
}

/// A failed step's reason: what was wrong, then how it ended and the end of its output.
fn failure(problems: &[String], ran: &step::Transcript, limit: Duration, lines: usize) -> String {
    let mut text = String::new();
    for p in problems {
        text.push_str(p);
        text.push('\n');
    }
    text.push_str(&format!(
        "{}; its output ends:\n{}",
        ran.ending(limit),
        tally::excerpt(&ran.text, lines)
    ));
    text
}
