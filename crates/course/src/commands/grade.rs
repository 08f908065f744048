//! `course grade COHORT_DIR`: the workshop gradebook.

use super::Course;
use anyhow::Result;
use grader::cohort::{grade_cohort, summary_table, CohortOptions};
use grader::overrides::Overrides;
use grader::Grader;
use std::path::Path;
use std::process::ExitCode;

pub fn grade(course: &Course, cohort_dir: &Path, key: Option<&Path>, overrides: Option<&Path>, out: &Path, threads: Option<usize>) -> Result<ExitCode> {
    let grader = Grader::load(&course.root, key)?;
    let default_overrides = out.join("overrides.toml");
    let overrides_path = overrides.unwrap_or(&default_overrides);
    if overrides.is_some() && !overrides_path.is_file() {
        anyhow::bail!("{}: no such overrides file", overrides_path.display());
    }
    let overrides = Overrides::load(overrides_path)?;
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
    let cohort = grade_cohort(&grader, cohort_dir, &CohortOptions { out_dir: out, overrides: &overrides, threads })?;
    print!("{}", summary_table(&grader, &cohort));
    for warning in &cohort.warnings {
        eprintln!("warning: {warning}");
    }
    let with_problems = cohort.students.iter().filter(|s| !s.flags().is_empty()).count();
    println!(
        "\nGraded {} students ({with_problems} with flags). Wrote {} and {} feedback pages in {}.",
        cohort.students.len(),
        out.join("gradebook.csv").display(),
        cohort.students.len(),
        out.join("feedback").display()
    );
    if !overrides.entries.is_empty() {
        println!("Applied overrides from {}.", overrides_path.display());
    }
    Ok(ExitCode::SUCCESS)
}
