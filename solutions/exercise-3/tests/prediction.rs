//! The solution asks for the prediction as the exercise does (the same code): in a terminal (a
//! pseudo-terminal here) the answer typed is what it records; without one it records the
//! reference guess, then fills in the rest of answers.toml from its own profile.

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_solution-3");

/// A folder holding exercise 3's answers.toml as a learner starts with it.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let template =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises/exercise-3/answers.toml");
    std::fs::copy(template, dir.path().join("answers.toml")).unwrap();
    dir
}

fn solution(dir: &Path, stdin: Stdio) -> Output {
    Command::new(BIN)
        .args([
            "--model",
            "synthetic",
            "--warmup",
            "0",
            "--active",
            "1",
            "--seq",
            "2",
            "--exercise-dir",
        ])
        .arg(dir)
        .env_remove("COURSE_PREDICTION_ASKED")
        .stdin(stdin)
        .output()
        .unwrap()
}

fn prediction(dir: &Path) -> toml::Table {
    let doc: toml::Table = std::fs::read_to_string(dir.join("answers.toml"))
        .unwrap()
        .parse()
        .unwrap();
    doc["prediction"].as_table().unwrap().clone()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn in_a_terminal_the_answer_typed_is_recorded() {
    let dir = folder();
    let (mut controller, mut terminal) = (0, 0);
    // SAFETY: openpty writes two new file descriptors, which are owned from here on.
    let rc = unsafe {
        libc::openpty(
            &mut controller,
            &mut terminal,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty succeeded: both descriptors are open and owned by nothing else.
    let (terminal, mut keyboard) = unsafe {
        (
            OwnedFd::from_raw_fd(terminal),
            std::fs::File::from(OwnedFd::from_raw_fd(controller)),
        )
    };
    keyboard.write_all(b"softmax\n\n").unwrap();
    let o = solution(dir.path(), Stdio::from(terminal));
    assert!(o.status.success(), "{}", text(&o));
    let p = prediction(dir.path());
    assert_eq!(
        (p["op"].as_str(), p["share_pct"].as_str()),
        (Some("softmax"), Some("")),
        "{p:?}"
    );
    assert_eq!(p["report_existed"].as_bool(), Some(false));
}

#[test]
fn without_a_terminal_the_reference_guess_is_recorded_before_the_profile() {
    let dir = folder();
    let o = solution(dir.path(), Stdio::null());
    assert!(o.status.success(), "{}", text(&o));
    let p = prediction(dir.path());
    assert_eq!(
        (
            p["op"].as_str(),
            p["share_pct"].as_float(),
            p["report_existed"].as_bool()
        ),
        (Some("matmul"), Some(60.0), Some(false)),
        "{p:?}"
    );
    assert!(
        p["made_at"].as_str().is_some_and(|t| t.ends_with("GMT")),
        "{p:?}"
    );
}
