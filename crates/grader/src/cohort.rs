//! Workshop grading: one folder, `.zip` or `.tar.gz` per student in a cohort folder. Every
//! student is graded whatever the others submitted; each bad submission becomes that student's
//! recorded problem. Writes `gradebook.csv` and `gradebook.json` (atomically),
//! `feedback/STUDENT.md` and `similarity.md`.
//!
//! Each entry is graded on its own rayon task, isolated by `catch_unwind`: a grader bug costs
//! that entry alone ("grader failed: ..."). As each entry is graded its result is appended to
//! `OUT/gradebook.progress.jsonl`; the gradebook is written only once every entry is graded,
//! so an interrupted run leaves the previous gradebook as it was, and `--resume` grades only the
//! entries the progress file does not hold. `--only STUDENT` regrades one entry into the
//! existing `gradebook.json` and rewrites the gradebook without touching the other entries.

use crate::archive::{archive_kind, read_archive};
use crate::grade::Grader;
use crate::late::{Late, LatePolicy, Submitted, TimeSource};
use crate::overrides::Overrides;
use crate::problem::{Location, Problem, ProblemKind};
use crate::question_types::number::show;
use crate::render;
use crate::report::ExerciseReport;
use crate::similarity::{Published, SimilarityReport};
use crate::submission::Submission;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::io::Write as _;
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

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct StudentResult {
    pub student: String,
    pub file_name: String,
    /// Name of the feedback page in `OUT/feedback/` (unique, safe on every file system).
    pub feedback_file: String,
    /// Problems of the submission as a whole.
    pub problems: Vec<Problem>,
    pub reports: Vec<ExerciseReport>,
    /// The exercise tests re-run by `course grade --run-tests` (empty when they were not).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub test_runs: Vec<TestRun>,
    /// When the submission was made, and where that time was read (late.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitted: Option<Submitted>,
    /// What the late policy did (with `--due`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub late: Option<Late>,
    /// The similarity report's flags for this learner (similarity.rs): never a penalty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub similarity: String,
}

/// One exercise's tests, re-run in a sandbox on the learner's own code.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TestRun {
    pub exercise: u32,
    pub outcome: TestOutcome,
    /// What the instructor reads: the failing tests, the error, what was skipped.
    pub detail: String,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
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
    /// The score the gradebook records: [`Self::total_percent`] after the late policy.
    pub fn final_percent(&self) -> f64 {
        self.late
            .map_or_else(|| self.total_percent(), |l| l.final_score)
    }

    /// One exercise's score in percent (0 when it was not graded).
    pub fn exercise_percent(&self, exercise: u32) -> f64 {
        self.reports
            .iter()
            .find(|r| r.exercise == exercise)
            .map_or(0.0, |r| r.percent())
    }

    /// Mean of the exercise percentages, before any late penalty: every exercise weighs the same.
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
        if let Some(late) = &self.late {
            if late.no_time {
                flags.insert("no-submission-time".to_string());
            } else if late.past_cutoff {
                flags.insert("past-cutoff".to_string());
            } else if late.days_late > 0 {
                flags.insert(format!("late:{}d", late.days_late));
            }
            if self
                .submitted
                .is_some_and(|s| s.source == TimeSource::Files)
            {
                flags.insert("time-from-files".to_string());
            }
        }
        flags.into_iter().collect()
    }
}

#[derive(Debug, Clone, Default)]
pub struct Cohort {
    pub students: Vec<StudentResult>,
    /// Entries skipped and overrides that matched nothing: said once, for the instructor.
    pub warnings: Vec<String>,
    /// The similarity report was made: the gradebook has its column.
    pub compared: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct CohortError(pub String);

/// `COHORT/STUDENT.submitted_at`: when the submission was made, one RFC 3339 time, written by
/// whoever collected the files.
pub const SIDECAR: &str = ".submitted_at";

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
        } else if file_type.is_file() && file_name.ends_with(SIDECAR) {
            // A submission's time, written beside it by whoever collected it (late.rs).
            continue;
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
    // The newest time the files carry: the last resort for the deadline (the learner sets it).
    let submitted = submission.modified.values().max().map(|at| Submitted {
        at: chrono::DateTime::<chrono::Utc>::from(*at),
        source: TimeSource::Files,
    });
    StudentResult {
        student: entry.student.clone(),
        file_name: entry.file_name.clone(),
        feedback_file: format!("{}.md", safe_file_stem(&entry.student)),
        problems: submission.problems,
        reports,
        test_runs: Vec::new(),
        submitted,
        late: None,
        similarity: String::new(),
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
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| grade(entry))).unwrap_or_else(
            |payload| grader_failed(entry, &course_model::exit::panic_message(payload.as_ref())),
        )
    };
    let threads = threads.clamp(1, entries.len().max(1));
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        Ok(pool) => pool.install(|| entries.par_iter().map(isolated).collect()),
        // No thread could be started: grade here, one after another.
        Err(_) => entries.iter().map(isolated).collect(),
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
        submitted: None,
        late: None,
        similarity: String::new(),
    }
}

pub struct CohortOptions<'a> {
    pub out_dir: &'a Path,
    pub overrides: &'a Overrides,
    pub threads: usize,
    /// `--due` and the late policy; None: no deadline.
    pub late: Option<LatePolicy>,
    /// The platform's submission times (`--times FILE`), by student.
    pub lms_times: BTreeMap<String, chrono::DateTime<chrono::Utc>>,
    /// `--resume`: keep the entries the progress file holds, grade the rest.
    pub resume: bool,
    /// `--only STUDENT`: regrade this entry into the existing gradebook.
    pub only: Option<String>,
    /// Text learners can read, left out of the similarity report; None: no report.
    pub published: Option<&'a Published>,
}

impl<'a> CohortOptions<'a> {
    /// Grade everything, no deadline, no similarity report.
    pub fn new(out_dir: &'a Path, overrides: &'a Overrides, threads: usize) -> Self {
        CohortOptions {
            out_dir,
            overrides,
            threads,
            late: None,
            lms_times: BTreeMap::new(),
            resume: false,
            only: None,
            published: None,
        }
    }
}

/// Where each graded entry is recorded as soon as it is graded: one JSON line per entry.
pub const PROGRESS_FILE: &str = "gradebook.progress.jsonl";

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
    let out_dir = options.out_dir;
    std::fs::create_dir_all(out_dir).map_err(|e| {
        CohortError(format!(
            "{}: cannot create the output folder: {e}",
            out_dir.display()
        ))
    })?;
    // Results kept as they are (--only: every other entry of the gradebook).
    let mut kept: Vec<StudentResult> = Vec::new();
    // Results to finish (overrides, times, late policy): graded now or resumed.
    let mut finished: Vec<StudentResult> = Vec::new();
    let todo: Vec<Entry>;
    let progress_path = out_dir.join(PROGRESS_FILE);
    let mut progress = None;
    if let Some(only) = &options.only {
        let Some(entry) = entries.iter().find(|e| &e.student == only) else {
            let names: Vec<&str> = entries.iter().map(|e| e.student.as_str()).collect();
            return Err(CohortError(format!(
                "{}: no submission named {only}; the cohort's students are {}",
                cohort_dir.display(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            )));
        };
        kept = read_gradebook(out_dir)?;
        kept.retain(|s| &s.student != only);
        todo = vec![entry.clone()];
    } else {
        let done = if options.resume {
            read_progress(&progress_path)
        } else {
            BTreeMap::new()
        };
        let mut rest = Vec::new();
        for entry in &entries {
            match done.get(&entry.student) {
                Some(r) if r.file_name == entry.file_name => finished.push(r.clone()),
                _ => rest.push(entry.clone()),
            }
        }
        todo = rest;
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(options.resume)
            .write(true)
            .truncate(!options.resume)
            .open(&progress_path)
            .map_err(|e| {
                CohortError(format!(
                    "{}: cannot record the progress: {e}",
                    progress_path.display()
                ))
            })?;
        progress = Some(std::sync::Mutex::new(file));
    }
    let resumed = finished.len();
    // Each result is recorded as soon as it is graded: a crash keeps every finished entry.
    let graded = grade_entries_with(&todo, options.threads, &|entry| {
        let result = grade(entry);
        if let (Some(progress), Ok(line)) = (&progress, serde_json::to_string(&result)) {
            if let Ok(mut file) = progress.lock() {
                let _ = writeln!(file, "{line}");
                let _ = file.flush();
            }
        }
        result
    });
    finished.extend(graded);
    if resumed > 0 {
        cohort.warnings.push(format!(
            "resumed: {resumed} entries graded by the interrupted run were kept, {} graded now",
            todo.len()
        ));
    }
    let by_student: BTreeMap<&str, &Entry> =
        entries.iter().map(|e| (e.student.as_str(), e)).collect();
    for student in &mut finished {
        if let Some(entry) = by_student.get(student.student.as_str()) {
            student.test_runs = run_tests(entry, student);
            if let Some(at) = options.lms_times.get(&student.student) {
                student.submitted = Some(Submitted {
                    at: *at,
                    source: TimeSource::Lms,
                });
            } else if let Some(at) = read_sidecar(cohort_dir, entry, &mut cohort.warnings) {
                student.submitted = Some(Submitted {
                    at,
                    source: TimeSource::Sidecar,
                });
            }
        }
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
        student.late = options
            .late
            .map(|policy| policy.apply(student.total_percent(), student.submitted.as_ref()));
    }
    // Feedback pages: distinct names can still share a file name (case, or replaced
    // characters): number them. Kept entries keep theirs.
    let mut taken: BTreeSet<String> = kept
        .iter()
        .map(|s| s.feedback_file.to_lowercase())
        .collect();
    for student in &mut finished {
        let stem = safe_file_stem(&student.student);
        let mut candidate = format!("{stem}.md");
        let mut n = 2;
        while !taken.insert(candidate.to_lowercase()) {
            candidate = format!("{stem}-{n}.md");
            n += 1;
        }
        student.feedback_file = candidate;
    }
    let order: BTreeMap<&str, usize> = entries
        .iter()
        .enumerate()
        .map(|(i, e)| (e.student.as_str(), i))
        .collect();
    cohort.students = kept.into_iter().chain(finished).collect();
    cohort
        .students
        .sort_by_key(|s| order.get(s.student.as_str()).copied().unwrap_or(usize::MAX));
    if options.only.is_none() {
        let known: BTreeSet<&str> = cohort.students.iter().map(|s| s.student.as_str()).collect();
        for o in &options.overrides.entries {
            if !known.contains(o.student.as_str()) {
                cohort.warnings.push(format!(
                    "override for {} matches no student in the cohort",
                    o.student
                ));
            }
        }
    }
    let similarity = options
        .published
        .map(|published| similarity_report(grader, &entries, &cohort.students, published));
    if let Some(report) = &similarity {
        cohort.compared = true;
        for student in &mut cohort.students {
            student.similarity = report.column(&student.student);
        }
    }
    write_outputs(grader, &cohort, out_dir, options.only.as_deref())?;
    if let Some(report) = &similarity {
        let path = out_dir.join(SIMILARITY_FILE);
        output::write_file(
            &path,
            report.markdown(cohort.students.len()).as_bytes(),
            output::Flush::ToDisk,
        )
        .map_err(|e| {
            CohortError(format!(
                "{}: cannot write the similarity report: {e}",
                path.display()
            ))
        })?;
    }
    if progress.is_some() {
        drop(progress);
        let _ = std::fs::remove_file(&progress_path);
    }
    Ok(cohort)
}

/// The similarity report's file, beside the gradebook.
pub const SIMILARITY_FILE: &str = "similarity.md";

/// Read every entry again (in parallel, never running its code) and compare them.
fn similarity_report(
    grader: &Grader,
    entries: &[Entry],
    students: &[StudentResult],
    published: &Published,
) -> SimilarityReport {
    use rayon::prelude::*;
    let prints: Vec<_> = entries
        .par_iter()
        .filter_map(|entry| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let submission = load_entry(grader, entry);
                crate::similarity::fingerprint(
                    &entry.student,
                    &submission,
                    &grader.manifest,
                    published,
                )
            }))
            .ok()
        })
        .collect();
    let results: Vec<(&str, &[ExerciseReport])> = students
        .iter()
        .map(|s| (s.student.as_str(), s.reports.as_slice()))
        .collect();
    crate::similarity::compare(&prints, &results)
}

/// `COHORT/STUDENT.submitted_at`, when there is one and it holds a time.
fn read_sidecar(
    cohort_dir: &Path,
    entry: &Entry,
    warnings: &mut Vec<String>,
) -> Option<chrono::DateTime<chrono::Utc>> {
    let path = cohort_dir.join(format!("{}{SIDECAR}", entry.student));
    let text = std::fs::read_to_string(&path).ok()?;
    match crate::late::parse_time(&text) {
        Ok(at) => Some(at),
        Err(e) => {
            warnings.push(format!(
                "{}:1: {e}; the files' own times are used instead",
                path.display()
            ));
            None
        }
    }
}

/// The entries an interrupted run finished, by student (a line cut short by the crash, or
/// any line that does not read back, is graded again).
fn read_progress(path: &Path) -> BTreeMap<String, StudentResult> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return BTreeMap::new();
    };
    text.lines()
        .filter_map(|line| serde_json::from_str::<StudentResult>(line).ok())
        .map(|r| (r.student.clone(), r))
        .collect()
}

/// The gradebook a previous run wrote (`OUT/gradebook.json`).
pub fn read_gradebook(out_dir: &Path) -> Result<Vec<StudentResult>, CohortError> {
    let path = out_dir.join("gradebook.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        CohortError(format!(
            "{}: cannot read the gradebook to regrade into ({e}); grade the whole cohort first",
            path.display()
        ))
    })?;
    serde_json::from_str(&text).map_err(|e| {
        CohortError(format!(
            "{}:{}:{}: not a gradebook this grader wrote ({e}); grade the whole cohort again",
            path.display(),
            e.line(),
            e.column()
        ))
    })
}

fn write_outputs(
    grader: &Grader,
    cohort: &Cohort,
    out_dir: &Path,
    only: Option<&str>,
) -> Result<(), CohortError> {
    let csv = gradebook_csv(grader, cohort)?;
    let path = out_dir.join("gradebook.csv");
    output::write_file(&path, csv.as_bytes(), output::Flush::ToDisk).map_err(|e| {
        CohortError(format!(
            "{}: cannot write the gradebook: {e}",
            path.display()
        ))
    })?;
    // The same results for tools (a dashboard, a learning platform's import).
    let json = serde_json::to_string_pretty(&cohort.students)
        .map_err(|e| CohortError(format!("cannot write the gradebook: {e}")))?;
    let path = out_dir.join("gradebook.json");
    output::write_file(&path, json.as_bytes(), output::Flush::ToDisk).map_err(|e| {
        CohortError(format!(
            "{}: cannot write the gradebook: {e}",
            path.display()
        ))
    })?;
    let feedback_dir = out_dir.join("feedback");
    // --only rewrites one page: the others are the previous run's.
    for student in cohort
        .students
        .iter()
        .filter(|s| only.is_none_or(|only| s.student == only))
    {
        let path = feedback_dir.join(&student.feedback_file);
        output::write_file(
            &path,
            feedback_markdown(student).as_bytes(),
            output::Flush::Later,
        )
        .map_err(|e| {
            CohortError(format!(
                "{}: cannot write the feedback: {e}",
                path.display()
            ))
        })?;
    }
    Ok(())
}

/// `student,exercise-1..N,[raw,]total,passed[,submitted_at,time_source,days_late][,similarity],flags[,tests]`:
/// exercise scores and the total in percent. With a deadline, `raw` is the total before the
/// late policy and `total` the final score, and the submission's time and where it was read
/// follow; `similarity` (the similarity report's flags, never a penalty) when it was made;
/// `tests` (after `--run-tests`) is what each exercise's re-run tests did.
pub fn gradebook_csv(grader: &Grader, cohort: &Cohort) -> Result<String, CohortError> {
    let mut writer = csv::Writer::from_writer(Vec::new());
    let mut header = vec!["student".to_string()];
    header.extend(grader.manifest.exercises.iter().map(|e| e.folder_name()));
    let with_late = cohort.students.iter().any(|s| s.late.is_some());
    if with_late {
        header.push("raw".to_string());
    }
    header.extend(["total".to_string(), "passed".to_string()]);
    // The column is there only when tests were re-run, so gradebooks without stay as they were.
    let with_tests = cohort.students.iter().any(|s| !s.test_runs.is_empty());
    if with_late {
        header.extend(["submitted_at", "time_source", "days_late"].map(String::from));
    }
    if cohort.compared {
        header.push("similarity".to_string());
    }
    header.push("flags".to_string());
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
        if with_late {
            row.push(show(s.total_percent()));
        }
        row.push(show(s.final_percent()));
        row.push(s.passed().to_string());
        if with_late {
            row.push(
                s.submitted
                    .map_or(String::new(), |t| crate::late::show_time(&t.at)),
            );
            row.push(s.submitted.map_or("none", |t| t.source.label()).to_string());
            row.push(s.late.map_or(String::new(), |l| l.days_late.to_string()));
        }
        if cohort.compared {
            row.push(s.similarity.clone());
        }
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
        show(student.final_percent()),
        student.passed(),
        student.reports.len(),
        student.file_name
    );
    if let Some(late) = &student.late {
        let when = match &student.submitted {
            Some(t) => format!(
                "Submitted at {} (from {}).",
                crate::late::show_time(&t.at),
                match t.source {
                    TimeSource::Lms => "the learning platform",
                    TimeSource::Sidecar => "the time recorded when the files were collected",
                    TimeSource::Files => "your files' own times",
                }
            ),
            None => "No submission time was found: graded as on time.".to_string(),
        };
        let penalty = if late.past_cutoff {
            format!(
                " Past the late cutoff: {}% before, 0% recorded.",
                show(late.raw)
            )
        } else if late.days_late > 0 {
            format!(
                " {} day{} late: {}% before the late penalty, {}% after.",
                late.days_late,
                if late.days_late == 1 { "" } else { "s" },
                show(late.raw),
                show(late.final_score)
            )
        } else {
            " On time.".to_string()
        };
        let _ = writeln!(out, "{when}{penalty}\n");
    }
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
            format!("{:.0}", s.final_percent()),
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
            students.iter().map(|s| s.final_percent()).sum::<f64>() / students.len() as f64;
        let _ = writeln!(out, " {:>6}", format!("{mean_total:.0}"));
    }
    out
}
