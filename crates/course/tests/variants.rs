//! The learner id and exercise 4's per-learner step through the real `course` binary: the id is
//! asked for (or refused with the way out when nobody can answer), stored and shown; two
//! learners' `course check 4` grade each against their own step; `course grade` regenerates
//! each learner's step from their submission and flags an id that is not the submission's.

mod common;

use common::{copy_from_repo, package, repo, template, text, workspace, write, BIN};
use course_model::illustrative_step::IllustrativeStep;
use grader::fill_answers::{set, Answer};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn copy_dir(from: &Path, to: &Path) {
    for entry in std::fs::read_dir(from).unwrap().flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            write(&target, &std::fs::read_to_string(entry.path()).unwrap());
        }
    }
}

/// A course copy with the real manifest, key and quiz files, and a stand-in exercise-4 package
/// (what is graded here is answers.toml, not the code). No learner id yet.
fn course_copy(dir: &Path) -> PathBuf {
    let root = dir.join("course");
    copy_from_repo(&root, "exercises/info.toml");
    copy_dir(
        &repo().join("crates/grader/key"),
        &root.join("crates/grader/key"),
    );
    for quizzes in ["book/src/quizzes", "crates/grader/bank"] {
        if repo().join(quizzes).is_dir() {
            copy_dir(&repo().join(quizzes), &root.join(quizzes));
        }
    }
    workspace(&root, &["exercises/exercise-4"]);
    package(&root, "exercises/exercise-4", "exercise-4");
    write(
        &root.join("exercises/exercise-4/src/lib.rs"),
        "//! Stands in for exercise 4's code.\n",
    );
    write(
        &root.join("exercises/exercise-4/answers.toml"),
        &template(4),
    );
    root
}

/// `course ARGS` in `root` without a terminal; `id` is COURSE_LEARNER_ID (unset when None).
fn course(root: &Path, args: &[&str], id: Option<&str>) -> Output {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("course-variants-target");
    let mut command = Command::new(BIN);
    command
        .args(args)
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target)
        .env("NO_COLOR", "1")
        .env_remove("COURSE_LEARNER_ID")
        .stdin(Stdio::null());
    if let Some(id) = id {
        command.env("COURSE_LEARNER_ID", id);
    }
    command.output().unwrap()
}

/// The JSON report on stdout, after whatever `cargo test` printed there for the exercise's tests.
fn json_report(o: &Output) -> serde_json::Value {
    let stdout = String::from_utf8_lossy(&o.stdout);
    let start = stdout.rfind("\n{\n").map_or(0, |i| i + 1);
    serde_json::from_str(&stdout[start..]).unwrap_or_else(|e| panic!("{e}: {}", text(o)))
}

/// Exercise 4's `[illustrative]` answers as `id`'s step gives them (two decimals).
fn illustrative_answers(id: &str) -> Vec<(String, Answer)> {
    IllustrativeStep::for_learner(id)
        .answers()
        .iter()
        .map(|(field, v)| {
            (
                format!("illustrative.{field}"),
                Answer::Number((v * 100.0).round() / 100.0),
            )
        })
        .collect()
}

/// The outcomes of the `[illustrative]` checks in `course check 4 --format json`.
fn illustrative_outcomes(json: &serde_json::Value) -> Vec<String> {
    json["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|q| q["id"].as_str().unwrap().starts_with("illustrative."))
        .map(|q| q["outcome"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_learner_id_is_asked_once_stored_and_shown() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    // Nobody to ask and no COURSE_LEARNER_ID: the command stops before building and says how.
    let o = course(&root, &["check", "4"], None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no learner id yet") && text(&o).contains("course id NAME"),
        "{}",
        text(&o)
    );
    assert!(!text(&o).contains("[1/3] build"), "{}", text(&o));
    assert_eq!(course(&root, &["id"], None).status.code(), Some(2));
    let o = course(&root, &["id", "a b"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("letters, digits"), "{}", text(&o));

    let o = course(&root, &["id", "Alice"], None);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        course_model::learner_id::learner_id(&root.join("exercises")).as_deref(),
        Some("Alice")
    );
    assert_eq!(
        String::from_utf8_lossy(&course(&root, &["id"], None).stdout).trim(),
        "Alice"
    );
    // The stored id wins over the environment, and says so.
    let o = course(&root, &["check", "4"], Some("bob"));
    assert!(
        text(&o).contains("COURSE_LEARNER_ID=bob is set") && text(&o).contains("learner `Alice`"),
        "{}",
        text(&o)
    );
    // Changing it warns that the per-learner questions change with it.
    let o = course(&root, &["id", "alice2"], None);
    assert!(
        o.status.success() && text(&o).contains("the per-learner questions change"),
        "{}",
        text(&o)
    );

    // Without a file, COURSE_LEARNER_ID is taken and stored.
    let fresh = course_copy(&dir.path().join("fresh"));
    let o = course(&fresh, &["check", "4"], Some("carol"));
    assert!(
        text(&o).contains("Learner id \"carol\" stored"),
        "{}",
        text(&o)
    );
    assert_eq!(
        course_model::learner_id::learner_id(&fresh.join("exercises")).as_deref(),
        Some("carol")
    );
}

#[test]
fn two_learners_course_check_4_each_get_and_are_graded_on_their_own_step() {
    let dir = tempfile::tempdir().unwrap();
    assert_ne!(
        IllustrativeStep::for_learner("alice"),
        IllustrativeStep::for_learner("bob")
    );
    for (me, other) in [("alice", "bob"), ("bob", "alice")] {
        let root = course_copy(&dir.path().join(me));
        assert!(course(&root, &["id", me], None).status.success());
        let answers = root.join("exercises/exercise-4/answers.toml");
        set(&answers, &illustrative_answers(me)).unwrap();
        let o = course(&root, &["check", "4", "--format", "json"], None);
        let json = json_report(&o);
        assert_eq!(
            illustrative_outcomes(&json),
            ["right"; 4],
            "{me}: {}",
            text(&o)
        );
        let variant = format!(
            "learner `{me}`: {}",
            IllustrativeStep::for_learner(me).describe()
        );
        // The JSON report names the variant graded among its notes.
        let notes: Vec<&str> = json["notes"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|n| n.as_str())
            .collect();
        assert!(
            notes.contains(&format!("your variant: {variant}").as_str()),
            "{notes:?}"
        );
        // The terminal report shows the learner's own step too.
        let o = course(&root, &["check", "4"], None);
        assert!(
            text(&o).contains(&format!("Your variant: {variant}")),
            "{}",
            text(&o)
        );
        // The other learner's answers are wrong here.
        set(&answers, &illustrative_answers(other)).unwrap();
        let o = course(&root, &["check", "4", "--format", "json"], None);
        let json = json_report(&o);
        assert_eq!(
            illustrative_outcomes(&json),
            ["wrong"; 4],
            "{me} with {other}'s answers"
        );
    }
}

#[test]
fn course_grade_regenerates_each_learners_step_and_flags_a_borrowed_id() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let cohort = dir.path().join("cohort");
    // alice and bob answer their own steps; eve submits alice's folder under her own name.
    for (folder, id) in [("alice", "alice"), ("bob", "bob"), ("eve", "alice")] {
        let exercises = cohort.join(folder).join("exercises");
        course_model::learner_id::write_learner_id(&exercises, id).unwrap();
        write(&exercises.join("exercise-4/answers.toml"), &template(4));
        set(
            &exercises.join("exercise-4/answers.toml"),
            &illustrative_answers(id),
        )
        .unwrap();
    }
    let out = dir.path().join("grades");
    let o = course(
        &root,
        &[
            "grade",
            cohort.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", text(&o));
    for (folder, id) in [("alice", "alice"), ("bob", "bob"), ("eve", "alice")] {
        let page =
            std::fs::read_to_string(out.join("feedback").join(format!("{folder}.md"))).unwrap();
        assert!(
            page.contains(&format!(
                "Your variant: learner `{id}`: {}",
                IllustrativeStep::for_learner(id).describe()
            )),
            "{page}"
        );
        assert!(
            page.contains("| ✓ right | `illustrative.saving_ms`"),
            "{page}"
        );
    }
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    let flags = |student: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("{student},")))
            .unwrap()
            .to_string()
    };
    assert!(
        !flags("alice").contains("learner-id") && !flags("bob").contains("learner-id"),
        "{csv}"
    );
    assert!(flags("eve").contains("learner-id"), "{csv}");
}
