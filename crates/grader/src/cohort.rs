//! Workshop grading: one folder, `.zip` or `.tar.gz` per student in a cohort folder. Every
//! student is graded whatever the others submitted; each bad submission becomes that student's
//! recorded problem. Writes `gradebook.csv` and `gradebook.json` (atomically) and
//! `feedback/STUDENT.md`.

use crate::archive::{archive_kind, read_archive};
use crate::grade::Grader;
use crate::overrides::Overrides;
use crate::problem::{Location, Problem, ProblemKind};
use crate::question_types::number::show;
use crate::render;
use crate::report::ExerciseReport;
use crate::submission::Submission;
use course_model::atomic::write_atomically;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One entry of the cohort folder.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The student's id: the folder name, or the archive name without its extension.
    pub student: String,
    /// The entry's own file name.
    pub file_name: String,
    pub path: PathBuf,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct StudentResult {
    pub student: String,
    pub file_name: String,
    /// Name of the feedback page in `OUT/feedback/` (unique, safe on every file system).
    pub feedback_file: String,
    /// Problems of the submission as a whole.
    pub problems: Vec<Problem>,
    pub reports: Vec<ExerciseReport>,
    /// The exercise tests re-run by `course grade --run-tests` (empty when they were not).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub test_runs: Vec<TestRun>,
}

/// One exercise's tests, re-run in a sandbox on the learner's own code.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct TestRun {
    pub exercise: u32,
    pub outcome: TestOutcome,
    /// What the instructor reads: the failing tests, the error, what was skipped.
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum TestOutcome {
    Passed {
        tests: usize,
    },
    Failed {
        failed: usize,
        passed: usize,
    },
    /// The time limit ran out; the whole process group was killed.
    TimedOut {
        seconds: f64,
    },
    /// An allocation failed at the memory limit.
    OutOfMemory {
        limit_bytes: u64,
    },
    /// A test failed trying to reach the network, which the sandbox refuses.
    NetworkRefused,
    /// The learner's code did not compile against the course's own package manifest.
    BuildFailed,
    /// Not run (no sources, a sandbox that could not start): the detail says why.
    NotRun,
}

impl TestRun {
    /// The gradebook's flag for a run that did not pass, e.g. `tests-timeout:2`.
    pub fn flag(&self) -> Option<String> {
        let name = match self.outcome {
            TestOutcome::Passed { .. } => return None,
            TestOutcome::Failed { .. } => "tests-failed",
            TestOutcome::TimedOut { .. } => "tests-timeout",
            TestOutcome::OutOfMemory { .. } => "tests-out-of-memory",
            TestOutcome::NetworkRefused => "tests-network",
            TestOutcome::BuildFailed => "tests-build-failed",
            TestOutcome::NotRun => "tests-not-run",
        };
        Some(format!("{name}:{}", self.exercise))
    }

    /// Short words for the gradebook's `tests` column and the feedback.
    pub fn summary(&self) -> String {
        match &self.outcome {
            TestOutcome::Passed { tests } => format!(
                "passed ({tests} test{})",
                if *tests == 1 { "" } else { "s" }
            ),
            TestOutcome::Failed { failed, passed } => format!("failed {failed} ({passed} passed)"),
            TestOutcome::TimedOut { seconds } => {
                format!("timed out after {}", show_seconds(*seconds))
            }
            TestOutcome::OutOfMemory { limit_bytes } => format!(
                "out of memory (limit {})",
                crate::submission::human_bytes(*limit_bytes)
            ),
            TestOutcome::NetworkRefused => "network refused".to_string(),
            TestOutcome::BuildFailed => "does not build".to_string(),
            TestOutcome::NotRun => "not run".to_string(),
        }
    }
}

fn show_seconds(seconds: f64) -> String {
    format!("{} s", show((seconds * 10.0).round() / 10.0))
}

impl StudentResult {
    /// Mean of the exercise percentages: every exercise weighs the same.
    pub fn total_percent(&self) -> f64 {
        if self.reports.is_empty() {
            return 0.0;
        }
        let sum: f64 = self.reports.iter().map(|r| r.percent()).sum();
        (sum / self.reports.len() as f64 * 100.0).round() / 100.0
    }

    pub fn passed(&self) -> usize {
        self.reports.iter().filter(|r| r.passed).count()
    }

    /// Gradebook flags: problem kinds (with the exercise number where there is one),
    /// review, overrides and early solutions.
    pub fn flags(&self) -> Vec<String> {
        let mut flags = BTreeSet::new();
        for p in &self.problems {
            flags.insert(p.kind.flag().to_string());
        }
        for r in &self.reports {
            for p in &r.problems {
                flags.insert(format!("{}:{}", p.kind.flag(), r.exercise));
            }
            if r.needs_review() {
                flags.insert(format!("needs-review:{}", r.exercise));
            }
            if r.questions.iter().any(|q| q.overridden.is_some()) {
                flags.insert(format!("override:{}", r.exercise));
            }
            if r.solution_viewed_early {
                flags.insert(format!("solution-early:{}", r.exercise));
            }
        }
        flags.extend(self.test_runs.iter().filter_map(TestRun::flag));
        flags.into_iter().collect()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Cohort {
    pub students: Vec<StudentResult>,
    /// Entries skipped and overrides that matched nothing: said once, for the instructor.
    pub warnings: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CohortError(pub String);

/// List the cohort folder's submissions. Hidden entries and `skip` (the output folder, when it
/// lies inside) are left out; other files are reported in `warnings`.
pub fn discover(
    cohort_dir: &Path,
    skip: Option<&Path>,
    warnings: &mut Vec<String>,
) -> Result<Vec<Entry>, CohortError> {
    let read = std::fs::read_dir(cohort_dir).map_err(|e| {
        CohortError(format!(
            "{}: cannot read the cohort folder: {e}",
            cohort_dir.display()
        ))
    })?;
    let skip = skip.and_then(|s| s.canonicalize().ok());
    let mut entries = Vec::new();
    for item in read.flatten() {
        let file_name = item.file_name().to_string_lossy().into_owned();
        if file_name.starts_with('.') {
            continue;
        }
        let path = item.path();
        if skip
            .as_ref()
            .is_some_and(|s| path.canonicalize().ok().as_ref() == Some(s))
        {
            continue;
        }
        let Ok(file_type) = std::fs::symlink_metadata(&path).map(|m| m.file_type()) else {
            continue;
        };
        let student = if file_type.is_dir() {
            file_name.clone()
        } else if file_type.is_file() && archive_kind(&file_name).is_some() {
            strip_archive_extension(&file_name)
        } else if file_type.is_symlink() {
            warnings.push(format!(
                "skipped {file_name}: a link (links are not followed; copy the submission in)"
            ));
            continue;
        } else {
            warnings.push(format!(
                "skipped {file_name}: not a folder, .zip or .tar.gz"
            ));
            continue;
        };
        entries.push(Entry {
            student,
            file_name,
            path,
        });
    }
    entries.sort_by(|a, b| a.file_name.cmp(&b.file_name));
    Ok(entries)
}

fn strip_archive_extension(name: &str) -> String {
    let lower = name.to_lowercase();
    for ext in [".tar.gz", ".tgz", ".zip"] {
        if lower.ends_with(ext) {
            return name[..name.len() - ext.len()].to_string();
        }
    }
    name.to_string()
}

/// A name safe as a file name on every system (letters of any script are kept).
pub fn safe_file_stem(student: &str) -> String {
    let stem: String = student
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let stem = stem.trim_start_matches('.').to_string();
    if stem.is_empty() {
        "student".to_string()
    } else {
        stem
    }
}

/// Give every entry a distinct id. Two entries with the same name (e.g. `alice/` and
/// `alice.zip`, or names equal but for case) are both graded under their file names and both
/// flagged: the instructor must decide which counts.
fn disambiguate(entries: &mut [Entry]) -> BTreeMap<String, Problem> {
    let mut by_key: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, e) in entries.iter().enumerate() {
        by_key.entry(e.student.to_lowercase()).or_default().push(i);
    }
    let mut problems = BTreeMap::new();
    for indices in by_key.values().filter(|v| v.len() > 1) {
        let names: Vec<String> = indices
            .iter()
            .map(|&i| entries[i].file_name.clone())
            .collect();
        for &i in indices {
            let original = entries[i].student.clone();
            entries[i].student = entries[i].file_name.clone();
            problems.insert(
                entries[i].student.clone(),
                Problem::new(
                    ProblemKind::DuplicateName,
                    Some(Location::file(entries[i].file_name.clone())),
                    format!("{} submissions are named {original}: {}; each is graded under its file name", names.len(), names.join(", ")),
                    "keep one submission per student",
                ),
            );
        }
    }
    problems
}

/// Grade one entry. Never panics on its content; never runs its code.
pub fn grade_entry(grader: &Grader, entry: &Entry) -> StudentResult {
    let mut submission = load_entry(grader, entry);
    // A missing id, or one that is not the submission's name, is flagged (not refused): the
    // variants are graded by the stored id, and the instructor decides.
    if !submission.folders.is_empty() {
        submission
            .problems
            .extend(submission.learner_problem(&entry.file_name));
    }
    let reports = grader.grade_all(&submission);
    StudentResult {
        student: entry.student.clone(),
        file_name: entry.file_name.clone(),
        feedback_file: format!("{}.md", safe_file_stem(&entry.student)),
        problems: submission.problems,
        reports,
        test_runs: Vec::new(),
    }
}

/// Read an entry as grading reads it (never runs its code).
pub fn load_entry(grader: &Grader, entry: &Entry) -> Submission {
    match archive_kind(&entry.file_name) {
        Some(kind) if entry.path.is_file() => read_archive(
            &entry.path,
            kind,
            &entry.file_name,
            grader.wanted(),
            &grader.limits,
        ),
        _ => Submission::from_student_dir(
            &entry.path,
            &entry.file_name,
            grader.wanted(),
            &grader.limits,
        ),
    }
}

/// Grade every entry on `threads` threads, in the entries' order.
pub fn grade_entries(grader: &Grader, entries: &[Entry], threads: usize) -> Vec<StudentResult> {
    grade_entries_with(entries, threads, &|entry| grade_entry(grader, entry))
}

/// [`grade_entries`] with the grading function given: each entry is graded on its own rayon
/// task, isolated by `catch_unwind`, so a panic (a bug in the grader, never a submission) is
/// recorded for that entry alone, with its message, and every other entry keeps its grade.
pub fn grade_entries_with(
    entries: &[Entry],
    threads: usize,
    grade: &(dyn Fn(&Entry) -> StudentResult + Sync),
) -> Vec<StudentResult> {
    use rayon::prelude::*;
    let isolated = |entry: &Entry| {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| grade(entry)))
            .unwrap_or_else(|payload| grader_failed(entry, &panic_message(payload.as_ref())))
    };
    let threads = threads.clamp(1, entries.len().max(1));
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(|| entries.par_iter().map(isolated).collect()),
        // No thread could be started: grade here, one after another.
        Err(_) => entries.iter().map(isolated).collect(),
    }
}

/// The text a panic was raised with (`panic!("...")`, `expect("...")`, an index out of bounds).
fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

/// The entry of a student the grader failed on: recorded, never lost.
pub fn grader_failed(entry: &Entry, message: &str) -> StudentResult {
    StudentResult {
        student: entry.student.clone(),
        file_name: entry.file_name.clone(),
        feedback_file: format!("{}.md", safe_file_stem(&entry.student)),
        problems: vec![Problem::new(
            ProblemKind::Archive,
            Some(Location::file(entry.file_name.clone())),
            format!("grader failed: {message}"),
            "report this to the course authors; grade it by hand",
        )],
        reports: Vec::new(),
        test_runs: Vec::new(),
    }
}

pub struct CohortOptions<'a> {
    pub out_dir: &'a Path,
    pub overrides: &'a Overrides,
    pub threads: usize,
}

/// Grade a cohort folder and write the gradebook and the feedback files.
pub fn grade_cohort(
    grader: &Grader,
    cohort_dir: &Path,
    options: &CohortOptions<'_>,
) -> Result<Cohort, CohortError> {
    grade_cohort_with(grader, cohort_dir, options, &mut |_, _| Vec::new())
}

/// [`grade_cohort`], with `run_tests` called once per student, one after another, after the
/// grading and before the gradebook is written: its runs become the student's `tests` column.
pub fn grade_cohort_with(
    grader: &Grader,
    cohort_dir: &Path,
    options: &CohortOptions<'_>,
    run_tests: &mut dyn FnMut(&Entry, &StudentResult) -> Vec<TestRun>,
) -> Result<Cohort, CohortError> {
    grade_cohort_using(
        grader,
        cohort_dir,
        options,
        &|entry| grade_entry(grader, entry),
        run_tests,
    )
}

/// [`grade_cohort_with`] with the function that grades one entry given (tests give one that
/// fails on purpose, to show that a failure stays with its entry).
pub fn grade_cohort_using(
    grader: &Grader,
    cohort_dir: &Path,
    options: &CohortOptions<'_>,
    grade: &(dyn Fn(&Entry) -> StudentResult + Sync),
    run_tests: &mut dyn FnMut(&Entry, &StudentResult) -> Vec<TestRun>,
) -> Result<Cohort, CohortError> {
    let mut cohort = Cohort::default();
    let mut entries = discover(cohort_dir, Some(options.out_dir), &mut cohort.warnings)?;
    let duplicates = disambiguate(&mut entries);
    cohort.students = grade_entries_with(&entries, options.threads, grade);
    for (student, entry) in cohort.students.iter_mut().zip(&entries) {
        student.test_runs = run_tests(entry, student);
    }
    // Distinct names can still share a file name (case, or replaced characters): number them.
    let mut taken = BTreeSet::new();
    for student in &mut cohort.students {
        let stem = safe_file_stem(&student.student);
        let mut candidate = format!("{stem}.md");
        let mut n = 2;
        while !taken.insert(candidate.to_lowercase()) {
            candidate = format!("{stem}-{n}.md");
            n += 1;
        }
        student.feedback_file = candidate;
    }
    for student in &mut cohort.students {
        if let Some(problem) = duplicates.get(&student.student) {
            student.problems.insert(0, problem.clone());
        }
        for o in options
            .overrides
            .apply(&student.student, &mut student.reports)
        {
            cohort.warnings.push(format!(
                "override for {} exercise {} question {} matches no graded question",
                o.student, o.exercise, o.question
            ));
        }
    }
    let known: BTreeSet<&str> = cohort.students.iter().map(|s| s.student.as_str()).collect();
    for o in &options.overrides.entries {
        if !known.contains(o.student.as_str()) {
            cohort.warnings.push(format!(
                "override for {} matches no student in the cohort",
                o.student
            ));
        }
    }
    write_outputs(grader, &cohort, options.out_dir)?;
    Ok(cohort)
}

fn write_outputs(grader: &Grader, cohort: &Cohort, out_dir: &Path) -> Result<(), CohortError> {
    let csv = gradebook_csv(grader, cohort)?;
    let path = out_dir.join("gradebook.csv");
    write_atomically(&path, csv.as_bytes()).map_err(|e| {
        CohortError(format!(
            "{}: cannot write the gradebook: {e}",
            path.display()
        ))
    })?;
    // The same results for tools (a dashboard, a learning platform's import).
    let json = serde_json::to_string_pretty(&cohort.students)
        .map_err(|e| CohortError(format!("cannot write the gradebook: {e}")))?;
    let path = out_dir.join("gradebook.json");
    write_atomically(&path, json.as_bytes()).map_err(|e| {
        CohortError(format!(
            "{}: cannot write the gradebook: {e}",
            path.display()
        ))
    })?;
    let feedback_dir = out_dir.join("feedback");
    for student in &cohort.students {
        let path = feedback_dir.join(&student.feedback_file);
        course_model::atomic::write_replacing_quickly(&path, feedback_markdown(student).as_bytes())
            .map_err(|e| {
                CohortError(format!(
                    "{}: cannot write the feedback: {e}",
                    path.display()
                ))
            })?;
    }
    Ok(())
}

/// `student,exercise-1..N,total,passed,flags[,tests]`: exercise scores and the total in percent;
/// `tests` (after `--run-tests`) is what each exercise's re-run tests did.
pub fn gradebook_csv(grader: &Grader, cohort: &Cohort) -> Result<String, CohortError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["student".to_string()];
    header.extend(grader.manifest.exercises.iter().map(|e| e.folder_name()));
    header.extend([
        "total".to_string(),
        "passed".to_string(),
        "flags".to_string(),
    ]);
    // The column is there only when tests were re-run, so gradebooks without stay as they were.
    let with_tests = cohort.students.iter().any(|s| !s.test_runs.is_empty());
    if with_tests {
        header.push("tests".to_string());
    }
    let to_err = |e: csv::Error| CohortError(format!("cannot write the gradebook: {e}"));
    writer.write_record(&header).map_err(to_err)?;
    let mut students: Vec<&StudentResult> = cohort.students.iter().collect();
    students.sort_by(|a, b| a.student.cmp(&b.student));
    for s in students {
        let mut row = vec![s.student.clone()];
        for exercise in &grader.manifest.exercises {
            let score = s
                .reports
                .iter()
                .find(|r| r.exercise == exercise.number)
                .map_or(0.0, |r| r.percent());
            row.push(show(score));
        }
        row.push(show(s.total_percent()));
        row.push(s.passed().to_string());
        row.push(s.flags().join(" "));
        if with_tests {
            row.push(
                s.test_runs
                    .iter()
                    .map(|t| format!("ex{}: {}", t.exercise, t.summary()))
                    .collect::<Vec<_>>()
                    .join("; "),
            );
        }
        writer.write_record(&row).map_err(to_err)?;
    }
    let bytes = writer
        .into_inner()
        .map_err(|e| CohortError(format!("cannot write the gradebook: {e}")))?;
    String::from_utf8(bytes).map_err(|e| CohortError(format!("cannot write the gradebook: {e}")))
}

/// One student's feedback page.
pub fn feedback_markdown(student: &StudentResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "# Feedback for {}\n", student.student);
    let _ = writeln!(
        out,
        "Total: {}% ({} of {} exercises passed). Submitted as `{}`.\n",
        show(student.total_percent()),
        student.passed(),
        student.reports.len(),
        student.file_name
    );
    if !student.problems.is_empty() {
        let _ = writeln!(out, "## Problems with the submission\n");
        for p in &student.problems {
            let _ = writeln!(out, "- {p}");
        }
        let _ = writeln!(out);
    }
    if !student.test_runs.is_empty() {
        let _ = writeln!(out, "## Your exercise tests, re-run by the instructor\n");
        for t in &student.test_runs {
            let _ = writeln!(out, "- Exercise {}: {}.", t.exercise, t.summary());
            if !t.detail.trim().is_empty() {
                let _ = writeln!(out, "\n  ```text");
                for line in t.detail.trim_end().lines() {
                    let _ = writeln!(out, "  {}", line.replace("```", "'''"));
                }
                let _ = writeln!(out, "  ```\n");
            }
        }
        let _ = writeln!(out);
    }
    for report in &student.reports {
        out.push_str(&render::markdown(report));
        out.push('\n');
    }
    out
}

/// The table `course grade` prints: one line per student, then the mean per exercise.
pub fn summary_table(grader: &Grader, cohort: &Cohort) -> String {
    let mut out = String::new();
    let width = cohort
        .students
        .iter()
        .map(|s| s.student.chars().count())
        .max()
        .unwrap_or(7)
        .max(7);
    let _ = write!(out, "{:<width$}", "student");
    for e in &grader.manifest.exercises {
        let _ = write!(out, " {:>6}", format!("ex{}", e.number));
    }
    let _ = writeln!(out, " {:>6}  flags", "total");
    let mut students: Vec<&StudentResult> = cohort.students.iter().collect();
    students.sort_by(|a, b| a.student.cmp(&b.student));
    for s in &students {
        let _ = write!(out, "{:<width$}", s.student);
        for e in &grader.manifest.exercises {
            let score = s
                .reports
                .iter()
                .find(|r| r.exercise == e.number)
                .map_or(0.0, |r| r.percent());
            let _ = write!(out, " {:>6}", format!("{score:.0}"));
        }
        let _ = writeln!(
            out,
            " {:>6}  {}",
            format!("{:.0}", s.total_percent()),
            s.flags().join(" ")
        );
    }
    if !students.is_empty() {
        let _ = write!(out, "{:<width$}", "mean");
        for e in &grader.manifest.exercises {
            let mean = students
                .iter()
                .map(|s| {
                    s.reports
                        .iter()
                        .find(|r| r.exercise == e.number)
                        .map_or(0.0, |r| r.percent())
                })
                .sum::<f64>()
                / students.len() as f64;
            let _ = write!(out, " {:>6}", format!("{mean:.0}"));
        }
        let mean_total =
            students.iter().map(|s| s.total_percent()).sum::<f64>() / students.len() as f64;
        let _ = writeln!(out, " {:>6}", format!("{mean_total:.0}"));
    }
    out
}
