//! The exercise's own binary asks for the prediction (not only `course run 3`): in a terminal (a
//! pseudo-terminal here) it records the answer in answers.toml before the profile runs; without
//! one it says how to make it and does not wait; after `course run 3` has asked, it stays quiet.
//! These tests are the course's, not a TODO of yours: they run the program on the synthetic
//! model, in a folder of their own.

use std::io::Write;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_exercise-3");

/// A folder holding this exercise's answers.toml as the learner starts with it.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let template = Path::new(env!("CARGO_MANIFEST_DIR")).join("answers.toml");
    std::fs::copy(template, dir.path().join("answers.toml")).unwrap();
    dir
}

fn exercise(dir: &Path) -> Command {
    let mut command = Command::new(BIN);
    command
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
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn answers(dir: &Path) -> toml::Table {
    std::fs::read_to_string(dir.join("answers.toml"))
        .unwrap()
        .parse()
        .unwrap()
}

/// A pseudo-terminal: (the side the program reads as its stdin, the side this test types into).
fn pseudo_terminal() -> (OwnedFd, std::fs::File) {
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
    unsafe {
        (
            OwnedFd::from_raw_fd(terminal),
            std::fs::File::from(OwnedFd::from_raw_fd(controller)),
        )
    }
}

#[test]
fn in_a_terminal_it_asks_and_records_the_prediction_before_the_profile() {
    let dir = folder();
    let (terminal, mut keyboard) = pseudo_terminal();
    let child = exercise(dir.path())
        .stdin(Stdio::from(terminal))
        .spawn()
        .unwrap();
    keyboard.write_all(b"gelu\n25\n").unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("Which op will top the table") && out.contains("Recorded in"),
        "{out}"
    );
    let prediction = answers(dir.path())["prediction"]
        .as_table()
        .unwrap()
        .clone();
    assert_eq!(prediction["op"].as_str(), Some("gelu"));
    assert_eq!(prediction["share_pct"].as_float(), Some(25.0));
    assert_eq!(
        prediction["report_existed"].as_bool(),
        Some(false),
        "asked before results/report.json was written"
    );
    assert!(
        prediction["made_at"]
            .as_str()
            .is_some_and(|t| t.ends_with("GMT")),
        "{prediction:?}"
    );
    assert!(
        dir.path().join("results/report.json").is_file(),
        "then it profiles: {out}"
    );

    // The next run finds it and does not ask again.
    let (terminal, _keyboard) = pseudo_terminal();
    let o = exercise(dir.path())
        .stdin(Stdio::from(terminal))
        .output()
        .unwrap();
    assert!(
        o.status.success()
            && text(&o).contains("Your prediction (in ")
            && !text(&o).contains("Which op will top"),
        "{}",
        text(&o)
    );
}

#[test]
fn without_a_terminal_it_says_how_to_predict_and_does_not_wait() {
    let dir = folder();
    let before = std::fs::read_to_string(dir.path().join("answers.toml")).unwrap();
    let o = exercise(dir.path()).stdin(Stdio::null()).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("not asking for your prediction") && text(&o).contains("in a terminal"),
        "{}",
        text(&o)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("answers.toml")).unwrap(),
        before,
        "nothing recorded"
    );

    // After `course run 3` has asked, the binary neither asks nor says so again.
    let (terminal, _keyboard) = pseudo_terminal();
    let o = exercise(dir.path())
        .env("COURSE_PREDICTION_ASKED", "1")
        .stdin(Stdio::from(terminal))
        .output()
        .unwrap();
    assert!(
        o.status.success() && !text(&o).contains("prediction"),
        "{}",
        text(&o)
    );
}
