//! The real `course-dev` binary: what it refuses to lint and says to do instead, and the cargo
//! stand-in it becomes when started as `cargo` by the dev check (and only then). The whole dev
//! check, on the real course, is scripts/test.sh's `cargo run -p course-dev -- check` step.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_course-dev");

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A copy of the course's manifest with a workspace file and a solutions folder: the outline of
/// a checkout, built nowhere.
fn checkout_outline(dir: &Path) -> PathBuf {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = dir.join("course");
    std::fs::create_dir_all(root.join("exercises")).unwrap();
    std::fs::create_dir_all(root.join("solutions")).unwrap();
    std::fs::copy(
        repo.join("exercises/info.toml"),
        root.join("exercises/info.toml"),
    )
    .unwrap();
    std::fs::write(root.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap();
    root
}

fn course_dev(root: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("--root")
        .arg(root)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn every_command_has_help() {
    for args in [vec!["--help"], vec!["check", "--help"]] {
        let o = Command::new(BIN).args(&args).output().unwrap();
        assert!(o.status.success(), "{args:?}: {}", text(&o));
    }
    let o = Command::new(BIN)
        .args(["check", "--help"])
        .output()
        .unwrap();
    assert!(text(&o).contains("--only"), "{}", text(&o));
}

#[test]
fn it_refuses_what_it_cannot_lint_and_says_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let root = checkout_outline(dir.path());
    let o = course_dev(&root, &["check", "--only", "9"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("there is no exercise 9"), "{}", text(&o));
    let o = course_dev(&root, &["check", "--only", "three"]);
    assert_eq!(o.status.code(), Some(2), "a usage error: {}", text(&o));
    // This outline is not where the binary was built: course and the programs are not beside it.
    let o = course_dev(&root, &["check", "--only", "1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("Build the workspace (`cargo build --workspace --all-targets`)"),
        "{}",
        text(&o)
    );
    // A learner's copy has no solutions to prove.
    std::fs::remove_dir_all(root.join("solutions")).unwrap();
    let o = course_dev(&root, &["check"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("has no solutions")
            && text(&o).contains("run it in a checkout of the course"),
        "{}",
        text(&o)
    );
    // Not a course at all.
    let o = course_dev(dir.path(), &["check"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("exercises/info.toml"), "{}", text(&o));
}

/// The dev check links `cargo` to this binary: started so, with the dev check's setting, it is
/// the stand-in for cargo; without the setting it is `course-dev` as ever.
#[cfg(unix)]
#[test]
fn the_binary_named_cargo_is_the_dev_check_s_stand_in_only_when_told() {
    let dir = tempfile::tempdir().unwrap();
    let cargo = dir.path().join("cargo");
    std::os::unix::fs::symlink(BIN, &cargo).unwrap();
    let o = Command::new(&cargo)
        .args(["bench", "-p", "exercise-2"])
        .env("COURSE_DEV_CARGO_CHECKOUT", dir.path())
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("stand-in for cargo takes `build|test|run -p PACKAGE [-- ARGS]`"),
        "{}",
        text(&o)
    );
    let o = Command::new(&cargo)
        .arg("--version")
        .env_remove("COURSE_DEV_CARGO_CHECKOUT")
        .output()
        .unwrap();
    assert!(
        o.status.success() && text(&o).starts_with("course-dev "),
        "{}",
        text(&o)
    );
}
