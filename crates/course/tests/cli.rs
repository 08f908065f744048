//! The real `course` binary on a small course copy: exit codes, the check pipeline, hints,
//! solutions, reset, progress that survives restarts, and grading a cohort.

mod common;

use common::{
    exercise_1_cohort, manifest_key_and_fixture_quizzes, package, template, text, workspace, write,
    BIN, PERFECT_EX1,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A course copy: the real manifest and key, fixture quizzes, and a cargo workspace with two
/// tiny exercise packages (exercise-1 without tests, exercise-2 with one).
fn course_copy(dir: &Path) -> PathBuf {
    let root = dir.join("course");
    manifest_key_and_fixture_quizzes(&root);
    workspace(&root, &["exercises/exercise-1", "exercises/exercise-2"]);
    package(&root, "exercises/exercise-1", "exercise-1");
    write(&root.join("exercises/exercise-1/src/main.rs"), "fn main() { println!(\"exercise one ran with {:?}\", std::env::args().skip(1).collect::<Vec<_>>()); }\n");
    write(
        &root.join("exercises/exercise-1/answers.toml"),
        &template(1),
    );
    package(&root, "exercises/exercise-2", "exercise-2");
    write(&root.join("exercises/exercise-2/src/lib.rs"), "pub fn p90() -> f64 { 0.0 }\n#[test]\nfn p90_is_right() { assert_eq!(p90(), 9.0, \"TODO: implement p90\"); }\n");
    write(
        &root.join("exercises/exercise-2/answers.toml"),
        &template(2),
    );
    write(
        &root.join("solutions/exercise-1/answers.toml"),
        "[quiz]\nntq-1 = \"Benchmark\"\n",
    );
    // The learner id `course run` and `check` would otherwise ask for (tests/variants.rs asks).
    write(&root.join("exercises/learner.toml"), "id = \"tester\"\n");
    root
}

fn course(root: &Path, args: &[&str]) -> Output {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("course-cli-target");
    Command::new(BIN)
        .args(args)
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

#[test]
fn help_works_for_every_command() {
    for args in [
        vec!["--help"],
        vec!["list", "--help"],
        vec!["run", "--help"],
        vec!["check", "--help"],
        vec!["hint", "--help"],
        vec!["watch", "--help"],
        vec!["reset", "--help"],
        vec!["solution", "--help"],
        vec!["grade", "--help"],
        vec!["id", "--help"],
        vec!["bench", "--help"],
    ] {
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    let o = Command::new(BIN).arg("frobnicate").output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(2),
        "an unknown command is a usage error"
    );
}

#[test]
fn outside_a_course_it_says_where_to_run() {
    let dir = tempfile::tempdir().unwrap();
    let o = course(dir.path(), &["list"]);
    // The course could not run: 2 (course_model::exit).
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("no exercises/info.toml"), "{}", text(&o));
}

#[test]
fn check_list_hint_solution_and_progress() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());

    let o = course(&root, &["list"]);
    assert!(o.status.success());
    assert!(text(&o).contains("0 of 8 exercises done"), "{}", text(&o));

    // The untouched exercise builds, but its check fails with a report.
    let o = course(&root, &["check", "1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(
        text(&o).contains("[1/3] build") && text(&o).contains("NOT PASSED"),
        "{}",
        text(&o)
    );

    // The solution is refused before the exercise passes, shown with --force and recorded.
    assert_eq!(course(&root, &["solution", "1"]).status.code(), Some(1));
    let o = course(&root, &["solution", "1", "--force"]);
    assert!(
        o.status.success() && text(&o).contains("solutions/exercise-1/answers.toml"),
        "{}",
        text(&o)
    );

    write(&root.join("exercises/exercise-1/answers.toml"), PERFECT_EX1);
    let o = course(&root, &["check", "1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("PASSED")
            && text(&o).contains("the solution was shown before this exercise passed"),
        "{}",
        text(&o)
    );

    // JSON output is clean on stdout.
    let o = course(&root, &["check", "1", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(json["passed"], true);

    // Progress survives: a new process sees exercise 1 done.
    let o = course(&root, &["list"]);
    assert!(text(&o).contains("1 of 8 exercises done"), "{}", text(&o));
    let progress = std::fs::read_to_string(root.join("exercises/.course-progress.json")).unwrap();
    assert!(
        progress.contains("\"solution_viewed_before_pass\": true"),
        "{progress}"
    );

    // Hints come one at a time.
    // (the count is the manifest's, read from the first hint's header, not written here).
    let first = text(&course(&root, &["hint", "2"]));
    let total: usize = first
        .split("Hint 1 of ")
        .nth(1)
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no `Hint 1 of N` header: {first}"));
    assert!(total >= 2 && !first.contains("Hint 2 of"), "{first}");
    let second = text(&course(&root, &["hint", "2"]));
    assert!(
        second.contains(&format!("Hint 2 of {total}")) && !second.contains("Hint 3 of"),
        "{second}"
    );
    for _ in 2..total {
        course(&root, &["hint", "2"]);
    }
    assert!(text(&course(&root, &["hint", "2"])).contains("That is every hint"));

    // Exercise 2 has tests: a failing test stops the pipeline before grading.
    let o = course(&root, &["check", "2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o).contains("tests fail"), "{}", text(&o));
    assert!(!text(&o).contains("[3/3] grade"), "{}", text(&o));

    // No such exercise.
    let o = course(&root, &["check", "9"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("there is no exercise 9"), "{}", text(&o));
}

#[test]
fn an_exercise_without_tests_is_graded_without_a_build() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    // Exercise 1 has no tests (info.toml): its check grades answers.toml and never runs cargo,
    // so neither source that does not compile nor a cargo that cannot start stops it.
    write(
        &root.join("exercises/exercise-1/src/main.rs"),
        "fn main() { this does not compile }\n",
    );
    write(&root.join("exercises/exercise-1/answers.toml"), PERFECT_EX1);
    let without_cargo = |n: &str| {
        Command::new(BIN)
            .args(["check", n])
            .current_dir(&root)
            .env("CARGO", "/nonexistent/cargo")
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let o = without_cargo("1");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(
        text(&o).contains("[1/3] build: none needed") && text(&o).contains("PASSED"),
        "{}",
        text(&o)
    );
    // Exercise 2 has tests: it is built and tested, so here cargo is needed and its absence said.
    let o = without_cargo("2");
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("[1/3] build: cargo build -p exercise-2")
            && text(&o).contains("cannot start `cargo build`"),
        "{}",
        text(&o)
    );
}

#[test]
fn run_passes_arguments_and_reset_restores_the_template() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let o = course(&root, &["run", "1", "--", "--device", "cpu"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("exercise one ran with [\"--device\", \"cpu\"]"),
        "{}",
        text(&o)
    );

    write(&root.join("exercises/exercise-1/answers.toml"), PERFECT_EX1);
    // Without a terminal and without --yes, reset refuses rather than guess.
    let o = course(&root, &["reset", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = course(&root, &["reset", "1", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(root.join("exercises/exercise-1/answers.toml")).unwrap(),
        template(1).trim_start()
    );
}

#[test]
fn grade_writes_the_gradebook_and_refuses_a_bad_key() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let cohort = exercise_1_cohort(dir.path(), &[("ann", PERFECT_EX1), ("ben", "[quiz\n")]);
    let out = dir.path().join("grades");
    let o = course(
        &root,
        &[
            "grade",
            cohort.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    // Six of exercise 1's seven points: its why line waits for the instructor.
    assert!(csv.lines().any(|l| l.starts_with("ann,85.71,")), "{csv}");
    assert!(
        csv.lines()
            .any(|l| l.starts_with("ben,0,") && l.contains("malformed:1")),
        "{csv}"
    );
    assert!(out.join("feedback/ben.md").is_file());
    assert!(text(&o).contains("Graded 2 students"), "{}", text(&o));

    let o = course(
        &root,
        &[
            "grade",
            cohort.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--key",
            dir.path().to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).contains("key.toml"), "{}", text(&o));
}

#[test]
fn reset_in_a_git_clone_restores_the_committed_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let git = |args: &[&str]| {
        let o = Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(&root)
            .output()
            .unwrap();
        assert!(o.status.success(), "git {args:?}: {}", text(&o));
    };
    git(&["init", "-q"]);
    git(&["add", "."]);
    git(&["commit", "-q", "-m", "start"]);
    write(&root.join("exercises/exercise-1/answers.toml"), PERFECT_EX1);
    write(
        &root.join("exercises/exercise-1/src/main.rs"),
        "fn main() { /* my work */ }\n",
    );
    let o = course(&root, &["reset", "1", "--yes"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("answers.toml") && text(&o).contains("main.rs"),
        "lists what it restores: {}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(root.join("exercises/exercise-1/answers.toml")).unwrap(),
        template(1)
    );
    assert!(
        !std::fs::read_to_string(root.join("exercises/exercise-1/src/main.rs"))
            .unwrap()
            .contains("my work")
    );
    let o = course(&root, &["reset", "1", "--yes"]);
    assert!(
        text(&o).contains("already has its starting files"),
        "{}",
        text(&o)
    );
}

/// Wait until the child's output (both streams) contains `pattern`, or give up after a
/// generous limit (this checks behaviour, not speed).
fn wait_for(lines: &std::sync::mpsc::Receiver<String>, seen: &mut String, pattern: &str) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !seen.contains(pattern) {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match lines.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(_) => return false,
        }
    }
    true
}

/// `course watch` in `root`, with its output (both streams) line by line.
fn spawn_watch(root: &Path) -> (std::process::Child, std::sync::mpsc::Receiver<String>) {
    use std::io::BufRead;
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("course-cli-target");
    let mut child = Command::new(BIN)
        .args(["watch"])
        .current_dir(root)
        .env("CARGO_TARGET_DIR", target)
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    for stream in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stream)
                .lines()
                .map_while(Result::ok)
            {
                let _ = tx.send(line);
            }
        });
    }
    (child, rx)
}

#[test]
fn watch_rechecks_on_save_and_moves_on_when_it_passes() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let (mut child, rx) = spawn_watch(&root);
    let mut seen = String::new();
    let first = wait_for(&rx, &mut seen, "Watching");
    if first {
        write(&root.join("exercises/exercise-1/answers.toml"), PERFECT_EX1);
    }
    let moved_on = first && wait_for(&rx, &mut seen, "Watching exercise 2 next");
    let _ = child.kill();
    let _ = child.wait();
    assert!(first, "watch did not start: {seen}");
    assert!(moved_on, "watch did not re-check and move on: {seen}");
    assert!(
        seen.contains("NOT PASSED") && seen.contains("PASSED"),
        "{seen}"
    );
}

/// Collect the child's output for `quiet` (the checks it runs meanwhile are what is counted).
fn collect_for(
    lines: &std::sync::mpsc::Receiver<String>,
    seen: &mut String,
    quiet: std::time::Duration,
) {
    let until = std::time::Instant::now() + quiet;
    while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                seen.push_str(&line);
                seen.push('\n');
            }
            Err(_) => break,
        }
    }
}

#[test]
fn watch_left_alone_checks_once_and_an_edit_checks_once_more() {
    let dir = tempfile::tempdir().unwrap();
    let root = course_copy(dir.path());
    let (mut child, rx) = spawn_watch(&root);
    // Each failed check ends with this line.
    let checks = |seen: &str| seen.matches("for changes (Ctrl-C to stop)").count();
    let mut seen = String::new();
    let started = wait_for(&rx, &mut seen, "for changes (Ctrl-C to stop)");
    // Left alone: the check's own reads (cargo fingerprints the package) must not re-trigger it.
    collect_for(&rx, &mut seen, std::time::Duration::from_secs(6));
    let alone = checks(&seen);
    // Saving the same bytes again is not a change either.
    write(
        &root.join("exercises/exercise-1/answers.toml"),
        &template(1),
    );
    collect_for(&rx, &mut seen, std::time::Duration::from_secs(3));
    let same_bytes = checks(&seen);
    // A real edit (still not passing) checks exactly once more.
    write(
        &root.join("exercises/exercise-1/answers.toml"),
        "[quiz]\nntq-1 = \"Benchmark\"\n",
    );
    let mut later = String::new();
    let rechecked = wait_for(&rx, &mut later, "for changes (Ctrl-C to stop)");
    collect_for(&rx, &mut later, std::time::Duration::from_secs(6));
    let after_edit = same_bytes + checks(&later);
    seen.push_str(&later);
    let _ = child.kill();
    let _ = child.wait();
    assert!(started, "watch did not start: {seen}");
    assert_eq!(alone, 1, "a watch left alone checked {alone} times: {seen}");
    assert_eq!(same_bytes, 1, "rewriting the same bytes re-checked: {seen}");
    assert!(rechecked, "the edit was not checked: {seen}");
    assert_eq!(
        after_edit,
        2,
        "one edit gave {} checks: {seen}",
        after_edit - 1
    );
}

#[test]
fn bench_runs_outside_a_course_and_compares_two_files() {
    // `course bench` is the bench crate's client; here only its wiring is checked: it needs no
    // course copy, and a bad comparison is an error with exit code 1.
    let dir = tempfile::tempdir().unwrap();
    let o = course(
        dir.path(),
        &["bench", "--compare", "missing-a.json", "missing-b.json"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("missing-a.json"), "{}", text(&o));
    assert!(
        !text(&o).contains("exercises/info.toml"),
        "bench must not look for a course: {}",
        text(&o)
    );
}
