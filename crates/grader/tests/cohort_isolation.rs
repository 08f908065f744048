//! A grader bug never costs a student their grade: cohort grading isolates every entry, so a
//! panic while grading one submission is recorded for that submission, with the panic's
//! message, and every other student keeps the grade they earned.

mod support;

use grader::cohort::{grade_cohort_using, grade_entry, CohortOptions};
use grader::overrides::Overrides;
use support::*;

#[test]
fn a_panicking_entry_is_recorded_and_the_other_49_keep_their_grades() {
    let grader = grader();
    let dir = tempfile::tempdir().unwrap();
    let cohort = dir.path().join("cohort");
    for i in 0..50 {
        let id = format!("s{i:02}");
        write_tree(&cohort.join(&id), &perfect_files_for(&id));
    }
    let out = dir.path().join("grades");
    // The grading function is a parameter: this one fails on one student, as a grader bug
    // would, after the others on the same worker thread have been graded.
    let grade = |entry: &grader::cohort::Entry| {
        if entry.student == "s31" {
            panic!("injected failure for {}", entry.student);
        }
        grade_entry(&grader, entry)
    };
    let graded = grade_cohort_using(
        &grader,
        &cohort,
        &CohortOptions::new(&out, &Overrides::default(), 4),
        &grade,
        &mut |_, _| Vec::new(),
    )
    .unwrap();
    assert_eq!(graded.students.len(), 50);
    for s in &graded.students {
        if s.student == "s31" {
            assert!(s.reports.is_empty());
            assert_eq!(s.problems.len(), 1, "{:?}", s.problems);
            assert_eq!(
                s.problems[0].message,
                "grader failed: injected failure for s31"
            );
        } else {
            assert!(s.problems.is_empty(), "{}: {:?}", s.student, s.problems);
            // The grade it earns graded alone, on this thread, with nothing failing beside it.
            let entry = grader::cohort::Entry {
                student: s.student.clone(),
                file_name: s.file_name.clone(),
                path: cohort.join(&s.file_name),
            };
            let alone = grade_entry(&grader, &entry);
            assert!(!alone.reports.is_empty());
            assert_eq!(s.reports, alone.reports, "{}", s.student);
            assert_eq!(s.passed(), s.reports.len(), "{}", s.student);
        }
    }
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 50);
    let failed: Vec<&&str> = rows.iter().filter(|r| r.contains("archive")).collect();
    assert_eq!(failed.len(), 1, "{csv}");
    assert!(failed[0].starts_with("s31,"), "{csv}");
    let feedback = std::fs::read_to_string(out.join("feedback/s31.md")).unwrap();
    assert!(
        feedback.contains("grader failed: injected failure for s31"),
        "{feedback}"
    );
    // Kept for the closing note of the instructors' issue: the gradebook of this run.
    if let Some(keep) = std::env::var_os("KEEP_PANIC_GRADEBOOK") {
        std::fs::copy(out.join("gradebook.csv"), keep).unwrap();
    }
}
