//! `course grade`'s deadline and gradebook: the late policy with each source of a submission's
//! time, the Canvas and Moodle exports, `--only` regrading one entry, and `--resume` finishing
//! an interrupted run.

mod support;

use grader::cohort::{
    grade_cohort, grade_cohort_using, grade_entry, CohortOptions, Entry, PROGRESS_FILE,
};
use grader::export::{export, Platform, Roster};
use grader::late::{parse_cutoff, parse_penalty, parse_time, LatePolicy};
use grader::overrides::Overrides;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};
use support::*;

fn policy() -> LatePolicy {
    LatePolicy {
        due: parse_time("2027-01-15T23:59:00Z").unwrap(),
        percent_per_day: parse_penalty("10%/day").unwrap(),
        cutoff: Some(parse_cutoff("3d").unwrap()),
    }
}

/// Set every file's modification time under `dir`.
fn touch_all(dir: &Path, at: SystemTime) {
    for item in std::fs::read_dir(dir).unwrap().flatten() {
        let path = item.path();
        if path.is_dir() {
            touch_all(&path, at);
        } else {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(at)
                .unwrap();
        }
    }
}

fn unix(text: &str) -> SystemTime {
    SystemTime::UNIX_EPOCH
        + Duration::from_secs(parse_time(text).unwrap().timestamp().try_into().unwrap())
}

/// alice: on time by the platform's record, though her files say a week late; bob: two days
/// late by the collector's sidecar; carol: only her files' times, past the cutoff; dave: a zip,
/// whose times are not trusted, so no time at all.
fn build(dir: &Path) -> std::path::PathBuf {
    let cohort = dir.join("cohort");
    for id in ["alice", "bob", "carol"] {
        write_tree(&cohort.join(id), &perfect_files_for(id));
    }
    touch_all(&cohort.join("alice"), unix("2027-01-22T10:00:00Z"));
    touch_all(&cohort.join("bob"), unix("2027-01-10T10:00:00Z"));
    touch_all(&cohort.join("carol"), unix("2027-01-20T08:00:00Z"));
    std::fs::write(
        cohort.join("bob.submitted_at"),
        "2027-01-17T09:00:00+00:00\n",
    )
    .unwrap();
    zip_files(
        &cohort.join("dave.zip"),
        &perfect_files_for("dave"),
        "exercises/",
        |_| {},
    );
    cohort
}

fn row<'a>(csv: &'a str, student: &str) -> BTreeMap<&'a str, &'a str> {
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let line = csv
        .lines()
        .find(|l| l.starts_with(&format!("{student},")))
        .unwrap_or_else(|| panic!("no row for {student} in\n{csv}"));
    header.into_iter().zip(line.split(',')).collect()
}

#[test]
fn the_late_policy_reads_each_time_source_in_order_and_the_exports_follow() {
    let grader = grader();
    let dir = tempfile::tempdir().unwrap();
    let cohort = build(dir.path());
    let out = dir.path().join("grades");
    let no_overrides = Overrides::default();
    let mut options = CohortOptions::new(&out, &no_overrides, 2);
    options.late = Some(policy());
    options
        .lms_times
        .insert("alice".into(), parse_time("2027-01-15T20:00:00Z").unwrap());
    let graded = grade_cohort(&grader, &cohort, &options).unwrap();
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    let raw = |s: &str| {
        graded
            .students
            .iter()
            .find(|r| r.student == s)
            .unwrap()
            .total_percent()
    };
    assert!(
        raw("bob") > 20.0,
        "bob's raw score leaves room for the penalty"
    );

    let alice = row(&csv, "alice");
    assert_eq!(alice["time_source"], "lms");
    assert_eq!(alice["submitted_at"], "2027-01-15T20:00:00Z");
    assert_eq!(alice["days_late"], "0");
    assert_eq!(alice["raw"], alice["total"]);

    let bob = row(&csv, "bob");
    assert_eq!(bob["time_source"], "sidecar");
    assert_eq!(bob["submitted_at"], "2027-01-17T09:00:00Z");
    assert_eq!(bob["days_late"], "2");
    let bob_total: f64 = bob["total"].parse().unwrap();
    assert!((bob_total - (raw("bob") - 20.0)).abs() < 0.01, "{csv}");
    assert!(bob["flags"].contains("late:2d"), "{csv}");
    assert!(!bob["flags"].contains("time-from-files"), "{csv}");

    let carol = row(&csv, "carol");
    assert_eq!(carol["time_source"], "files");
    assert_eq!(carol["days_late"], "5");
    assert_eq!(carol["total"], "0");
    assert_ne!(carol["raw"], "0");
    assert!(carol["flags"].contains("past-cutoff"), "{csv}");
    assert!(carol["flags"].contains("time-from-files"), "{csv}");

    let dave = row(&csv, "dave");
    assert_eq!(dave["time_source"], "none");
    assert!(dave["flags"].contains("no-submission-time"), "{csv}");
    assert_eq!(dave["raw"], dave["total"]);

    let feedback = std::fs::read_to_string(out.join("feedback/bob.md")).unwrap();
    assert!(
        feedback.contains("2 days late") && feedback.contains("collected"),
        "{feedback}"
    );

    // The exports: the platform's identifiers from the roster; dave is not in it.
    let roster = Roster::parse(
        "student,name,lms_id,sis_user_id,sis_login_id,section,email\n\
         alice,\"Liddell, Alice\",10234,S1001,aliddell,Section A,alice@example.edu\n\
         bob,Bob Marley,10235,S1002,bmarley,Section B,bob@example.edu\n\
         carol,Carol Ann,10236,,,,carol@example.edu\n",
        "roster.csv",
    )
    .unwrap();
    let (canvas, left_out) = export(
        Platform::Canvas,
        &grader.manifest,
        &graded,
        &roster,
        "Workshop (4821)",
    )
    .unwrap();
    let lines: Vec<&str> = canvas.lines().collect();
    assert_eq!(
        lines[0],
        "Student,ID,SIS User ID,SIS Login ID,Section,Workshop (4821)"
    );
    assert_eq!(lines[1], "    Points Possible,,,,,100");
    assert_eq!(
        lines[2],
        format!(
            "\"Liddell, Alice\",10234,S1001,aliddell,Section A,{}",
            alice["total"]
        )
    );
    assert_eq!(
        lines[3],
        format!("Bob Marley,10235,S1002,bmarley,Section B,{}", bob["total"])
    );
    assert_eq!(lines[4], "Carol Ann,10236,,,,0");
    assert_eq!(lines.len(), 5);
    assert_eq!(left_out, ["dave: not in the roster"]);

    let (moodle, _) = export(
        Platform::Moodle,
        &grader.manifest,
        &graded,
        &roster,
        "Workshop",
    )
    .unwrap();
    let header: Vec<&str> = moodle.lines().next().unwrap().split(',').collect();
    assert_eq!(header[0], "Email address");
    assert_eq!(header.last(), Some(&"Workshop"));
    assert_eq!(header.len(), grader.manifest.exercises.len() + 2);
    let bob_line = moodle
        .lines()
        .find(|l| l.starts_with("bob@example.edu,"))
        .unwrap();
    assert!(
        bob_line.ends_with(&format!(",{}", bob["total"])),
        "{moodle}"
    );

    // A roster without the one column every row needs says so, with the line.
    let err = Roster::parse("name,lms_id\nAlice,1\n", "roster.csv").unwrap_err();
    assert!(
        err.starts_with("roster.csv:1: no `student` column"),
        "{err}"
    );
}

#[test]
fn only_regrades_one_entry_and_keeps_the_others_and_the_overrides() {
    let grader = grader();
    let dir = tempfile::tempdir().unwrap();
    let cohort = build(dir.path());
    let out = dir.path().join("grades");
    // An override for bob and one for carol, in force from the first run on.
    let overrides = Overrides::parse(
        "[[override]]\nstudent = \"bob\"\nexercise = 1\nquestion = \"route-why\"\npoints = 0\nreason = \"copied the chapter\"\n\n\
         [[override]]\nstudent = \"carol\"\nexercise = 1\nquestion = \"route-why\"\npoints = 0\nreason = \"copied\"\n",
        "overrides.toml",
    )
    .unwrap();
    let mut options = CohortOptions::new(&out, &overrides, 2);
    options.late = Some(policy());
    grade_cohort(&grader, &cohort, &options).unwrap();
    let before = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    let carol_page = std::fs::read_to_string(out.join("feedback/carol.md")).unwrap();
    assert!(row(&before, "carol")["flags"].contains("override:1"));

    // bob resubmits exercise 2 empty; carol's files change too, but only bob is regraded.
    std::fs::remove_file(cohort.join("bob/exercises/exercise-2/answers.toml")).unwrap();
    std::fs::remove_dir_all(cohort.join("carol/exercises/exercise-3")).unwrap();
    options.only = Some("bob".into());
    let graded = grade_cohort(&grader, &cohort, &options).unwrap();
    assert_eq!(graded.students.len(), 4);
    let after = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    for other in ["alice", "carol", "dave"] {
        assert_eq!(row(&before, other), row(&after, other), "{other}");
    }
    assert_eq!(
        std::fs::read_to_string(out.join("feedback/carol.md")).unwrap(),
        carol_page
    );
    let bob = row(&after, "bob");
    assert_eq!(bob["exercise-2"], "0");
    assert_ne!(row(&before, "bob")["exercise-2"], "0");
    assert!(bob["flags"].contains("override:1"), "{after}");
    assert!(bob["flags"].contains("late:2d"), "{after}");
    assert_eq!(after.lines().count(), before.lines().count());

    // A name that is not in the cohort is refused with the names that are.
    options.only = Some("zoe".into());
    let err = grade_cohort(&grader, &cohort, &options).unwrap_err();
    assert!(
        err.0.contains("no submission named zoe") && err.0.contains("alice, bob, carol, dave"),
        "{}",
        err.0
    );
}

const CRASH_ENV: &str = "GRADER_TEST_CRASH_RUN";

/// Run by the resume test in a child process: grades the cohort one entry at a time and
/// aborts the process (no unwinding, as a power cut or a kill would) on the fourth entry.
#[test]
#[ignore = "run by interrupted_runs_keep_the_old_gradebook_and_resume_finishes_the_rest"]
fn crashing_run() {
    let Some(dir) = std::env::var_os(CRASH_ENV) else {
        return;
    };
    let dir = Path::new(&dir);
    let grader = grader();
    let out = dir.join("grades");
    let overrides = Overrides::default();
    let options = CohortOptions::new(&out, &overrides, 1);
    let _ = grade_cohort_using(
        &grader,
        &dir.join("cohort"),
        &options,
        &|entry: &Entry| {
            if entry.student == "s3" {
                std::process::abort();
            }
            grade_entry(&grader, entry)
        },
        &mut |_, _| Vec::new(),
    );
}

#[test]
fn interrupted_runs_keep_the_old_gradebook_and_resume_finishes_the_rest() {
    let grader = grader();
    let dir = tempfile::tempdir().unwrap();
    let cohort = dir.path().join("cohort");
    let out = dir.path().join("grades");
    for i in 0..5 {
        let id = format!("s{i}");
        write_tree(&cohort.join(&id), &perfect_files_for(&id));
    }
    // A previous gradebook, from before s4 joined.
    let s4 = dir.path().join("s4-later");
    std::fs::rename(cohort.join("s4"), &s4).unwrap();
    grade_cohort(
        &grader,
        &cohort,
        &CohortOptions::new(&out, &Overrides::default(), 2),
    )
    .unwrap();
    std::fs::rename(&s4, cohort.join("s4")).unwrap();
    let previous = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    assert_eq!(previous.lines().count(), 5);

    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["crashing_run", "--exact", "--ignored", "--test-threads=1"])
        .env(CRASH_ENV, dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child run was meant to die");
    // The previous gradebook is untouched; the three entries graded before the crash are kept.
    assert_eq!(
        std::fs::read_to_string(out.join("gradebook.csv")).unwrap(),
        previous
    );
    let progress = std::fs::read_to_string(out.join(PROGRESS_FILE)).unwrap();
    assert_eq!(progress.lines().count(), 3, "{progress}");

    let graded_now = std::sync::Mutex::new(Vec::new());
    let no_overrides = Overrides::default();
    let mut options = CohortOptions::new(&out, &no_overrides, 2);
    options.resume = true;
    let cohort_result = grade_cohort_using(
        &grader,
        &cohort,
        &options,
        &|entry: &Entry| {
            graded_now.lock().unwrap().push(entry.student.clone());
            grade_entry(&grader, entry)
        },
        &mut |_, _| Vec::new(),
    )
    .unwrap();
    let mut now = graded_now.into_inner().unwrap();
    now.sort();
    assert_eq!(now, ["s3", "s4"]);
    assert_eq!(cohort_result.students.len(), 5);
    for s in &cohort_result.students {
        assert_eq!(s.passed(), s.reports.len(), "{}", s.student);
    }
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    assert_eq!(csv.lines().count(), 6, "{csv}");
    assert!(csv.lines().any(|l| l.starts_with("s4,")));
    assert!(
        !out.join(PROGRESS_FILE).exists(),
        "a finished run removes its progress"
    );
}
