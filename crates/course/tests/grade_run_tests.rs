//! `course grade --run-tests` on a tiny cohort: real `cargo test` builds of each learner's
//! exercise package, in the sandbox. One learner's code loops forever, one allocates without
//! bound, one opens a network connection: grading finishes, the others are graded, and those
//! three are flagged with what happened. The course is a small fixture (the real manifest and
//! key, an exercise-2 package with no dependencies), so nothing heavy is compiled.

mod common;

use common::p90::{self, RIGHT};
use common::{package, text, workspace, write, BIN};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Looks right, is the nearest-rank P90 (9.0): a wrong answer.
const WRONG: &str = "pub fn p90(sample: &[f64]) -> f64 {\n    let mut s = sample.to_vec();\n    s.sort_by(f64::total_cmp);\n    \
                     s[(0.9 * (s.len() - 1) as f64) as usize]\n}\n";
const LOOPS: &str = "pub fn p90(sample: &[f64]) -> f64 {\n    let mut n = 0u64;\n    loop {\n        n = std::hint::black_box(n.wrapping_add(1));\n        \
                     if n == 0 { return sample[0]; }\n    }\n}\n";
const ALLOCATES: &str = "pub fn p90(sample: &[f64]) -> f64 {\n    let mut hoard: Vec<Vec<u8>> = Vec::new();\n    loop {\n        \
                         hoard.push(vec![1u8; 1 << 20]);\n        if hoard.len() == usize::MAX { return sample[0]; }\n    }\n}\n";
const NETWORK: &str = "pub fn p90(sample: &[f64]) -> f64 {\n    use std::io::Write;\n    \
                       let mut s = std::net::TcpStream::connect((\"203.0.113.7\", 80)).unwrap();\n    \
                       s.write_all(b\"GET /answers HTTP/1.0\\r\\n\\r\\n\").unwrap();\n    sample[0]\n}\n";

/// Exercise 2 to test, with the reference solution the scratch copy must not give away.
fn course_copy(dir: &Path) -> PathBuf {
    let root = dir.join("course");
    p90::course(&root);
    workspace(&root, &["exercises/exercise-2", "solutions/*"]);
    package(&root, "solutions/exercise-2", "solution-2");
    write(&root.join("solutions/exercise-2/src/lib.rs"), RIGHT);
    root
}

fn submit(cohort: &Path, student: &str, lib: &str) -> PathBuf {
    let folder = cohort.join(student).join("exercises/exercise-2");
    write(&folder.join("src/lib.rs"), lib);
    folder
}

#[test]
fn run_tests_flags_the_looping_the_hoarding_and_the_networking_learner_and_grades_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let cohort = dir.path().join("cohort");
    submit(&cohort, "ann", RIGHT);
    // Ben's wrong p90 comes with a test of his own that passes: the course's test is run instead.
    let ben = submit(&cohort, "ben", WRONG);
    write(
        &ben.join("tests/p90.rs"),
        "#[test]\nfn p90_of_one_to_ten() {}\n",
    );
    submit(&cohort, "cat", LOOPS);
    submit(&cohort, "dan", ALLOCATES);
    submit(&cohort, "eve", NETWORK);
    // Gil pulls the reference solution in at compile time: the scratch copy has none to give.
    submit(
        &cohort,
        "gil",
        "include!(\"../../../solutions/exercise-2/src/lib.rs\");\n",
    );
    // Fay submits an archive of her course copy.
    let fay = dir.path().join("fay-src");
    write(&fay.join("course/exercises/exercise-2/src/lib.rs"), RIGHT);
    let tar = Command::new("tar")
        .arg("czf")
        .arg(cohort.join("fay.tar.gz"))
        .arg("-C")
        .arg(&fay)
        .arg("course")
        .status();
    let archived = tar.is_ok_and(|s| s.success());

    // Started as root, the tests run as an unprivileged user, who must not be able to open the
    // cohort (the other learners' submissions): course grade refuses a folder others can read.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&cohort, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    let out = dir.path().join("grades");
    let build_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("grade-run-tests");
    let o = Command::new(BIN)
        .args([
            "grade",
            cohort.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--run-tests",
        ])
        .args([
            "--test-timeout",
            "5",
            "--test-memory",
            "256M",
            "--test-dir",
            build_dir.to_str().unwrap(),
        ])
        .current_dir(&root)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    let all = text(&o);
    assert_eq!(o.status.code(), Some(0), "{all}");
    // Without root the file system is not isolated; as root (CI) the tests run as another user
    // and the process group is what is not: either way the output names what is not.
    assert!(
        all.contains("NOT isolated: "),
        "the output says what is not isolated: {all}"
    );
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    let row = |student: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("{student},")))
            .unwrap_or_else(|| panic!("{student} in {csv}"))
            .to_string()
    };
    assert!(
        csv.lines().next().unwrap().ends_with(",flags,tests"),
        "{csv}"
    );

    assert!(
        row("ann").contains("ex2: passed (1 test)") && !row("ann").contains("tests-"),
        "{csv}"
    );
    assert!(
        row("ben").contains("tests-failed:2") && row("ben").contains("ex2: failed 1 (0 passed)"),
        "{csv}"
    );
    assert!(
        row("cat").contains("tests-timeout:2") && row("cat").contains("ex2: timed out after 5 s"),
        "{csv}"
    );
    assert!(
        row("dan").contains("tests-out-of-memory:2")
            && row("dan").contains("out of memory (limit 256 MiB)"),
        "{csv}"
    );
    assert!(row("gil").contains("tests-build-failed:2"), "{csv}");
    if archived {
        assert!(row("fay").contains("ex2: passed (1 test)"), "{csv}");
    }
    if all.contains("network: own") {
        assert!(
            row("eve").contains("tests-network:2") && row("eve").contains("ex2: network refused"),
            "{csv}"
        );
    } else {
        assert!(all.contains("network: NOT ISOLATED"), "{all}");
    }

    let feedback = std::fs::read_to_string(out.join("feedback/cat.md")).unwrap();
    assert!(
        feedback.contains("Exercise 2: timed out after 5 s."),
        "{feedback}"
    );
    let feedback = std::fs::read_to_string(out.join("feedback/dan.md")).unwrap();
    assert!(
        feedback.contains("memory allocation of"),
        "the feedback shows the failed allocation: {feedback}"
    );
    let feedback = std::fs::read_to_string(out.join("feedback/ben.md")).unwrap();
    assert!(
        feedback.contains("p90 of 1..=10 is 9.1"),
        "the feedback shows the failing assertion: {feedback}"
    );

    // Nothing ran in the instructor's tree: the course's own files are as they were.
    assert_eq!(
        std::fs::read_to_string(root.join("exercises/exercise-2/src/lib.rs")).unwrap(),
        p90::COURSE_LIB
    );
    assert!(
        !root.join("target").exists(),
        "nothing was built in the course folder"
    );
}

#[test]
fn test_limits_need_run_tests_and_nonsense_limits_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let cohort = dir.path().join("cohort");
    std::fs::create_dir_all(&cohort).unwrap();
    let run = |args: &[&str]| {
        Command::new(BIN)
            .arg("grade")
            .arg(&cohort)
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap()
    };
    let o = run(&["--test-timeout", "5"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--run-tests"), "{}", text(&o));
    let o = run(&["--run-tests", "--test-memory", "lots"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("not a size"), "{}", text(&o));
    let o = run(&[
        "--run-tests",
        "--test-dir",
        root.join("exercises/scratch").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        text(&o).contains("never run in the instructor's tree"),
        "{}",
        text(&o)
    );
}
