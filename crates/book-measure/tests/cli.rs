//! The real binary on the real checkout: what it lists, what it refuses, what --check says, and
//! that the committed measured files load.

use std::path::Path;
use std::process::Command;

fn book_measure(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_book-measure"))
        .args(args)
        .output()
        .expect("book-measure runs")
}

#[test]
fn the_list_names_every_experiment_with_its_commands_and_files() {
    let out = book_measure(&["--list"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    for name in [
        "ceilings",
        "exercise-2",
        "exercise-3",
        "exercise-4",
        "exercise-5",
        "exercise-7",
        "exercise-8",
        "aa",
        "serving",
    ] {
        assert!(text.contains(&format!("\n  {name}\n")), "{name}: {text}");
        assert!(
            text.contains(&format!("writes book/measured/{name}.json")),
            "{name}: {text}"
        );
    }
    assert!(
        text.contains("runs   exercise-3 --model synthetic"),
        "{text}"
    );
    // --help ends with the same list.
    let help = String::from_utf8(book_measure(&["--help"]).stdout).unwrap();
    assert!(help.contains("writes book/src/images/budget.svg"), "{help}");
}

#[test]
fn an_unknown_experiment_is_refused_with_the_known_ones() {
    let out = book_measure(&["exercise-9", "--quick"]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("no experiment is named `exercise-9`")
            && err.contains("exercise-3, exercise-2"),
        "{err}"
    );
}

#[test]
fn check_against_an_empty_folder_names_the_pages_and_what_makes_the_files() {
    let empty = tempfile::tempdir().unwrap();
    let out = book_measure(&["--check", "--out", empty.path().to_str().unwrap()]);
    let err = String::from_utf8(out.stderr).unwrap();
    // The book quotes measured figures, so with no files each of them is a problem, named by
    // page and line with the command that writes the missing file.
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("book/src/") && err.contains(".md:"), "{err}");
    assert!(err.contains("cargo run -p book-measure --"), "{err}");
    assert!(err.contains("problem(s)"), "{err}");
}

#[test]
fn the_committed_measured_files_load_and_each_names_one_machine() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/measured");
    let files = measured::Measured::load_dir(&dir).unwrap();
    let mut seen = 0;
    for file in files.files() {
        seen += 1;
        assert!(!file.measured_on.machine.trim().is_empty(), "{}", file.name);
        assert!(!file.figures.is_empty(), "{}", file.name);
    }
    assert!(
        seen >= 1,
        "book/measured holds at least the transcribed H200 run"
    );
    let h200 = files.file("h200").unwrap();
    assert_eq!(h200.measured_on.source, measured::Source::Transcribed);
    assert_eq!(h200.measured_on.date, "2026-12-04");
}

#[test]
fn quick_never_writes_over_the_committed_files() {
    let committed = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../book/measured");
    let before: Vec<_> = std::fs::read_dir(&committed)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    let out = book_measure(&["aa", "--quick", "--out", committed.to_str().unwrap()]);
    assert!(!out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("not for the book"), "{err}");
    let after: Vec<_> = std::fs::read_dir(&committed)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(before, after);
}
