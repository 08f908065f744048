//! `course run 3`'s prediction, on a small course copy whose exercise 3 writes a committed
//! report fixture: without a terminal it says so and does not ask; a recorded prediction is
//! kept and shown next to the measurement after the run.

mod common;

use common::{copy_from_repo, package, repo, template, text, workspace, write, BIN};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The real manifest and key, and an exercise 3 that "profiles" by copying the grader's CPU
/// report fixture into its results.
fn course_copy(dir: &Path) -> PathBuf {
    let root = dir.join("course");
    copy_from_repo(&root, "exercises/info.toml");
    copy_from_repo(&root, "crates/grader/key/key.toml");
    workspace(&root, &["exercises/exercise-3"]);
    package(&root, "exercises/exercise-3", "exercise-3");
    let fixture = repo().join("crates/grader/tests/fixtures/reports/cpu-b1-t8-stock-mlp.json");
    write(
        &root.join("exercises/exercise-3/fixture.json"),
        &std::fs::read_to_string(fixture).unwrap(),
    );
    write(
        &root.join("exercises/exercise-3/src/main.rs"),
        "fn main() {\n    let dir = env!(\"CARGO_MANIFEST_DIR\");\n    std::fs::create_dir_all(format!(\"{dir}/results\")).unwrap();\n    \
         std::fs::copy(format!(\"{dir}/fixture.json\"), format!(\"{dir}/results/report.json\")).unwrap();\n    println!(\"profiled\");\n}\n",
    );
    write(
        &root.join("exercises/exercise-3/answers.toml"),
        &template(3),
    );
    // The learner id `course run` would otherwise ask for.
    write(&root.join("exercises/learner.toml"), "id = \"tester\"\n");
    root
}

fn course(root: &Path, args: &[&str]) -> Output {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("course-prediction-target");
    Command::new(BIN)
        .args(args)
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target)
        .env("NO_COLOR", "1")
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn without_a_terminal_it_says_so_and_does_not_ask() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let o = course(&root, &["run", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("Not asking for your prediction: stdin is not a terminal"),
        "{}",
        text(&o)
    );
    assert!(text(&o).contains("profiled"), "{}", text(&o));
    // Nothing was recorded.
    assert_eq!(
        std::fs::read_to_string(root.join("exercises/exercise-3/answers.toml")).unwrap(),
        template(3)
    );
}

#[test]
fn a_recorded_prediction_is_kept_and_shown_beside_the_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let answers = template(3)
        .replacen("op = \"\"", "op = \"gelu\"", 1)
        .replacen("share_pct = \"\"", "share_pct = 30", 1)
        .replacen(
            "made_at = \"\"",
            "made_at = \"Mon, 01 Jan 2024 09:03:12 GMT\"",
            1,
        )
        .replacen("report_existed = \"\"", "report_existed = false", 1);
    write(&root.join("exercises/exercise-3/answers.toml"), &answers);
    let o = course(&root, &["run", "3"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("Your prediction is recorded"), "{out}");
    assert!(
        out.contains("You predicted `gelu` at 30.0%; the table's top op by self CPU time is `matmul` at 60.9%, and `gelu` is #3 at 13.4%"),
        "{out}"
    );
    assert_eq!(
        std::fs::read_to_string(root.join("exercises/exercise-3/answers.toml")).unwrap(),
        answers,
        "kept as it was"
    );
}
