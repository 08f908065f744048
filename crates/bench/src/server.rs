//! A benchmark that starts its own server: run the server's command (e.g. `gpt2 serve --port 0
//! --max-batch-size 8`), wait for the address it prints when it listens, and stop it when the
//! run is done, so that two configurations can be measured one after the other from one program.
//!
//! The server is found by the address it prints (the first `http://…` on its stdout or stderr),
//! the same way `course-dev check` finds its `gpt2 serve --port 0`: with port 0 the
//! operating system picks a free port, and two runs never collide.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Lines of the server's output kept for an error message.
const KEPT_LINES: usize = 20;

/// A server process this program started; dropping it stops the server.
pub struct LocalServer {
    child: Child,
    /// e.g. `http://127.0.0.1:40123`, as the server printed it.
    pub base_url: String,
}

impl LocalServer {
    /// Start `program args…` and return once it has printed the address it listens on, or fail
    /// after `wait` (loading a model takes a while) or when it exits first. Everything it prints
    /// goes to `log` when given (the last lines are in the error either way).
    pub fn start(
        program: &Path,
        args: &[String],
        log: Option<&Path>,
        wait: Duration,
    ) -> Result<LocalServer> {
        let shown = format!("{} {}", program.display(), args.join(" "));
        let mut child = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .with_context(|| format!("cannot start `{shown}`"))?;
        let log_file = match log {
            Some(path) => {
                if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create the folder {}", dir.display()))?;
                }
                Some(Arc::new(Mutex::new(File::create(path).with_context(
                    || format!("cannot write {}", path.display()),
                )?)))
            }
            None => None,
        };
        let recent = Arc::new(Mutex::new(Vec::<String>::new()));
        let (tx, rx) = mpsc::channel::<String>();
        // Both streams are drained until the server exits, so it never blocks on a full pipe.
        let streams: [Option<Box<dyn Read + Send>>; 2] = [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn Read + Send>),
        ];
        for stream in streams.into_iter().flatten() {
            let (tx, recent, log_file) = (tx.clone(), recent.clone(), log_file.clone());
            std::thread::spawn(move || {
                for line in BufReader::new(stream)
                    .lines()
                    .map_while(std::io::Result::ok)
                {
                    if let Some(file) = &log_file {
                        if let Ok(mut f) = file.lock() {
                            let _ = writeln!(f, "{line}");
                        }
                    }
                    if let Some(url) = address_in(&line) {
                        let _ = tx.send(url);
                    }
                    if let Ok(mut kept) = recent.lock() {
                        kept.push(line);
                        let excess = kept.len().saturating_sub(KEPT_LINES);
                        kept.drain(..excess);
                    }
                }
            });
        }
        drop(tx);
        let started = Instant::now();
        let tail =
            |recent: &Mutex<Vec<String>>| recent.lock().map(|k| k.join("\n  ")).unwrap_or_default();
        loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(base_url) => return Ok(LocalServer { child, base_url }),
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let status = child
                        .wait()
                        .map(|s| s.to_string())
                        .unwrap_or_else(|e| e.to_string());
                    bail!(
                        "`{shown}` exited ({status}) before it listened; its last lines:\n  {}",
                        tail(&recent)
                    );
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        bail!(
                            "`{shown}` exited ({status}) before it listened; its last lines:\n  {}",
                            tail(&recent)
                        );
                    }
                    if started.elapsed() > wait {
                        let _ = child.kill();
                        let _ = child.wait();
                        bail!(
                            "`{shown}` printed no address within {:.0} s; its last lines:\n  {}",
                            wait.as_secs_f64(),
                            tail(&recent)
                        );
                    }
                }
            }
        }
    }

    /// Stop the server and wait for it to exit.
    pub fn stop(mut self) {
        self.kill();
    }

    fn kill(&mut self) {
        // The measurement is over: nothing in flight is worth waiting for.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for LocalServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The first `http://host:port` in a line of the server's output.
fn address_in(line: &str) -> Option<String> {
    let start = line.find("http://")?;
    let rest = &line[start..];
    let end = rest
        .find(|c: char| c.is_whitespace() || c == ')' || c == '"' || c == '\'')
        .unwrap_or(rest.len());
    // The server's root: the host and port, without any path printed after them.
    let after = &rest["http://".len()..end];
    let host_port = after
        .split('/')
        .next()
        .unwrap_or(after)
        .trim_end_matches([',', '.']);
    // A bare `http://` or one without a port is not an address to connect to.
    host_port
        .rsplit_once(':')
        .filter(|(_, port)| !port.is_empty() && port.chars().all(|c| c.is_ascii_digit()))?;
    Some(format!("http://{host_port}"))
}

/// The program named `name` in the folder of the running executable (`target/<profile>/`
/// for a cargo-built program), where cargo puts every binary of the workspace it built with
/// the same profile.
pub fn sibling_program(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot tell where this program is")?;
    let dir = exe.parent().context("this program's path has no folder")?;
    Ok(dir.join(format!("{name}{}", std::env::consts::EXE_SUFFIX)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_address_a_server_prints() {
        let line = "gpt2 serve: listening on http://127.0.0.1:40123  (model \"synthetic\", --max-batch-size 8)";
        assert_eq!(address_in(line).as_deref(), Some("http://127.0.0.1:40123"));
        assert_eq!(
            address_in("  try: curl http://127.0.0.1:8000/v1/models").as_deref(),
            Some("http://127.0.0.1:8000"),
            "the root, not the path"
        );
        assert_eq!(
            address_in("see http://example.org for help"),
            None,
            "no port, not an address"
        );
        assert_eq!(address_in("loading the model"), None);
    }

    #[cfg(unix)]
    #[test]
    fn a_server_that_exits_first_is_an_error_with_its_output() {
        let args = vec![
            "-c".to_string(),
            "echo cannot load the model >&2; exit 3".to_string(),
        ];
        let err = LocalServer::start(Path::new("sh"), &args, None, Duration::from_secs(10))
            .err()
            .expect("it exited");
        let text = format!("{err:#}");
        assert!(
            text.contains("before it listened") && text.contains("cannot load the model"),
            "{text}"
        );
    }

    #[cfg(unix)]
    #[test]
    fn the_printed_address_is_returned_and_the_server_logged() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("serve.log");
        let args = vec![
            "-c".to_string(),
            "echo listening on http://127.0.0.1:45678 >&2; exec sleep 30".to_string(),
        ];
        let server =
            LocalServer::start(Path::new("sh"), &args, Some(&log), Duration::from_secs(10))
                .unwrap();
        assert_eq!(server.base_url, "http://127.0.0.1:45678");
        server.stop();
        assert!(std::fs::read_to_string(&log)
            .unwrap()
            .contains("listening on"));
    }
}
