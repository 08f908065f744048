//! `course gradescope`: the Gradescope autograder (crates/course/instructor-kit/gradescope).
//! Gradescope runs `run_autograder` once per submission; it runs this, which grades
//! `ROOT/submission` as `course grade` grades one student (files only, no learner code run)
//! and writes `ROOT/results/results.json` in Gradescope's format
//! (instructor-kit/gradescope/results.schema.json, written from Gradescope's documentation):
//! one test per graded question with the feedback `course check` prints, and for each question
//! of the graded bank its model answer as a test of its own, shown `after_due_date`.
//!
//! The learner is named by the roster: Gradescope's `users[].email` or `users[].id` (in
//! `ROOT/submission_metadata.json`) to a course id. The per-learner variants are graded by the
//! id the submission's learner.toml holds, as `course grade` does; one that is not the roster's
//! is flagged in the output. No late policy: Gradescope applies its own.

use super::check_json::CheckOutput;
use super::Course;
use anyhow::{bail, Context, Result};
use course_model::exit::Exit;
use grader::cohort::{load_entry, Entry};
use grader::Grader;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Gradescope's layout, below the autograder root (`/autograder`).
pub const SUBMISSION: &str = "submission";
pub const METADATA: &str = "submission_metadata.json";
pub const RESULTS: &str = "results/results.json";

/// `results.json`, the fields of Gradescope's format this kit writes.
#[derive(Debug, Serialize)]
pub struct Results {
    pub execution_time: u64,
    pub output: String,
    pub visibility: &'static str,
    pub stdout_visibility: &'static str,
    pub tests: Vec<Test>,
}

#[derive(Debug, Serialize)]
pub struct Test {
    pub score: f64,
    pub max_score: f64,
    pub status: &'static str,
    pub name: String,
    pub number: String,
    pub output: String,
    pub visibility: &'static str,
}

/// The part of `submission_metadata.json` read here.
#[derive(Debug, Deserialize)]
struct Metadata {
    #[serde(default)]
    users: Vec<User>,
}

#[derive(Debug, Deserialize)]
struct User {
    #[serde(default)]
    email: Option<String>,
    #[serde(default)]
    id: Option<serde_json::Value>,
}

/// One roster row: `course_id,email,gradescope_id` (either of the last two may be empty).
#[derive(Debug, Deserialize)]
struct RosterRow {
    course_id: String,
    #[serde(default)]
    email: String,
    #[serde(default)]
    gradescope_id: String,
}

pub struct Options<'a> {
    pub autograder_root: &'a Path,
    pub roster: Option<&'a Path>,
    /// The exercises graded; empty: all of them.
    pub exercises: &'a [u32],
    pub key: Option<&'a Path>,
}

pub fn gradescope(course: &Course, options: &Options<'_>) -> Result<ExitCode> {
    let started = std::time::Instant::now();
    let root = options.autograder_root;
    let grader = Grader::load(&course.root, options.key)?;
    let exercises: Vec<u32> = if options.exercises.is_empty() {
        course.manifest.exercises.iter().map(|e| e.number).collect()
    } else {
        for &n in options.exercises {
            course.exercise(n)?;
        }
        options.exercises.to_vec()
    };
    let submission_dir = root.join(SUBMISSION);
    if !submission_dir.is_dir() {
        bail!(
            "{}: no submission folder; Gradescope puts the learner's files there (a test sets AUTOGRADER_ROOT to a folder of the same layout)",
            submission_dir.display()
        );
    }
    let mut output = Vec::new();
    let users = read_metadata(&root.join(METADATA))?;
    let roster_id = match options.roster {
        Some(path) => {
            let roster = read_roster(path)?;
            let found = users.iter().find_map(|u| lookup(&roster, u));
            if found.is_none() {
                let who: Vec<String> = users.iter().map(describe).collect();
                eprintln!(
                    "warning: {} is not in the roster {}: graded by the id in its learner.toml",
                    who.join(", "),
                    path.display()
                );
                output.push(format!(
                    "Note for the instructor: {} is not in the course roster; graded by the learner id the submission holds.",
                    who.join(", ")
                ));
            }
            found
        }
        None => None,
    };
    let entry = entry_for(&submission_dir, roster_id.as_deref());
    let mut submission = load_entry(&grader, &entry);
    if let Some(id) = &roster_id {
        if !submission.folders.is_empty() {
            submission.problems.extend(submission.learner_problem(id));
        }
    }
    if let Some(id) = roster_id.as_deref().or(submission.learner_id().as_deref()) {
        output.insert(0, format!("Graded as learner `{id}`."));
    }
    for problem in &submission.problems {
        output.push(format!("Problem: {problem}"));
    }
    let mut tests = Vec::new();
    for &n in &exercises {
        let report = grader.grade_exercise(&submission, n);
        let checked = CheckOutput::graded(&report);
        output.push(format!(
            "Exercise {n} ({}): {}/{}, {}.",
            checked.title,
            course_model::text::show(checked.points),
            course_model::text::show(checked.max_points),
            if checked.passed {
                "passed"
            } else {
                "not passed"
            }
        ));
        for line in checked.problems.iter().chain(&checked.notes) {
            output.push(format!("  {line}"));
        }
        for (i, check) in checked.checks.iter().enumerate() {
            let number = format!("{n}.{}", i + 1);
            tests.push(Test {
                score: check.points,
                max_score: check.max_points,
                status: if check.points + 1e-9 >= check.max_points {
                    "passed"
                } else {
                    "failed"
                },
                name: format!("Exercise {n}: {} ({})", check.name, check.id),
                number: number.clone(),
                output: check.feedback.clone(),
                visibility: "visible",
            });
            if let Some(model) = &check.model_answer {
                // The graded bank's explanation: classmates could copy it before the deadline.
                tests.push(Test {
                    score: 0.0,
                    max_score: 0.0,
                    status: "passed",
                    name: format!("Exercise {n}: {} (model answer)", check.id),
                    number: format!("{number}.m"),
                    output: model.clone(),
                    visibility: "after_due_date",
                });
            }
        }
    }
    let results = Results {
        execution_time: started.elapsed().as_secs(),
        output: output.join("\n"),
        visibility: "visible",
        stdout_visibility: "hidden",
        tests,
    };
    let path = root.join(RESULTS);
    let text = serde_json::to_string_pretty(&results).context("cannot write results.json")?;
    if let Some(folder) = path.parent() {
        std::fs::create_dir_all(folder)
            .with_context(|| format!("cannot create {}", folder.display()))?;
    }
    output::write_file(&path, text.as_bytes(), output::Flush::ToDisk)
        .with_context(|| format!("cannot write {}", path.display()))?;
    let (score, max): (f64, f64) = results
        .tests
        .iter()
        .fold((0.0, 0.0), |(s, m), t| (s + t.score, m + t.max_score));
    println!(
        "{}\nWrote {} ({} tests, {}/{}).",
        results.output,
        path.display(),
        results.tests.len(),
        course_model::text::show(score),
        course_model::text::show(max)
    );
    // Graded: Gradescope records the score whatever it is; 0 says the kit did its job.
    Ok(Exit::Passed.into())
}

/// The entry to grade: the submission folder, or the one archive it holds (a learner who
/// uploaded their zip inside a zip, or a .tar.gz Gradescope does not extract).
fn entry_for(dir: &Path, roster_id: Option<&str>) -> Entry {
    let student = roster_id.unwrap_or("submission").to_string();
    let files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|read| {
            read.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    !p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                })
                .collect()
        })
        .unwrap_or_default();
    if let [only] = files.as_slice() {
        let name = only
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if only.is_file() && grader::archive::archive_kind(&name).is_some() {
            return Entry {
                student,
                file_name: name,
                path: only.clone(),
            };
        }
    }
    Entry {
        student,
        file_name: SUBMISSION.to_string(),
        path: dir.to_path_buf(),
    }
}

fn read_metadata(path: &Path) -> Result<Vec<User>> {
    let text = std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read {}: Gradescope writes it next to the submission",
            path.display()
        )
    })?;
    let metadata: Metadata = serde_json::from_str(&text).with_context(|| {
        format!(
            "{}: not Gradescope's submission metadata (a JSON object with `users`)",
            path.display()
        )
    })?;
    Ok(metadata.users)
}

fn read_roster(path: &Path) -> Result<Vec<RosterRow>> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .from_path(path)
        .with_context(|| format!("cannot read the roster {}", path.display()))?;
    let mut rows = Vec::new();
    for (i, row) in reader.deserialize::<RosterRow>().enumerate() {
        let row = row.with_context(|| {
            format!(
                "{} line {}: a roster row is `course_id,email,gradescope_id` (the header line names them)",
                path.display(),
                i + 2
            )
        })?;
        rows.push(row);
    }
    Ok(rows)
}

fn lookup(roster: &[RosterRow], user: &User) -> Option<String> {
    let email = user.email.as_deref().map(str::trim).unwrap_or("");
    let id = match &user.id {
        Some(serde_json::Value::String(s)) => s.trim().to_string(),
        Some(serde_json::Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    roster
        .iter()
        .find(|r| {
            (!email.is_empty() && r.email.eq_ignore_ascii_case(email))
                || (!id.is_empty() && r.gradescope_id == id)
        })
        .map(|r| r.course_id.clone())
}

fn describe(user: &User) -> String {
    match (&user.email, &user.id) {
        (Some(email), _) => email.clone(),
        (None, Some(id)) => format!("Gradescope user {id}"),
        (None, None) => "a user without email or id".to_string(),
    }
}
