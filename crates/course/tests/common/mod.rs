//! What every `course` integration test needs: the binary under test, the real course it
//! copies from, a file writer that makes the folders on the way, and the pieces of a small
//! course root the tests build (manifest files, one-package workspaces, exercise 2's p90).
#![allow(dead_code, reason = "each test file uses some of the shared helpers")]

use std::path::{Path, PathBuf};
use std::process::Output;

pub const BIN: &str = env!("CARGO_BIN_EXE_course");

/// Exercise 1's quiz, every answer right.
pub const PERFECT_EX1: &str = "[quiz]\nntq-1 = \"Benchmark\"\nntq-2 = \"Profile\"\nntq-3 = \"Benchmark\"\nntq-4 = \"Profile\"\nntq-5 = \"Benchmark\"\nntq-6 = \"Profile\"\n";

/// The course this crate belongs to (the workspace root).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes `text` to `path`, creating its folders.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Copies the course's file `rel` to the same place under `root`.
pub fn copy_from_repo(root: &Path, rel: &str) {
    write(
        &root.join(rel),
        &std::fs::read_to_string(repo().join(rel)).unwrap(),
    );
}

/// The course's manifest and default key, and the fixture quizzes (whose exercise 1 asks
/// `ntq-1`..`ntq-6`) as `root`'s question bank.
pub fn manifest_key_and_fixture_quizzes(root: &Path) {
    copy_from_repo(root, "exercises/info.toml");
    copy_from_repo(root, "crates/grader/key/key.toml");
    for name in ["routing.toml", "check-yourself.toml"] {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/quizzes")
                .join(name),
        )
        .unwrap();
        write(&root.join(course_model::quiz::BANK_DIR).join(name), &text);
    }
}

/// A cohort folder in `dir`, one submission a (learner, exercise 1's answers.toml) pair.
pub fn exercise_1_cohort(dir: &Path, answers: &[(&str, &str)]) -> PathBuf {
    let cohort = dir.join("cohort");
    for (learner, toml) in answers {
        write(
            &cohort
                .join(learner)
                .join("exercises/exercise-1/answers.toml"),
            toml,
        );
    }
    cohort
}

/// The workspace manifest of a course root whose packages are `members`.
pub fn workspace(root: &Path, members: &[&str]) {
    let members: Vec<String> = members.iter().map(|m| format!("{m:?}")).collect();
    write(
        &root.join("Cargo.toml"),
        &format!(
            "[workspace]\nresolver = \"2\"\nmembers = [{}]\n",
            members.join(", ")
        ),
    );
}

/// A package manifest, no dependencies, for the package `name` in `root`'s folder `dir`.
pub fn package(root: &Path, dir: &str, name: &str) {
    write(
        &root.join(dir).join("Cargo.toml"),
        &format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n"),
    );
}

/// The answers.toml template the course's manifest gives exercise `n`.
pub fn template(n: u32) -> String {
    let manifest = grader::Manifest::load(&repo().join("exercises/info.toml")).unwrap();
    manifest.exercise(n).unwrap().answers_template.clone()
}

/// A command's stdout then its stderr, for failure messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Exercise 2 as the `--run-tests` grading tests give it: a p90 for learners to write, and an
/// integration test (the course's own, which a submission cannot replace) that calls it.
pub mod p90 {
    use super::{copy_from_repo, package, repo, write};
    use std::path::Path;

    /// The instructor's exercise-2 library, the p90 left to write.
    pub const COURSE_LIB: &str =
        "pub fn p90(sample: &[f64]) -> f64 { let _ = sample; todo!(\"sort, then interpolate\") }\n";
    /// The course's test of exercise 2.
    pub const COURSE_TEST: &str = "#[test]\nfn p90_of_one_to_ten() {\n    let sample: Vec<f64> = (1..=10).map(f64::from).collect();\n    \
                                   assert!((exercise_2::p90(&sample) - 9.1).abs() < 1e-9, \"p90 of 1..=10 is 9.1\");\n}\n";
    /// A right p90 (linear interpolation between the closest ranks).
    pub const RIGHT: &str = "pub fn p90(sample: &[f64]) -> f64 {\n    let mut s = sample.to_vec();\n    s.sort_by(f64::total_cmp);\n    \
                             let rank = 0.9 * (s.len() - 1) as f64;\n    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);\n    \
                             s[lo] + (s[hi] - s[lo]) * (rank - lo as f64)\n}\n";

    /// A course at `root` with exercise 2 to test: the real manifest, key, question bank and
    /// quizzes, and the exercise-2 package. The caller writes the workspace's Cargo.toml.
    pub fn course(root: &Path) {
        copy_from_repo(root, "exercises/info.toml");
        // The grader's question bank, key and quizzes, as the course has them.
        for folder in [
            "crates/grader/key",
            "crates/grader/bank",
            "book/src/quizzes",
        ] {
            for entry in std::fs::read_dir(repo().join(folder)).unwrap().flatten() {
                if entry.path().extension().is_some_and(|e| e == "toml") {
                    write(
                        &root.join(folder).join(entry.file_name()),
                        &std::fs::read_to_string(entry.path()).unwrap(),
                    );
                }
            }
        }
        package(root, "exercises/exercise-2", "exercise-2");
        write(&root.join("exercises/exercise-2/src/lib.rs"), COURSE_LIB);
        write(&root.join("exercises/exercise-2/tests/p90.rs"), COURSE_TEST);
    }
}
