//! `course grade --run-tests` started as root runs each learner's test binaries as an
//! unprivileged user, in a copy of their package in a 0700 folder of its own. A hostile
//! submission's test tries to write into the course, the cohort, the gradebook's folder, the
//! shared build folder, root's home and the world-writable /tmp, /var/tmp and /dev/shm, and to
//! read another learner's submission and the other runs' folders: every attempt is refused,
//! while writing into its own folder works. The test
//! creates the user it needs (useradd) and removes it after; without root it says why it skips.

mod common;

use common::p90::{self, RIGHT};
use common::{workspace, write, BIN};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A user of its own for the tests, removed when dropped.
struct TestUser(String);

impl Drop for TestUser {
    fn drop(&mut self) {
        let _ = Command::new("userdel").arg(&self.0).status();
    }
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// A course with one exercise to test (exercise 2's p90), the real manifest, key and bank.
fn course_copy(root: &Path) {
    p90::course(root);
    workspace(root, &["exercises/exercise-2"]);
}

/// Mallory's p90: tries every way out, then fails with what happened (the feedback shows it).
fn hostile(writes: &[PathBuf], reads: &[PathBuf], lists: &[PathBuf]) -> String {
    let list = |paths: &[PathBuf]| {
        paths
            .iter()
            .map(|p| format!("{:?}", p.to_str().unwrap()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!(
        "pub fn p90(_: &[f64]) -> f64 {{\n\
         let mut report = String::from(\"HOSTILE | \");\n\
         for p in [{writes}] {{ let r = std::fs::write(p, \"pwned\"); report += &format!(\"write {{p}}: {{}}; \", if r.is_ok() {{ \"WRITTEN\" }} else {{ \"refused\" }}); }}\n\
         for p in [{reads}] {{ let r = std::fs::read_to_string(p); report += &format!(\"read {{p}}: {{}}; \", if r.is_ok() {{ \"READ\" }} else {{ \"refused\" }}); }}\n\
         for p in [{lists}] {{ let r = std::fs::read_dir(p); report += &format!(\"list {{p}}: {{}}; \", if r.is_ok() {{ \"LISTED\" }} else {{ \"refused\" }}); }}\n\
         let home = std::env::var(\"HOME\").unwrap_or_default();\n\
         let base = std::fs::read_dir(format!(\"{{home}}/..\"));\n\
         report += &format!(\"list the runs' folder: {{}}; \", if base.is_ok() {{ \"LISTED\" }} else {{ \"refused\" }});\n\
         let own = std::fs::write(format!(\"{{home}}/mine.txt\"), \"mine\").is_ok();\n\
         report += &format!(\"write own folder: {{}}; \", if own {{ \"written\" }} else {{ \"REFUSED\" }});\n\
         report += &format!(\"uid {{}}; \", std::fs::read_to_string(\"/proc/self/status\").unwrap_or_default().lines().find(|l| l.starts_with(\"Uid:\")).unwrap_or(\"\"));\n\
         panic!(\"{{report}}\");\n}}\n",
        writes = list(writes),
        reads = list(reads),
        lists = list(lists),
    )
}

#[test]
fn as_root_a_hostile_test_cannot_write_outside_its_folder_or_read_another_submission() {
    if !rustix::process::geteuid().is_root() {
        eprintln!(
            "skipped: the unprivileged --run-tests mode needs root (this test creates a user)"
        );
        return;
    }
    let name = format!("ctest{}", std::process::id());
    let created = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
        ])
        .arg(&name)
        .status();
    if !created.is_ok_and(|s| s.success()) {
        eprintln!("skipped: useradd {name} failed (no useradd here?)");
        return;
    }
    let _user = TestUser(name.clone());

    // Folders any user may search, as an instructor's home often is: only what the sandbox
    // protects keeps the test user out.
    let dir = tempfile::tempdir().unwrap();
    chmod(dir.path(), 0o755);
    let root = dir.path().join("course");
    course_copy(&root);
    let cohort = dir.path().join("cohort");
    let alice = cohort.join("alice/exercises/exercise-2/src/lib.rs");
    write(&alice, RIGHT);
    let out = dir.path().join("grades");
    let test_dir = dir.path().join("grade-tests");
    let writes = [
        root.join("exercises/exercise-2/src/pwned.rs"),
        cohort.join("alice/exercises/exercise-2/src/pwned.rs"),
        out.join("pwned.csv"),
        test_dir.join("target/pwned"),
        test_dir.join("workspace/pwned"),
        PathBuf::from("/root/pwned"),
        PathBuf::from("/etc/pwned"),
        // What any user may write: closed to the test by its read-only mount namespace.
        PathBuf::from(format!("/tmp/pwned-{name}")),
        PathBuf::from(format!("/var/tmp/pwned-{name}")),
        PathBuf::from(format!("/dev/shm/pwned-{name}")),
    ];
    let lists = [cohort.clone(), test_dir.join("target")];
    write(
        &cohort.join("mallory/exercises/exercise-2/src/lib.rs"),
        &hostile(&writes, std::slice::from_ref(&alice), &lists),
    );

    let grade = |extra: &[&str]| {
        Command::new(BIN)
            .args([
                "grade",
                cohort.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ])
            .args(["--run-tests", "--test-timeout", "20", "--test-dir"])
            .arg(&test_dir)
            .args(extra)
            .current_dir(&root)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    // A cohort folder the test user could open is refused before any code runs.
    chmod(&cohort, 0o755);
    let refused = grade(&["--test-user", &name]);
    let text = String::from_utf8_lossy(&refused.stderr).into_owned();
    assert!(!refused.status.success(), "{text}");
    assert!(text.contains("chmod 700") && text.contains(&name), "{text}");
    assert!(!out.join("gradebook.csv").exists());

    chmod(&cohort, 0o700);
    let o = grade(&["--test-user", &name]);
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        all.contains(&format!("each test binary runs as user {name}")),
        "{all}"
    );
    assert!(
        all.contains("every other folder is read-only to it"),
        "{all}"
    );
    let csv = std::fs::read_to_string(out.join("gradebook.csv")).unwrap();
    let row = |s: &str| {
        csv.lines()
            .find(|l| l.starts_with(&format!("{s},")))
            .unwrap_or_else(|| panic!("{s} in {csv}"))
            .to_string()
    };
    // Alice's right answer passes run as the test user: the copy has all the tests need.
    assert!(
        row("alice").contains("ex2: passed (1 test)"),
        "{csv}\n{all}"
    );
    assert!(row("mallory").contains("tests-failed:2"), "{csv}");
    let feedback = std::fs::read_to_string(out.join("feedback/mallory.md")).unwrap();
    assert!(feedback.contains("HOSTILE"), "{feedback}");
    // Every attempt refused (the feedback shows paths inside the build folder relative to it),
    // and nothing written.
    let line = feedback
        .lines()
        .find(|l| l.contains("HOSTILE |"))
        .unwrap_or_else(|| panic!("{feedback}"));
    for bad in ["WRITTEN", "READ;", "LISTED"] {
        assert!(!line.contains(bad), "{line}");
    }
    let attempts = writes.len() + 1 + lists.len() + 1;
    assert_eq!(line.matches(": refused").count(), attempts, "{line}");
    for p in &writes {
        assert!(!p.exists(), "{} was written", p.display());
    }
    assert!(
        line.contains(&format!("read {}: refused", alice.display())),
        "{line}"
    );
    assert!(
        line.contains(&format!("list {}: refused", cohort.display())),
        "{line}"
    );
    // The positive control: the test could write in its own folder, so the refusals above are
    // the sandbox's doing, and it ran without root's user id.
    assert!(feedback.contains("write own folder: written"), "{feedback}");
    assert!(!feedback.contains("Uid:\t0"), "{feedback}");
    assert!(
        feedback.contains("list the runs' folder: refused"),
        "{feedback}"
    );
}
