//! A program run in a pseudo-terminal, as a learner runs it in theirs: its standard input,
//! output and error are the terminal, so it asks its questions (the quizzes, the prediction)
//! instead of explaining how to answer by hand. Whoever drives it reads what it shows and types
//! a line whenever the output stops part-way through a line, at a prompt.

use super::step::Transcript;
use anyhow::{Context, Result};
use std::process::{Command, ExitStatus};
use std::time::Duration;

/// Text that arrives in pieces, decoded without splitting a character across two pieces.
#[derive(Default)]
pub struct Utf8Pieces {
    held: Vec<u8>,
}

impl Utf8Pieces {
    /// The text `bytes` complete; an incomplete character at the end waits for the next piece.
    pub fn push(&mut self, bytes: &[u8]) -> String {
        self.held.extend_from_slice(bytes);
        let complete = match std::str::from_utf8(&self.held) {
            Ok(_) => self.held.len(),
            // A character cut off at the end: keep its bytes for the next piece.
            Err(e) if e.error_len().is_none() => e.valid_up_to(),
            Err(_) => self.held.len(),
        };
        let rest = self.held.split_off(complete);
        let text = String::from_utf8_lossy(&self.held).replace('\r', "");
        self.held = rest;
        text
    }
}

/// Runs `command` in a new pseudo-terminal. Whenever its output stops part-way through a line,
/// `reply` gets everything shown since the last reply and may return a line to type (without its
/// newline); `None` waits for more output. Stopped at `limit`.
#[cfg(unix)]
pub fn converse(
    command: &mut Command,
    limit: Duration,
    mut reply: impl FnMut(&str) -> Option<String>,
) -> Result<Transcript> {
    use rustix::fs::{Mode, OFlags};
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    use std::io::{Read, Write};
    use std::process::Stdio;
    use std::sync::mpsc;
    use std::time::Instant;

    let controller = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY)
        .context("cannot open a pseudo-terminal (/dev/ptmx)")?;
    // Neither end may leak into the program: the controller only reads and types here.
    rustix::io::fcntl_setfd(&controller, rustix::io::FdFlags::CLOEXEC)
        .context("cannot set up the pseudo-terminal")?;
    grantpt(&controller).context("cannot set up the pseudo-terminal (grantpt)")?;
    unlockpt(&controller).context("cannot set up the pseudo-terminal (unlockpt)")?;
    let name =
        ptsname(&controller, Vec::new()).context("cannot name the pseudo-terminal (ptsname)")?;
    // NOCTTY: it is the program's terminal, not this process's controlling one.
    let terminal = rustix::fs::open(
        name.as_c_str(),
        OFlags::RDWR | OFlags::NOCTTY | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open the pseudo-terminal {}", name.to_string_lossy()))?;
    command
        .stdin(Stdio::from(terminal.try_clone()?))
        .stdout(Stdio::from(terminal.try_clone()?))
        .stderr(Stdio::from(terminal));
    let spawned = command.spawn();
    // The command holds the terminal's descriptors until they are replaced: while any is open
    // here, reading the controller never ends.
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let mut child = spawned.with_context(|| format!("cannot start {:?}", command.get_program()))?;

    let mut keyboard = std::fs::File::from(controller);
    let mut screen = keyboard
        .try_clone()
        .context("cannot read the pseudo-terminal")?;
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    // Read in a thread, so a program that never prints cannot stop the time limit.
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        // Once every process has closed the terminal, Linux answers EIO; others end of file.
        while let Ok(n) = screen.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });

    let deadline = Instant::now() + limit;
    let mut pieces = Utf8Pieces::default();
    let (mut text, mut pending) = (String::new(), String::new());
    let mut exited: Option<(ExitStatus, Instant)> = None;
    loop {
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(bytes) => {
                let piece = pieces.push(&bytes);
                text.push_str(&piece);
                pending.push_str(&piece);
                if !pending.is_empty() && !pending.ends_with('\n') {
                    if let Some(line) = reply(&pending) {
                        pending.clear();
                        // A program that has stopped reading is no reason to fail here: its
                        // transcript says what happened.
                        let _ = keyboard.write_all(format!("{line}\n").as_bytes());
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {}
        }
        if exited.is_none() {
            if let Some(status) = child
                .try_wait()
                .context("cannot wait for the program in the pseudo-terminal")?
            {
                exited = Some((status, Instant::now()));
            }
        }
        // A process it left behind may hold the terminal open: what it showed is read by now.
        if exited.is_some_and(|(_, at)| at.elapsed() > Duration::from_secs(2)) {
            break;
        }
        if exited.is_none() && Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(Transcript { text, status: None });
        }
    }
    let status = match exited {
        Some((status, _)) => status,
        None => child
            .wait()
            .context("cannot wait for the program in the pseudo-terminal")?,
    };
    Ok(Transcript {
        text,
        status: Some(status),
    })
}

#[cfg(not(unix))]
pub fn converse(
    _: &mut Command,
    _: Duration,
    _: impl FnMut(&str) -> Option<String>,
) -> Result<Transcript> {
    anyhow::bail!("the terminal checks need a Unix pseudo-terminal")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_character_split_across_pieces_is_decoded_whole() {
        let mut pieces = Utf8Pieces::default();
        let bytes = "3 × 8\r\n".as_bytes();
        let cut = bytes.iter().position(|&b| b == 0xC3).unwrap() + 1;
        assert_eq!(pieces.push(&bytes[..cut]), "3 ");
        assert_eq!(pieces.push(&bytes[cut..]), "× 8\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_program_in_the_terminal_is_answered_at_its_prompts() {
        let script = "test -t 0 && echo 'in a terminal'; printf 'Name? '; read name; printf 'Age: '; read age; echo \"$name is $age\"";
        let mut asked = Vec::new();
        let transcript = converse(
            Command::new("sh").args(["-c", script]),
            Duration::from_secs(20),
            |screen| {
                asked.push(screen.to_string());
                match screen.trim_end() {
                    s if s.ends_with("Name?") => Some("Ada".to_string()),
                    s if s.ends_with("Age:") => Some("36".to_string()),
                    _ => None,
                }
            },
        )
        .unwrap();
        assert!(transcript.succeeded(), "{transcript:?}");
        assert!(
            transcript.text.contains("in a terminal\n"),
            "{}",
            transcript.text
        );
        assert!(
            transcript.text.contains("Ada is 36\n"),
            "{}",
            transcript.text
        );
        assert_eq!(asked.len(), 2, "one reply per prompt: {asked:?}");
    }

    #[cfg(unix)]
    #[test]
    fn a_program_left_waiting_is_stopped_at_the_limit() {
        let transcript = converse(
            Command::new("sh").args(["-c", "printf 'Name? '; read name"]),
            Duration::from_millis(500),
            |_| None,
        )
        .unwrap();
        assert!(transcript.status.is_none());
        assert!(transcript
            .ending(Duration::from_millis(500))
            .contains("stopped"));
    }
}
