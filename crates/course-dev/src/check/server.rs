//! The `gpt2 serve` a solution measures (an exercise's `dev_check.server`): started on a free
//! port with `bench`'s local-server runner, which finds it by the address it prints and stops it
//! when dropped, then asked for `GET /health` before any solution loads it.

use anyhow::{bail, Context, Result};
use bench::server::LocalServer;
use course_model::manifest::BASE_URL_PLACEHOLDER;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// Loading the synthetic checkpoint takes seconds; a debug build more.
const START_WAIT: Duration = Duration::from_secs(120);
/// How long the server may take to answer /health once it has printed its address.
const HEALTH_WAIT: Duration = Duration::from_secs(30);

pub struct Server {
    local: LocalServer,
}

impl Server {
    /// `gpt2 serve ARGS --port 0` from `bin`, its output to `log`.
    pub fn start(bin: &Path, args: &[String], log: &Path) -> Result<Server> {
        let program = bin.join(format!("gpt2{}", std::env::consts::EXE_SUFFIX));
        if !program.is_file() {
            bail!(
                "{} is missing: build it with `cargo build --workspace --all-targets`",
                program.display()
            );
        }
        let mut all = vec!["serve".to_string()];
        all.extend(args.iter().cloned());
        // Port 0: the system picks a free one, so two checks never collide.
        all.extend(["--port".to_string(), "0".to_string()]);
        let local = LocalServer::start(&program, &all, Some(log), START_WAIT)?;
        healthy(&local.base_url, HEALTH_WAIT)?;
        Ok(Server { local })
    }

    pub fn base_url(&self) -> &str {
        &self.local.base_url
    }
}

/// `args` with the server's address where they say [`BASE_URL_PLACEHOLDER`].
pub fn with_address(args: &[String], base_url: &str) -> Vec<String> {
    args.iter()
        .map(|a| a.replace(BASE_URL_PLACEHOLDER, base_url))
        .collect()
}

/// Waits until `GET /health` answers 200.
fn healthy(base_url: &str, wait: Duration) -> Result<()> {
    let host_port = base_url
        .strip_prefix("http://")
        .with_context(|| format!("`{base_url}` is not an http:// address"))?;
    let started = Instant::now();
    loop {
        let answer = health(host_port);
        match answer {
            Ok(status) if status.split_whitespace().nth(1) == Some("200") => return Ok(()),
            _ if started.elapsed() < wait => std::thread::sleep(Duration::from_millis(200)),
            Ok(status) => bail!("{base_url}/health answered `{status}` instead of 200 OK"),
            Err(e) => bail!(
                "{base_url}/health did not answer within {} s: {e}",
                wait.as_secs()
            ),
        }
    }
}

/// The status line of one `GET /health` (HTTP/1.0: the server closes the connection after it).
fn health(host_port: &str) -> std::io::Result<String> {
    let mut stream = TcpStream::connect(host_port)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    // One write: a request in pieces may be answered (and the connection closed) before its end.
    stream.write_all(format!("GET /health HTTP/1.0\r\nHost: {host_port}\r\n\r\n").as_bytes())?;
    let mut reply = Vec::new();
    stream.take(4096).read_to_end(&mut reply)?;
    Ok(String::from_utf8_lossy(&reply)
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn the_address_goes_where_the_args_say() {
        let args: Vec<String> = ["--base-url", "{base_url}", "--requests", "12"]
            .map(String::from)
            .into();
        assert_eq!(
            with_address(&args, "http://127.0.0.1:4000"),
            ["--base-url", "http://127.0.0.1:4000", "--requests", "12"]
        );
    }

    #[test]
    fn health_is_a_200_status_line() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            for reply in [
                "HTTP/1.1 503 Service Unavailable\r\n\r\n",
                "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
            ] {
                let (mut stream, _) = listener.accept().unwrap();
                // The whole request first: closing on unread bytes would reset the connection.
                let mut request = Vec::new();
                let mut byte = [0u8; 1];
                while !request.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap() == 1 {
                    request.push(byte[0]);
                }
                stream.write_all(reply.as_bytes()).unwrap();
            }
        });
        let url = format!("http://{address}");
        healthy(&url, Duration::from_secs(10)).unwrap();
        server.join().unwrap();
        let err = healthy("http://127.0.0.1:1", Duration::from_millis(10)).unwrap_err();
        assert!(err.to_string().contains("/health did not answer"), "{err}");
    }
}
