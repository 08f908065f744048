//! The real `bench` binary: help that teaches, and errors that say what to do next.

use std::process::Command;

fn bench() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bench"))
}

#[test]
fn help_explains_both_traffic_shapes_and_compare() {
    let out = bench().arg("--help").output().unwrap();
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--base-url",
        "--rate",
        "--concurrency",
        "--requests",
        "--duration",
        "--compare",
        "--slo-ttft-ms",
        "--out",
    ] {
        assert!(help.contains(flag), "--help should document {flag}");
    }
}

#[test]
fn an_unreachable_server_fails_with_a_next_step() {
    // A port that was free a moment ago: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = tempfile::tempdir().unwrap();
    let out = bench()
        .args([
            "--base-url",
            &format!("http://127.0.0.1:{port}"),
            "--concurrency",
            "1",
            "--requests",
            "1",
            "--no-progress",
        ])
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.contains("warm-up request 1") && stderr.contains("next step"),
        "{stderr}"
    );
    assert!(
        !dir.path().join("bench.json").exists(),
        "nothing is written for a run that never started"
    );
}

#[test]
fn contradictory_flags_are_refused_by_the_parser() {
    let out = bench()
        .args(["--rate", "2", "--concurrency", "4"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot be used with"));
}
