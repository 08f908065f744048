//! The solutions: each one with `dev_check.args` runs for real (synthetic GPT-2, small sizes;
//! against a `gpt2 serve` started for it where `dev_check.server` says), in the manifest's order
//! so that a later one can read an earlier one's results, and then `course check N` passes on
//! every solution's folder.

use super::root::Source;
use super::server::{self, Server};
use super::shim::{self, Packages};
use super::tally::SHOWN_LINES;
use super::{check_passes, failure, step, Lint, STEP_LIMIT};
use course_model::manifest::ExerciseInfo;
use std::path::Path;
use std::process::Command;

pub fn check(lint: &mut Lint) {
    let exercises = lint.exercises.clone();
    let root = match lint.root("solved", Source::Solutions, &exercises, &lint.learner) {
        Ok(root) => root,
        Err(e) => {
            return lint
                .tally
                .fail("solutions: a course root of their files", &format!("{e:#}"))
        }
    };
    for exercise in &exercises {
        let Some(args) = &exercise.dev_check.args else {
            continue;
        };
        let n = exercise.number;
        // Stopped when dropped, at the end of this exercise's run.
        let server = match &exercise.dev_check.server {
            None => None,
            Some(serve) => {
                match Server::start(&lint.bin, serve, &lint.log(&format!("serve-{n}"))) {
                    Ok(server) => {
                        lint.tally.pass(&format!(
                            "gpt2 serve {} answers at {}",
                            serve.join(" "),
                            server.base_url()
                        ));
                        Some(server)
                    }
                    Err(e) => {
                        lint.tally.fail(
                            &format!(
                                "gpt2 serve {} did not start, so solution {n} cannot be run",
                                serve.join(" ")
                            ),
                            &format!("{e:#}"),
                        );
                        continue;
                    }
                }
            }
        };
        let args = match &server {
            Some(server) => server::with_address(args, server.base_url()),
            None => args.clone(),
        };
        let (what, outcome) = run_solution(lint, &root, exercise, &args);
        lint.tally.record(&what, outcome);
    }
    for exercise in &exercises {
        let n = exercise.number;
        let outcome = passes(lint, &root, n);
        lint.tally
            .record(&format!("solution {n}: course check {n} passes"), outcome);
    }
}

/// The line the run is counted as, and how it went.
fn run_solution(
    lint: &Lint,
    root: &Path,
    exercise: &ExerciseInfo,
    args: &[String],
) -> (String, Result<(), String>) {
    let n = exercise.number;
    let package = match shim::package_in(lint.checkout(), &exercise.solution_dir) {
        Ok(package) => package,
        Err(e) => return (format!("solution {n} runs"), Err(format!("{e:#}"))),
    };
    let mut line = package.clone();
    for arg in args {
        line.push(' ');
        line.push_str(arg);
    }
    let what = format!("{package} runs and writes its results: {line}");
    let mut command = Command::new(lint.program(&package));
    command
        .arg("--exercise-dir")
        .arg(root.join(&exercise.dir))
        .args(args);
    let outcome = match step::run(
        &mut command,
        &lint.log(&format!("solution-{n}")),
        STEP_LIMIT,
    ) {
        Ok(ran) if ran.succeeded() => Ok(()),
        Ok(ran) => Err(failure(&[], &ran, STEP_LIMIT, SHOWN_LINES)),
        Err(e) => Err(format!("{e:#}")),
    };
    (what, outcome)
}

fn passes(lint: &Lint, root: &Path, n: u32) -> Result<(), String> {
    check_passes(lint, root, Packages::Solutions, n, &format!("solved-{n}"))
}
