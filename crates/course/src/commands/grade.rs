//! `course grade COHORT_DIR`: the workshop gradebook, and with `--run-tests` each learner's
//! exercise tests re-run in a sandbox (crate::sandbox).

use super::Course;
use crate::cli::{ExportTo, GradebookArgs};
use crate::sandbox::{Limits, Sandbox};
use anyhow::{Context, Result};
use grader::cohort::{grade_cohort_with, summary_table, CohortOptions};
use grader::export::{export, Platform, Roster};
use grader::late::LatePolicy;
use grader::overrides::Overrides;
use grader::similarity::Published;
use grader::Grader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// `--run-tests` and its limits.
pub struct RunTests {
    pub limits: Limits,
    /// `--test-dir`; default: the course's target/grade-tests.
    pub dir: Option<PathBuf>,
}

// The newer arguments come together in GradebookArgs.
#[allow(
    clippy::too_many_arguments,
    reason = "the command's arguments, as clap gives them"
)]
pub fn grade(
    course: &Course,
    cohort_dir: &Path,
    key: Option<&Path>,
    overrides: Option<&Path>,
    out: &Path,
    threads: Option<usize>,
    run_tests: Option<RunTests>,
    book: &GradebookArgs,
) -> Result<ExitCode> {
    let grader = Grader::load(&course.root, key)?;
    // Read before any grading: a roster that cannot be read fails now, not after the cohort.
    let roster = book
        .roster
        .as_deref()
        .map(Roster::load)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let lms_times = match &book.times {
        Some(path) => grader::late::load_times(path).map_err(anyhow::Error::msg)?,
        None => Default::default(),
    };
    let published = (!book.no_similarity).then(|| {
        let key_dir = key
            .map(Path::to_path_buf)
            .unwrap_or_else(|| course.root.join("crates/grader/key"));
        Published::load(&course.root, &key_dir)
    });
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
            let sandbox =
                Sandbox::new(&course.root, &dir, tests.limits, book.test_user.as_deref())?;
            sandbox.require_private(cohort_dir, "cohort folder")?;
            eprintln!(
                "==> --run-tests: this runs the learners' code.\n  {}",
                sandbox.describe()
            );
            Some(sandbox)
        }
        None => None,
    };
    let mut options = CohortOptions::new(out, &overrides, threads);
    options.late = book.due.map(|due| LatePolicy {
        due,
        percent_per_day: book.late_penalty,
        cutoff: book.late_cutoff,
    });
    options.lms_times = lms_times;
    options.resume = book.resume;
    options.only = book.only.clone();
    options.published = published.as_ref();
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
    let pages = if book.only.is_some() {
        1
    } else {
        cohort.students.len()
    };
    println!(
        "\nGraded {} students ({with_problems} with flags). Wrote {} and {pages} feedback page{} in {}.",
        cohort.students.len(),
        out.join("gradebook.csv").display(),
        if pages == 1 { "" } else { "s" },
        out.join("feedback").display()
    );
    if let Some(only) = &book.only {
        println!("Regraded {only} only; the other entries are the previous run's.");
    }
    if let Some(policy) = &options.late {
        let late = cohort
            .students
            .iter()
            .filter(|s| s.late.is_some_and(|l| l.days_late > 0))
            .count();
        let from_files = cohort
            .students
            .iter()
            .filter(|s| s.flags().iter().any(|f| f == "time-from-files"))
            .count();
        println!(
            "Due {}: {late} late; {from_files} submission times read from the learners' own files (flagged time-from-files).",
            grader::late::show_time(&policy.due)
        );
    }
    if published.is_some() {
        let flagged = cohort
            .students
            .iter()
            .filter(|s| !s.similarity.is_empty())
            .count();
        println!(
            "Similarity report: {} ({flagged} learners flagged for the instructor to read; no grade is changed).",
            out.join(grader::cohort::SIMILARITY_FILE).display()
        );
    }
    if let (Some(platform), Some(roster)) = (book.export, &roster) {
        let platform = match platform {
            ExportTo::Canvas => Platform::Canvas,
            ExportTo::Moodle => Platform::Moodle,
        };
        let (text, left_out) = export(
            platform,
            &grader.manifest,
            &cohort,
            roster,
            &book.assignment,
        )
        .map_err(anyhow::Error::msg)?;
        let path = out.join(platform.file_name());
        output::write_file(&path, text.as_bytes(), output::Flush::ToDisk)
            .with_context(|| format!("{}: cannot write the export", path.display()))?;
        println!("Wrote {} for the platform's import.", path.display());
        for why in &left_out {
            eprintln!(
                "warning: {why}: left out of {}; add them to the roster",
                path.display()
            );
        }
    }
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
    // The exit-code rule (course_model::exit; `course grade --help`): 1 when a submission has
    // no grade of its own, so that a script notices before publishing the gradebook.
    let ungraded: Vec<&str> = cohort
        .students
        .iter()
        .filter(|s| not_graded(s))
        .map(|s| s.student.as_str())
        .collect();
    if ungraded.is_empty() {
        Ok(course_model::exit::Exit::Passed.into())
    } else {
        eprintln!(
            "==> Not graded: {} (an unreadable archive, no exercises found, or the grader failed): \
             their feedback pages say why; grade them by hand or ask for a new submission.",
            ungraded.join(", ")
        );
        Ok(course_model::exit::Exit::NotPassed.into())
    }
}

/// A submission recorded without grades of its own: the grader failed on it (no reports), its
/// archive could not be read, or no exercise folder was found in it.
fn not_graded(student: &grader::cohort::StudentResult) -> bool {
    use grader::ProblemKind;
    student.reports.is_empty()
        || student.problems.iter().any(|p| match p.kind {
            ProblemKind::Archive => true,
            // "two copies of the exercises" is graded (one of them); none found is not.
            ProblemKind::Layout => p.message.starts_with("no exercise-N folders"),
            _ => false,
        })
}
