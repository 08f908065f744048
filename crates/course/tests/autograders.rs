//! The course as autograders run it: the exit-code rule (0 passed, 1 not passed, 2 the course
//! could not run) of `course check`, `course grade` and an exercise's program; `course check
//! --format json`'s shape; the Gradescope kit's `run_autograder` on folders of Gradescope's
//! layout, its results.json validated against the committed schema; and the GitHub Classroom
//! workflow, which must be the one `course github-classroom` generates.

mod common;

use common::{
    exercise_1_cohort, manifest_key_and_fixture_quizzes, package, repo, text, workspace, write,
    BIN, PERFECT_EX1,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Validates `instance` against the instructor kit's JSON Schema file `schema_file` (boon: drafts
/// 4 to 2020-12, no network).
fn validate(schema_file: &str, instance: &serde_json::Value) {
    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(kit().join(schema_file)).unwrap()).unwrap();
    let mut schemas = boon::Schemas::new();
    let mut compiler = boon::Compiler::new();
    compiler.add_resource("urn:course:schema", schema).unwrap();
    let index = compiler.compile("urn:course:schema", &mut schemas).unwrap();
    if let Err(e) = schemas.validate(instance, index) {
        panic!("{e:#}\n{instance:#}");
    }
}

fn kit() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("instructor-kit")
}

/// A course copy with the real manifest and key and the fixture quizzes (whose exercise 1 asks
/// `ntq-1`..`ntq-6`), exercise 1 (no tests) and exercise 2 (with tests: cargo is needed).
fn course_copy(dir: &Path) -> PathBuf {
    let root = dir.join("course");
    manifest_key_and_fixture_quizzes(&root);
    workspace(&root, &["exercises/exercise-2"]);
    package(&root, "exercises/exercise-2", "exercise-2");
    write(
        &root.join("exercises/exercise-2/src/lib.rs"),
        "pub fn p90() -> f64 { 0.0 }\n",
    );
    package(&root, "exercises/exercise-1", "exercise-1");
    write(&root.join("exercises/learner.toml"), "id = \"tester\"\n");
    root
}

const HALF_EX1: &str =
    "[quiz]\nntq-1 = \"Benchmark\"\nntq-2 = \"Benchmark\"\nntq-3 = \"Profile\"\n";

fn course(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .current_dir(root)
        .env("NO_COLOR", "1")
        .env("CARGO", "/nonexistent/cargo")
        .env_remove("AUTOGRADER_ROOT")
        .output()
        .unwrap()
}

#[test]
fn course_check_exits_0_passed_1_not_passed_2_could_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let answers = root.join("exercises/exercise-1/answers.toml");

    write(&answers, PERFECT_EX1);
    let o = course(&root, &["check", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));

    write(&answers, HALF_EX1);
    let o = course(&root, &["check", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("Not passed yet"), "{}", text(&o));
    // A learner's malformed answers file is theirs to fix: graded (nothing), not passed.
    write(&answers, "[quiz\n");
    let o = course(&root, &["check", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));

    // Exercise 2 has tests: without cargo (a missing toolchain) the course cannot run.
    let o = course(&root, &["check", "2"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("cannot start `cargo build`"),
        "{}",
        text(&o)
    );
    // A corrupt course file (the answer key): 2, naming it.
    write(&answers, PERFECT_EX1);
    write(&root.join("crates/grader/key/key.toml"), "[exercise-1\n");
    let o = course(&root, &["check", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("key.toml"), "{}", text(&o));
    // A bad argument is clap's 2; the help documents the rule.
    assert_eq!(course(&root, &["check", "one"]).status.code(), Some(2));
    let help = |command: &str| {
        let o = course(&root, &[command, "--help"]);
        text(&o).split_whitespace().collect::<Vec<_>>().join(" ")
    };
    let check = help("check");
    assert!(
        check.contains("Exit status: 0 passed")
            && check.contains("2 the course itself could not run"),
        "{check}"
    );
    let grade = help("grade");
    assert!(
        grade.contains("Exit status: 0 the gradebook is written"),
        "{grade}"
    );
    let gradescope = help("gradescope");
    assert!(
        gradescope.contains("Exit status: 0 results.json is written"),
        "{gradescope}"
    );
}

#[test]
fn check_json_has_points_per_check_in_the_documented_shape() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    write(&root.join("exercises/exercise-1/answers.toml"), HALF_EX1);
    let o = course(&root, &["check", "1", "--format", "json"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    validate("course-check.schema.json", &json);
    assert_eq!(
        (json["format"].as_str(), json["version"].as_u64()),
        (Some("course-check"), Some(1))
    );
    assert_eq!(json["status"], "not_passed");
    let checks = json["checks"].as_array().unwrap();
    let sum = |key: &str| checks.iter().map(|c| c[key].as_f64().unwrap()).sum::<f64>();
    assert_eq!(sum("points"), json["points"].as_f64().unwrap());
    assert_eq!(sum("max_points"), json["max_points"].as_f64().unwrap());
    // ntq-1 right, ntq-2 and ntq-3 wrong, ntq-4..6 unanswered.
    let outcome = |id: &str| {
        checks
            .iter()
            .find(|c| c["id"] == id)
            .map(|c| c["outcome"].as_str().unwrap().to_string())
    };
    assert_eq!(outcome("ntq-1").as_deref(), Some("right"));
    assert_eq!(outcome("ntq-2").as_deref(), Some("wrong"));
    assert_eq!(outcome("ntq-6").as_deref(), Some("unanswered"));
    assert!(json["points"].as_f64().unwrap() > 0.0);
    assert!(json["points"].as_f64().unwrap() < json["max_points"].as_f64().unwrap());
}

#[test]
fn check_json_says_when_the_tests_stopped_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    write(
        &root.join("exercises/exercise-2/src/lib.rs"),
        "pub fn p90() -> f64 { 0.0 }\n#[test]\nfn p90_is_right() { assert_eq!(p90(), 9.0); }\n",
    );
    let o = Command::new(BIN)
        .args(["check", "2", "--format", "json"])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .env(
            "CARGO_TARGET_DIR",
            Path::new(env!("CARGO_TARGET_TMPDIR")).join("autograders-target"),
        )
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    validate("course-check.schema.json", &json);
    assert_eq!(json["status"], "tests_failed", "{json:#}");
    assert_eq!(json["passed"], false);
    assert_eq!(json["checks"].as_array().map(Vec::len), Some(0));
}

#[test]
fn course_grade_exits_0_all_graded_1_one_not_graded_2_could_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let cohort = exercise_1_cohort(dir.path(), &[("ann", PERFECT_EX1), ("ben", HALF_EX1)]);
    let out = dir.path().join("grades");
    let grade = |extra: &[&str]| {
        let mut args = vec![
            "grade",
            cohort.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        course(&root, &args)
    };
    // Ben does not pass, but every submission is graded: done.
    let o = grade(&[]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // An archive that is not one: the gradebook is written, with cal not graded.
    write(&cohort.join("cal.zip"), "this is not a zip archive");
    let o = grade(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("Not graded: cal"), "{}", text(&o));
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    assert!(
        csv.lines().any(|l| l.starts_with("ann,")) && csv.lines().any(|l| l.starts_with("cal,")),
        "{csv}"
    );
    // No cohort folder, or a corrupt key: nothing graded, 2.
    let o = course(
        &root,
        &[
            "grade",
            dir.path().join("nowhere").to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    write(&root.join("crates/grader/key/key.toml"), "not = [toml\n");
    let o = grade(&[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// The workspace's build of a package's binary, brought up to date (the test command has built
/// every one already; under `cargo test -p course` alone, it is built here).
fn workspace_binary(package: &str) -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join("target"));
    // A no-op when the binary is up to date (as in the test command, which built it).
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "-p", package])
        .current_dir(repo())
        .status()
        .unwrap();
    assert!(status.success(), "cargo build -p {package} failed");
    target.join("debug").join(package)
}

#[test]
fn an_exercise_program_exits_0_done_1_todo_left_2_could_not_run() {
    let dir = tempfile::tempdir().unwrap();
    let exercises = dir.path().join("exercises");
    write(&exercises.join("learner.toml"), "id = \"tester\"\n");
    let ex4 = exercises.join("exercise-4");
    std::fs::create_dir_all(ex4.join("results")).unwrap();
    let manifest =
        course_model::manifest::Manifest::load(&repo().join("exercises/info.toml")).unwrap();
    write(
        &ex4.join("answers.toml"),
        &manifest.exercise(4).unwrap().answers_template,
    );
    let run = |package: &str, extra: &[&str]| {
        Command::new(workspace_binary(package))
            .arg("--exercise-dir")
            .arg(&ex4)
            .args(extra)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    // The untouched exercise stops at the learner's first todo!(): not passed, and never a
    // panic's 101.
    let o = run("exercise-4", &[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("not yet implemented"), "{}", text(&o));
    // The same program with the functions written (the reference solution): without exercise
    // 3's profile it cannot run (2); with one, it is done (0).
    let o = run("solution-4", &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("do exercise 3 first"), "{}", text(&o));
    let profile = repo().join("crates/grader/tests/fixtures/reports/cpu-b1-t8-stock-mlp.json");
    let o = run("solution-4", &["--profile", profile.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // A corrupt profile: 2.
    let corrupt = dir.path().join("report.json");
    write(&corrupt, "{\"rows\": [");
    let o = run("solution-4", &["--profile", corrupt.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

/// A folder of Gradescope's layout: submission/ holding `files`, the metadata of one user,
/// results/.
fn gradescope_root(dir: &Path, email: &str, files: &[(&str, &str)]) -> PathBuf {
    let root = dir.join("autograder");
    for (path, content) in files {
        write(&root.join("submission").join(path), content);
    }
    write(
        &root.join("submission_metadata.json"),
        &format!(
            r#"{{"id": 123456, "created_at": "2027-01-15T10:00:00.000000-08:00",
               "assignment": {{"id": 42, "title": "Benchmark or profile", "due_date": "2027-01-16T23:59:00.000000-08:00"}},
               "submission_method": "upload",
               "users": [{{"email": "{email}", "id": 9876, "name": "A Learner"}}],
               "previous_submissions": []}}"#
        ),
    );
    std::fs::create_dir_all(root.join("results")).unwrap();
    root
}

fn run_autograder(root: &Path, roster: &Path, exercises: &str) -> (Output, serde_json::Value) {
    let o = Command::new("bash")
        .arg(kit().join("gradescope/run_autograder"))
        .env("AUTOGRADER_ROOT", root)
        .env("COURSE_ROOT", repo())
        .env("COURSE_BIN", BIN)
        .env("COURSE_ROSTER", roster)
        .env("COURSE_EXERCISES", exercises)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let results = std::fs::read_to_string(root.join("results/results.json"))
        .unwrap_or_else(|e| panic!("no results.json ({e}): {}", text(&o)));
    (o, serde_json::from_str(&results).unwrap())
}

fn assert_valid_gradescope(results: &serde_json::Value) {
    validate("gradescope/results.schema.json", results);
}

fn roster(dir: &Path) -> PathBuf {
    let path = dir.join("roster.csv");
    write(
        &path,
        "course_id,email,gradescope_id\nada,ada@example.edu,\nbob,,9876\n",
    );
    path
}

#[test]
fn gradescope_kit_gives_the_reference_solutions_full_marks_and_validates() {
    let dir = tempfile::tempdir().unwrap();
    let solution = |n: u32| {
        std::fs::read_to_string(repo().join(format!("solutions/exercise-{n}/answers.toml")))
            .unwrap()
    };
    let (one, six) = (solution(1), solution(6));
    let root = gradescope_root(
        dir.path(),
        "Ada@Example.edu",
        &[
            ("course/exercises/learner.toml", "id = \"ada\"\n"),
            ("course/exercises/exercise-1/answers.toml", &one),
            ("course/exercises/exercise-6/answers.toml", &six),
        ],
    );
    let (o, results) = run_autograder(&root, &roster(dir.path()), "1,6");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_valid_gradescope(&results);
    assert!(
        results["output"]
            .as_str()
            .unwrap()
            .contains("Graded as learner `ada`"),
        "{results:#}"
    );
    let tests = results["tests"].as_array().unwrap();
    let graded: Vec<&serde_json::Value> = tests
        .iter()
        .filter(|t| t["max_score"].as_f64().unwrap() > 0.0)
        .collect();
    assert!(graded.len() >= 8, "{results:#}");
    for t in &graded {
        let output = t["output"].as_str().unwrap();
        // Full marks, but for the answers only an instructor may award (they wait, at 0).
        if output.contains("awaits review") {
            assert_eq!(t["score"].as_f64(), Some(0.0), "{t:#}");
        } else {
            assert_eq!(t["score"], t["max_score"], "{t:#}");
            assert_eq!(t["status"], "passed");
        }
        assert_eq!(t["visibility"], "visible");
    }
    // The graded bank's model answers are shown after the due date only, and never in the
    // visible tests.
    let models: Vec<&serde_json::Value> = tests
        .iter()
        .filter(|t| t["name"].as_str().unwrap().ends_with("(model answer)"))
        .collect();
    assert!(!models.is_empty(), "{results:#}");
    for m in &models {
        assert_eq!(
            (m["visibility"].as_str(), m["max_score"].as_f64()),
            (Some("after_due_date"), Some(0.0))
        );
        let model = m["output"].as_str().unwrap();
        assert!(
            graded
                .iter()
                .all(|t| !t["output"].as_str().unwrap().contains(model)),
            "{model}"
        );
    }
}

#[test]
fn gradescope_kit_gives_a_failing_submission_partial_marks_and_flags_a_stranger() {
    let dir = tempfile::tempdir().unwrap();
    let mut one =
        std::fs::read_to_string(repo().join("solutions/exercise-1/answers.toml")).unwrap();
    // Every Benchmark scenario answered Profile: those drawn are wrong.
    one = one.replace("= \"Benchmark\"", "= \"Profile\"");
    let root = gradescope_root(
        dir.path(),
        "someone@example.edu",
        &[
            ("exercises/learner.toml", "id = \"ada\"\n"),
            ("exercises/exercise-1/answers.toml", &one),
        ],
    );
    // Gradescope user 9876 is bob in the roster, but the files are ada's: graded by the id in
    // them (their variant), and flagged.
    let (o, results) = run_autograder(&root, &roster(dir.path()), "");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_valid_gradescope(&results);
    let tests = results["tests"].as_array().unwrap();
    let score: f64 = tests.iter().map(|t| t["score"].as_f64().unwrap()).sum();
    let max: f64 = tests.iter().map(|t| t["max_score"].as_f64().unwrap()).sum();
    assert!(score > 0.0 && score < max / 4.0, "{score}/{max}");
    assert!(
        tests
            .iter()
            .any(|t| t["status"] == "failed"
                && t["name"].as_str().unwrap().starts_with("Exercise 1:"))
    );
    // Every exercise is graded: the ones not submitted are there, at 0.
    for n in 2..=8 {
        assert!(
            tests.iter().any(|t| t["name"]
                .as_str()
                .unwrap()
                .starts_with(&format!("Exercise {n}:"))),
            "exercise {n}: {results:#}"
        );
    }
    let output = results["output"].as_str().unwrap();
    assert!(
        output.contains("learner id is \"ada\", but the submission is named \"bob\""),
        "{output}"
    );

    // Not in the roster at all: graded by the submission's own id, the instructor told.
    write(
        &root.join("submission_metadata.json"),
        r#"{"users": [{"email": "x@example.edu", "id": 1}]}"#,
    );
    let (_, results) = run_autograder(&root, &roster(dir.path()), "1");
    assert_valid_gradescope(&results);
    assert!(
        results["output"]
            .as_str()
            .unwrap()
            .contains("x@example.edu is not in the course roster"),
        "{results:#}"
    );

    // No submission folder (a broken layout): the course cannot run, no results.json: 2.
    let empty = dir.path().join("empty");
    std::fs::create_dir_all(empty.join("results")).unwrap();
    let o = Command::new("bash")
        .arg(kit().join("gradescope/run_autograder"))
        .env("AUTOGRADER_ROOT", &empty)
        .env("COURSE_ROOT", repo())
        .env("COURSE_BIN", BIN)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(!empty.join("results/results.json").exists());
}

#[test]
fn the_classroom_workflow_is_the_one_the_course_generates() {
    let committed = kit().join("github-classroom/classroom.yml");
    let o = Command::new(BIN)
        .args(["--root", repo().to_str().unwrap(), "github-classroom"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let generated = String::from_utf8(o.stdout).unwrap();
    if std::env::var_os("COURSE_BLESS").is_some() {
        std::fs::write(&committed, &generated).unwrap();
    }
    let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
    assert!(
        on_disk == generated,
        "{} is not what `course github-classroom` prints: regenerate it with `course github-classroom > {}`",
        committed.display(),
        committed.display()
    );
    // One grader step per exercise of info.toml, each running `course check N`, and the reporter
    // naming every step.
    let manifest =
        course_model::manifest::Manifest::load(&repo().join("exercises/info.toml")).unwrap();
    for e in &manifest.exercises {
        assert!(
            generated.contains(&format!(
                "command: target/debug/course check {}\n",
                e.number
            )),
            "{generated}"
        );
    }
    assert_eq!(
        generated.matches("autograding-command-grader@v1").count(),
        manifest.exercises.len()
    );
    let runners: Vec<String> = manifest
        .exercises
        .iter()
        .map(|e| format!("exercise-{}", e.number))
        .collect();
    assert!(
        generated.contains(&format!("runners: {}\n", runners.join(","))),
        "{generated}"
    );
}
