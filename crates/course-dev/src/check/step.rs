//! One step's program, run as the dev check runs each: no input, its output (stdout and stderr
//! together, as a person reads them) in a log file, and a time limit, so that a hung step is a
//! failure with its output rather than a test run that never ends.

use anyhow::{Context, Result};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// What a program showed, and how it ended.
#[derive(Debug)]
pub struct Transcript {
    /// Everything it printed (in a terminal: with what was typed, echoed; `\r` removed).
    pub text: String,
    /// None when it was stopped at its time limit.
    pub status: Option<ExitStatus>,
}

impl Transcript {
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }

    /// Ended by itself, with a failure.
    pub fn failed(&self) -> bool {
        self.status.is_some_and(|s| !s.success())
    }

    /// How it ended, in words.
    pub fn ending(&self, limit: Duration) -> String {
        match self.status {
            Some(status) => format!("it exited with {status}"),
            None => format!(
                "it was stopped after {} s, still running (waiting for input nobody typed?)",
                limit.as_secs()
            ),
        }
    }
}

/// Runs `command` to its end or to `limit`, its output to `log`.
pub fn run(command: &mut Command, log: &Path, limit: Duration) -> Result<Transcript> {
    let out = std::fs::File::create(log)
        .with_context(|| format!("cannot create the log {}", log.display()))?;
    let err = out
        .try_clone()
        .with_context(|| format!("cannot share the log {}", log.display()))?;
    command.stdin(Stdio::null()).stdout(out).stderr(err);
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot start {}", shown(command)))?;
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child
            .try_wait()
            .with_context(|| format!("cannot wait for {}", shown(command)))?
        {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = String::from_utf8_lossy(&std::fs::read(log).unwrap_or_default()).replace('\r', "");
    Ok(Transcript { text, status })
}

/// A command line as a person would type it (the program's path in full).
pub fn shown(command: &Command) -> String {
    let mut line = command.get_program().to_string_lossy().into_owned();
    for arg in command.get_args() {
        line.push(' ');
        line.push_str(&arg.to_string_lossy());
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn output_is_logged_and_a_hung_program_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("step.log");
        let done = run(
            Command::new("sh").args(["-c", "echo out; echo err >&2; exit 3"]),
            &log,
            Duration::from_secs(20),
        )
        .unwrap();
        assert!(done.failed() && !done.succeeded());
        assert_eq!(done.text, "out\nerr\n");
        assert!(
            done.ending(Duration::from_secs(20))
                .contains("exit status: 3"),
            "{}",
            done.ending(Duration::from_secs(20))
        );
        let hung = run(
            Command::new("sh").args(["-c", "sleep 30"]),
            &log,
            Duration::from_millis(200),
        )
        .unwrap();
        assert!(hung.status.is_none() && !hung.failed());
        assert!(hung.ending(Duration::from_millis(200)).contains("stopped"));
    }
}
