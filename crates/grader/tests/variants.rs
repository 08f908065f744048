//! Exercise 4's per-learner illustrative step: each learner is graded against the step drawn
//! from their own id (`learner.toml`), another learner's answers and the chapter's worked
//! numbers fail, a saving larger than its line is wrong by the ceiling rule, and `course
//! grade`'s engine regenerates each learner's step from their submission and flags an id that
//! is missing or not the submission's name.

mod support;

use course_model::illustrative_step::IllustrativeStep;
use course_model::learner_id::LEARNER_FILE;
use grader::cohort::{grade_cohort, CohortOptions};
use grader::overrides::Overrides;
use grader::report::{ExerciseReport, Outcome};
use std::collections::BTreeMap;
use support::*;

fn exercise_4(files: BTreeMap<String, String>) -> ExerciseReport {
    grader().grade_exercise(&submission(files), 4)
}

/// The outcomes of the four `[illustrative]` questions.
fn illustrative(report: &ExerciseReport) -> Vec<Outcome> {
    report
        .questions
        .iter()
        .filter(|q| q.id.starts_with("illustrative."))
        .map(|q| q.outcome)
        .collect()
}

/// `id`'s perfect files with exercise 4's `[illustrative]` table replaced.
fn with_illustrative(id: &str, table: &str) -> BTreeMap<String, String> {
    let mut files = perfect_files_for(id);
    let own = perfect_ex4_for(id);
    let rest = &own[own.find("[own]").unwrap()..];
    files.insert("exercise-4/answers.toml".into(), format!("{table}{rest}"));
    files
}

const RIGHT: [Outcome; 4] = [Outcome::Right; 4];
const WRONG: [Outcome; 4] = [Outcome::Wrong; 4];

#[test]
fn two_learners_get_different_steps_and_each_is_graded_against_their_own() {
    let (alice, bob) = (
        IllustrativeStep::for_learner("alice"),
        IllustrativeStep::for_learner("bob"),
    );
    assert_ne!(alice, bob);
    for (a, b) in alice.answers().iter().zip(bob.answers()) {
        assert!(
            (a.1 - b.1).abs() > 0.05,
            "{}: alice's and bob's answers must differ for this test",
            a.0
        );
    }
    for id in ["alice", "bob"] {
        let report = exercise_4(perfect_files_for(id));
        assert!(
            report.passed,
            "{}",
            grader::render::terminal(&report, false)
        );
        assert_eq!(illustrative(&report), RIGHT);
        assert_eq!(
            report.variant.as_deref(),
            Some(
                format!(
                    "learner `{id}`: {}",
                    IllustrativeStep::for_learner(id).describe()
                )
                .as_str()
            )
        );
        insta::assert_snapshot!(
            format!("feedback_exercise_4_{id}"),
            grader::render::markdown(&report)
        );
    }
    // One learner's answers are wrong for the other.
    let alice_with_bobs = with_illustrative("alice", &illustrative_answers("bob"));
    assert_eq!(illustrative(&exercise_4(alice_with_bobs)), WRONG);
    let bob_with_alices = with_illustrative("bob", &illustrative_answers("alice"));
    assert_eq!(illustrative(&exercise_4(bob_with_alices)), WRONG);
}

#[test]
fn the_chapters_worked_numbers_are_wrong_for_every_learner() {
    // The numbers every learner had before the steps varied: the chapter's 40 ms example.
    let old = "[illustrative]\nactivations_share_pct = 15\nsaving_ms = 4\nsaving_pct = 10\nnew_step_ms = 36\n";
    for i in 0..100 {
        let id = format!("student-{i}");
        let report = exercise_4(with_illustrative(&id, old));
        assert_eq!(
            illustrative(&report),
            WRONG,
            "{id}: {}",
            grader::render::terminal(&report, false)
        );
    }
    let report = exercise_4(with_illustrative("alice", old));
    assert!(
        report
            .questions
            .iter()
            .any(|q| q.reason.contains("your illustrative step gives")),
        "{}",
        grader::render::terminal(&report, false)
    );
}

#[test]
fn a_saving_larger_than_its_line_is_wrong_by_the_ceiling_rule() {
    // Dividing by the fraction instead of multiplying: more than the whole line is "saved".
    let step = IllustrativeStep::for_learner("alice");
    let [(_, share), _, _, _] = step.answers();
    let f = step.removed.value();
    let line = step.activations_ms();
    let table = format!(
        "[illustrative]\nactivations_share_pct = {share:.2}\nsaving_ms = {:.2}\nsaving_pct = {:.2}\nnew_step_ms = {:.2}\n",
        line / f,
        share / f,
        step.step_ms() - line / f
    );
    let report = exercise_4(with_illustrative("alice", &table));
    assert_eq!(
        illustrative(&report),
        [
            Outcome::Right,
            Outcome::Wrong,
            Outcome::Wrong,
            Outcome::Wrong
        ]
    );
    let lines: Vec<String> = report
        .questions
        .iter()
        .filter(|q| q.id.starts_with("illustrative."))
        .map(|q| {
            format!(
                "{} {:?} {}: {}",
                q.id,
                q.outcome,
                q.answer.as_deref().unwrap_or(""),
                q.reason
            )
        })
        .collect();
    for line in &lines[1..] {
        assert!(
            line.contains("a fix saves at most the line it removes time from"),
            "{line}"
        );
    }
    insta::assert_snapshot!("saving_larger_than_its_line", lines.join("\n"));
}

#[test]
fn the_right_answers_in_other_words_pass() {
    // Text instead of numbers, more decimals, whole numbers without a decimal point.
    let step = IllustrativeStep::for_learner("bob");
    let table: String = std::iter::once("[illustrative]\n".to_string())
        .chain(
            step.answers()
                .iter()
                .enumerate()
                .map(|(i, (field, v))| match i % 2 {
                    0 => format!("{field} = \"{v:.4}\"\n"),
                    _ => format!(
                        "{field} = {}\n",
                        if v.fract() == 0.0 {
                            format!("{}", *v as i64)
                        } else {
                            format!("{v:.3}")
                        }
                    ),
                }),
        )
        .collect();
    assert_eq!(
        illustrative(&exercise_4(with_illustrative("bob", &table))),
        RIGHT,
        "{table}"
    );
}

#[test]
fn without_a_learner_id_the_step_cannot_be_graded_and_says_so() {
    let mut files = perfect_files_for("alice");
    files.remove(LEARNER_FILE);
    let report = exercise_4(files.clone());
    assert_eq!(illustrative(&report), WRONG);
    assert!(report.variant.is_none());
    let problem = report
        .problems
        .iter()
        .find(|p| p.kind == grader::ProblemKind::LearnerId)
        .expect("a learner-id problem");
    assert!(
        problem.to_string().contains("learner.toml") && problem.next_step.contains("course id"),
        "{problem}"
    );
    // Untouched answers without an id: nothing to grade, so nothing to flag in the exercise.
    files.insert(
        "exercise-4/answers.toml".into(),
        grader()
            .manifest
            .exercise(4)
            .unwrap()
            .answers_template
            .clone(),
    );
    assert!(exercise_4(files)
        .problems
        .iter()
        .all(|p| p.kind != grader::ProblemKind::LearnerId));
}

#[test]
fn grading_a_cohort_regenerates_each_learners_step_and_flags_ids_that_do_not_fit() {
    let dir = tempfile::tempdir().unwrap();
    let cohort_dir = dir.path().join("cohort");
    write_tree(&cohort_dir.join("alice"), &perfect_files_for("alice"));
    // bob submits a zip of his exercises folder.
    {
        let file = std::fs::File::create(cohort_dir.join("bob.zip")).unwrap();
        let mut zip = zip::ZipWriter::new(file);
        for (rel, text) in perfect_files_for("bob") {
            zip.start_file(
                format!("exercises/{rel}"),
                zip::write::SimpleFileOptions::default(),
            )
            .unwrap();
            std::io::Write::write_all(&mut zip, text.as_bytes()).unwrap();
        }
        zip.finish().unwrap();
    }
    // carol hands in alice's folder as it is: graded as alice's variant, and flagged.
    write_tree(&cohort_dir.join("carol"), &perfect_files_for("alice"));
    // dan's folder has no learner.toml.
    let mut dan = perfect_files_for("dan");
    dan.remove(LEARNER_FILE);
    write_tree(&cohort_dir.join("dan"), &dan);

    let out = dir.path().join("grades");
    let cohort = grade_cohort(
        &grader(),
        &cohort_dir,
        &CohortOptions::new(&out, &Overrides::default(), 2),
    )
    .unwrap();
    let student = |name: &str| cohort.students.iter().find(|s| s.student == name).unwrap();
    for (name, id) in [("alice", "alice"), ("bob", "bob"), ("carol", "alice")] {
        let ex4 = &student(name).reports[3];
        assert_eq!(
            ex4.variant,
            Some(format!(
                "learner `{id}`: {}",
                IllustrativeStep::for_learner(id).describe()
            )),
            "{name}"
        );
        assert_eq!(illustrative(ex4), RIGHT, "{name}");
        let page = std::fs::read_to_string(out.join("feedback").join(&student(name).feedback_file))
            .unwrap();
        assert!(
            page.contains(&format!(
                "Your variant: learner `{id}`: {}",
                IllustrativeStep::for_learner(id).describe()
            )),
            "{page}"
        );
    }
    assert!(
        !student("alice")
            .flags()
            .iter()
            .any(|f| f.starts_with("learner-id")),
        "{:?}",
        student("alice").flags()
    );
    assert!(
        !student("bob")
            .flags()
            .iter()
            .any(|f| f.starts_with("learner-id")),
        "{:?}",
        student("bob").flags()
    );
    assert!(
        student("carol").flags().contains(&"learner-id".to_string()),
        "{:?}",
        student("carol").flags()
    );
    assert!(
        student("dan").flags().contains(&"learner-id".to_string()),
        "{:?}",
        student("dan").flags()
    );
    assert_eq!(illustrative(&student("dan").reports[3]), WRONG);
    // The page's section on the submission as a whole (the totals depend on every exercise).
    let problems = |name: &str| -> String {
        let page = std::fs::read_to_string(out.join("feedback").join(&student(name).feedback_file))
            .unwrap();
        let section = page
            .split("## Problems with the submission")
            .nth(1)
            .expect("a problems section");
        section.split("\n## ").next().unwrap().trim().to_string()
    };
    insta::assert_snapshot!("feedback_head_id_of_another", problems("carol"));
    insta::assert_snapshot!("feedback_head_no_id", problems("dan"));
}
