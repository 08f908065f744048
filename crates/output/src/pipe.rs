//! A program whose output is piped into `head`, `less` or `grep -m1` ends quietly when the reader
//! closes the pipe: exit status 0 (the course's rule: the program did its part; the reader chose
//! to stop), no panic message, no "error: Broken pipe".
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with an `io::Error` of kind
//! `BrokenPipe`: `writeln!(out, ..)?` returns it ([`is_broken_pipe`] tells the program's `main`),
//! and `println!` panics with it ([`end_quietly_when_closed`] turns that panic into exit 0).

use std::io;
use std::sync::Once;

/// From now on, a `println!` or `print!` that fails because standard output's reader closed the
/// pipe ends the process with status 0, silently, whatever thread it ran on. Every other panic
/// goes to the hook that was installed before (the default one prints it). Call it first thing
/// in `main`; a second call does nothing.
pub fn end_quietly_when_closed() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let message = payload
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| payload.downcast_ref::<&str>().copied());
            if message.is_some_and(is_print_to_closed_stdout) {
                std::process::exit(0);
            }
            previous(info);
        }));
    });
}

/// Whether `error`, or any error it was caused by, is a write to a pipe whose reader has gone.
/// For a `main` that returns errors: such a run ends with status 0 and says nothing.
pub fn is_broken_pipe(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut at = Some(error);
    while let Some(e) = at {
        if e.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
        {
            return true;
        }
        at = e.source();
    }
    false
}

/// Whether a panic's message is the one `println!` raises for a closed standard output: std's
/// "failed printing to stdout: " followed by this platform's text for the system's broken-pipe
/// error (EPIPE on Unix; ERROR_BROKEN_PIPE or ERROR_NO_DATA on Windows).
fn is_print_to_closed_stdout(message: &str) -> bool {
    let Some(error) = message.strip_prefix("failed printing to stdout: ") else {
        return false;
    };
    // The candidates' numbers differ per system; only this system's broken pipes are kept.
    [32, 109, 232]
        .map(io::Error::from_raw_os_error)
        .iter()
        .any(|e| e.kind() == io::ErrorKind::BrokenPipe && e.to_string() == error)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write to a pipe whose reader has exited: the error a closed `head` gives.
    #[cfg(unix)]
    fn real_broken_pipe() -> io::Error {
        use std::io::Write;
        use std::process::{Command, Stdio};
        let mut child = Command::new("true").stdin(Stdio::piped()).spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        child.wait().unwrap();
        let big = vec![b'x'; 1 << 20];
        stdin.write_all(&big).unwrap_err()
    }

    #[cfg(unix)]
    #[test]
    fn a_closed_pipe_is_recognised_as_returned_and_as_println_s_panic() {
        let e = real_broken_pipe();
        assert_eq!(e.kind(), io::ErrorKind::BrokenPipe);
        assert!(is_print_to_closed_stdout(&format!(
            "failed printing to stdout: {e}"
        )));
        // Through layers of context, as a program's error reaches its main.
        #[derive(Debug)]
        struct Context(io::Error);
        impl std::fmt::Display for Context {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("cannot print the table")
            }
        }
        impl std::error::Error for Context {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        assert!(is_broken_pipe(&Context(e)));
    }

    #[test]
    fn other_failures_are_not_a_closed_pipe() {
        assert!(!is_broken_pipe(&io::Error::from(
            io::ErrorKind::PermissionDenied
        )));
        assert!(!is_print_to_closed_stdout(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!is_print_to_closed_stdout(
            "failed printing to stderr: Broken pipe (os error 32)"
        ));
        assert!(!is_print_to_closed_stdout("index out of bounds"));
    }
}
