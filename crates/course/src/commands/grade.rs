//! `course grade COHORT_DIR`: the workshop gradebook, and with `--run-tests` each learner's
//! exercise tests re-run in a sandbox (crate::sandbox).

use super::Course;
use crate::sandbox::{Limits, Sandbox};
use anyhow::Result;
use grader::cohort::{grade_cohort_with, summary_table, CohortOptions};
use grader::overrides::Overrides;
use grader::Grader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `--run-tests` and its limits.
pub struct RunTests {
    pub limits: Limits,
    /// `--test-dir`; default: the course's target/grade-tests.
    pub dir: Option<PathBuf>,
}

pub fn grade(
    course: &Course,
    cohort_dir: &Path,
    key: Option<&Path>,
    overrides: Option<&Path>,
    out: &Path,
    threads: Option<usize>,
    run_tests: Option<RunTests>,
) -> Result<ExitCode> {
    let grader = Grader::load(&course.root, key)?;
    let default_overrides = out.join("overrides.toml");
    let overrides_path = overrides.unwrap_or(&default_overrides);
    if overrides.is_some() && !overrides_path.is_file() {
        anyhow::bail!("{}: no such overrides file", overrides_path.display());
    }
    let overrides = Overrides::load(overrides_path)?;
    let threads =
        threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let sandbox = match &run_tests {
        Some(tests) => {
            let dir = tests
                .dir
                .clone()
                .unwrap_or_else(|| course.root.join("target/grade-tests"));
            let sandbox = Sandbox::new(&course.root, &dir, tests.limits)?;
            eprintln!(
                "==> --run-tests: this runs the learners' code.\n  {}",
                sandbox.describe()
            );
            Some(sandbox)
        }
        None => None,
    };
    let options = CohortOptions::new(out, &overrides, threads);
    let cohort =
        grade_cohort_with(
            &grader,
            cohort_dir,
            &options,
            &mut |entry, student| match &sandbox {
                Some(sandbox) => sandbox.run_student(&grader, entry, student),
                None => Vec::new(),
            },
        )?;
    print!("{}", summary_table(&grader, &cohort));
    for warning in &cohort.warnings {
        eprintln!("warning: {warning}");
    }
    let with_problems = cohort
        .students
        .iter()
        .filter(|s| !s.flags().is_empty())
        .count();
    println!(
        "\nGraded {} students ({with_problems} with flags). Wrote {} and {} feedback pages in {}.",
        cohort.students.len(),
        out.join("gradebook.csv").display(),
        cohort.students.len(),
        out.join("feedback").display()
    );
    if let Some(sandbox) = &sandbox {
        let runs: usize = cohort.students.iter().map(|s| s.test_runs.len()).sum();
        let passed = cohort
            .students
            .iter()
            .flat_map(|s| &s.test_runs)
            .filter(|t| t.flag().is_none())
            .count();
        println!("Re-ran {runs} exercise test suites: {passed} passed; the others are flagged tests-*:N. {}", sandbox.isolation_line());
    }
    if !overrides.entries.is_empty() {
        println!("Applied overrides from {}.", overrides_path.display());
    }
    Ok(ExitCode::SUCCESS)
}
