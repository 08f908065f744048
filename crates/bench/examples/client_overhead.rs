//! How much latency does the load client itself add to each request? Measure it against a server
//! that answers instantly and says how long it took:
//!
//!     cargo run -p bench --example client_overhead -- [RATE] [REQUESTS]
//!
//! Defaults: 500 requests/s, 2500 requests (5 s), Poisson arrivals, one streamed token per
//! request (plus the usage chunk and `[DONE]`, as vLLM sends them).
//!
//! The server is a few lines of blocking code on its own OS threads, not an async server in the
//! client's runtime: it shares no scheduler with the client, exactly as if it were another process
//! (on Linux both are kernel threads; a thread keeps one clock for both sides). It stamps each
//! request when the last byte of it has been read and again when the whole response is ready to be
//! written (one `write`), so for every request
//!
//!     added = client-seen E2EL − server time (request read → response ready)
//!
//! is what the client costs: building and writing the request, waking up to read the answer,
//! parsing the SSE stream, plus the loopback round trip and the wake-ups of both threads, which
//! any client pays. That last part is measured on its own by two **floors** that send the same
//! bytes to the same kind of server on the same Poisson schedule, one request at a time on one
//! connection: a bare blocking socket, and a bare tokio socket on the client's runtime. Between
//! them and the client sit, in turn, the async runtime and the HTTP stack (reqwest, hyper).
//!
//! On a machine that other work keeps busy the P99 of all three is set by the OS scheduler (how
//! long a woken thread waits for a core), not by code: compare the client's tail with the floors'
//! in the same run before blaming the client.
//!
//! Lateness is reported separately: `dispatch lag` is how long after its Poisson arrival time each
//! request was actually sent. It shifts arrivals; it is never part of a measured latency.

use std::io::{self, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::Context;
use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::stats::percentile;
use rand::rngs::StdRng;
use rand::SeedableRng;
use rand_distr::{Distribution, Exp};
use serde_json::{json, Value};

/// When the server had a whole request and when it handed the whole answer to the kernel.
#[derive(Clone, Copy)]
struct Stamp {
    received: Instant,
    answered: Instant,
}

type Stamps = Arc<Mutex<Vec<Stamp>>>;

/// A running instant server.
struct Server {
    url: String,
    stamps: Stamps,
    /// TCP connections accepted: few means the client reuses them (keep-alive, pooled).
    connections: Arc<AtomicUsize>,
}

/// Start the instant server on a free loopback port: one thread accepts, one thread per connection
/// answers (the client keeps its connections alive, so there are only a handful).
fn start_server() -> io::Result<Server> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let url = format!("http://{}", listener.local_addr()?);
    let stamps: Stamps = Arc::default();
    let connections = Arc::new(AtomicUsize::new(0));
    let (kept, counted) = (stamps.clone(), connections.clone());
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, Ordering::Relaxed);
            let stamps = kept.clone();
            let _ = thread::Builder::new()
                .name("instant-server".into())
                .spawn(move || {
                    // A connection closed by the client ends here; nothing to report.
                    let _ = serve(stream, &stamps);
                });
        }
    });
    Ok(Server {
        url,
        stamps,
        connections,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// Answer HTTP/1.1 requests on one keep-alive connection until the client closes it.
fn serve(mut stream: TcpStream, stamps: &Mutex<Vec<Stamp>>) -> io::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(64 * 1024);
    let mut chunk = [0u8; 16 * 1024];
    loop {
        // Read one request: the head up to the blank line, then Content-Length bytes of body.
        let (body_at, length) = loop {
            if let Some(end) = find(&buf, b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                break (end + 4, length);
            }
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        while buf.len() < body_at + length {
            let n = stream.read(&mut chunk)?;
            if n == 0 {
                return Ok(());
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        let received = Instant::now();
        let serial = {
            let mut stamps = stamps.lock().unwrap_or_else(|e| e.into_inner());
            stamps.push(Stamp {
                received,
                answered: received,
            });
            stamps.len() - 1
        };
        let body: Value =
            serde_json::from_slice(&buf[body_at..body_at + length]).unwrap_or(Value::Null);
        buf.drain(..body_at + length);
        let response = answer(&body, serial);
        // Stamped before the write: once the bytes are in the kernel the client may read them
        // before this thread runs again. The write's loopback delivery is transport, and the floor
        // below pays it too.
        let answered = Instant::now();
        stamps.lock().unwrap_or_else(|e| e.into_inner())[serial].answered = answered;
        stream.write_all(&response)?;
    }
}

/// The streamed answer: `max_tokens` one-token chunks, the usage chunk when asked for, `[DONE]`.
/// `usage.prompt_tokens` carries the server's number for the request, so that the client's record
/// of it can be paired with the server's stamps exactly.
fn answer(body: &Value, serial: usize) -> Vec<u8> {
    let n = body["max_tokens"].as_u64().unwrap_or(1).max(1);
    let mut events = String::new();
    for i in 0..n {
        let finish = if i + 1 == n {
            json!("length")
        } else {
            Value::Null
        };
        let chunk = json!({"object": "text_completion", "choices": [{"index": 0, "text": format!(" t{i}"), "finish_reason": finish}]});
        events.push_str(&format!("data: {chunk}\n\n"));
    }
    if body["stream_options"]["include_usage"] == true {
        let usage = json!({"object": "text_completion", "choices": [], "usage": {"prompt_tokens": serial, "completion_tokens": n, "total_tokens": serial as u64 + n}});
        events.push_str(&format!("data: {usage}\n\n"));
    }
    events.push_str("data: [DONE]\n\n");
    let mut out = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\ncontent-length: {}\r\n\r\n",
        events.len()
    )
    .into_bytes();
    out.extend_from_slice(events.as_bytes());
    out
}

/// One request seen from both ends.
struct Timed {
    /// When the client started sending and when it had the whole answer.
    start: Instant,
    end: Instant,
    server: Stamp,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn print_row(name: &str, xs: &[f64]) {
    let p = |q| percentile(xs, q).unwrap_or(f64::NAN);
    println!(
        "  {name:<34} P50 {:>7.3}  P90 {:>7.3}  P99 {:>7.3}  max {:>7.3}",
        p(50.0),
        p(90.0),
        p(99.0),
        p(100.0)
    );
}

/// The subtraction, request by request: client-seen E2EL minus the server's own time, and the two
/// legs it is made of (to the server, and back).
fn print_split(timed: &[Timed]) -> Vec<f64> {
    let col = |f: &dyn Fn(&Timed) -> Duration| timed.iter().map(|t| ms(f(t))).collect::<Vec<f64>>();
    print_row(
        "E2EL, as the client saw it (ms)",
        &col(&|t| t.end - t.start),
    );
    print_row(
        "server time (ms)",
        &col(&|t| t.server.answered - t.server.received),
    );
    let added = col(&|t| (t.end - t.start).saturating_sub(t.server.answered - t.server.received));
    print_row("added = E2EL − server time (ms)", &added);
    print_row(
        "  of which: send → server has it",
        &col(&|t| t.server.received - t.start),
    );
    print_row(
        "  of which: answer ready → parsed",
        &col(&|t| t.end - t.server.answered),
    );
    added
}

/// The floor: the same request bytes from a bare blocking socket on one keep-alive connection, on
/// the same Poisson schedule. Returns (start, end) of each request.
fn floor_run(
    url: &str,
    body: &Value,
    rate: f64,
    requests: usize,
) -> anyhow::Result<Vec<(Instant, Instant)>> {
    let addr = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let request = request_bytes(addr, body);
    let gaps = Exp::new(rate)?;
    let mut rng = StdRng::seed_from_u64(1);
    let mut buf = vec![0u8; 64 * 1024];
    let begin = Instant::now();
    let mut due = 0.0;
    let mut out = Vec::with_capacity(requests);
    for _ in 0..requests {
        let at = begin + Duration::from_secs_f64(due);
        if let Some(wait) = at.checked_duration_since(Instant::now()) {
            thread::sleep(wait);
        }
        let start = Instant::now();
        stream.write_all(&request)?;
        let mut got = 0;
        let mut total = usize::MAX;
        while got < total {
            let n = stream.read(&mut buf[got..])?;
            anyhow::ensure!(n > 0, "the floor's server closed the connection");
            got += n;
            if total == usize::MAX {
                total = response_length(&buf[..got])?.unwrap_or(usize::MAX);
            }
        }
        out.push((start, Instant::now()));
        due += gaps.sample(&mut rng);
    }
    Ok(out)
}

/// The same floor on tokio: one async socket on the runtime the client uses. Between the two floors
/// and the client sit, in turn, the async runtime and then the HTTP stack (reqwest and hyper).
async fn async_floor_run(
    url: &str,
    body: &Value,
    rate: f64,
    requests: usize,
) -> anyhow::Result<Vec<(Instant, Instant)>> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = url.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let request = request_bytes(addr, body);
    let gaps = Exp::new(rate)?;
    let mut rng = StdRng::seed_from_u64(1);
    let mut buf = vec![0u8; 64 * 1024];
    let begin = Instant::now();
    let mut due = 0.0;
    let mut out = Vec::with_capacity(requests);
    for _ in 0..requests {
        tokio::time::sleep_until((begin + Duration::from_secs_f64(due)).into()).await;
        let start = Instant::now();
        stream.write_all(&request).await?;
        let mut got = 0;
        let mut total = usize::MAX;
        while got < total {
            let n = stream.read(&mut buf[got..]).await?;
            anyhow::ensure!(n > 0, "the floor's server closed the connection");
            got += n;
            if total == usize::MAX {
                total = response_length(&buf[..got])?.unwrap_or(usize::MAX);
            }
        }
        out.push((start, Instant::now()));
        due += gaps.sample(&mut rng);
    }
    Ok(out)
}

/// One `POST /v1/completions` as bare bytes, headers as reqwest sends them.
fn request_bytes(addr: &str, body: &Value) -> Vec<u8> {
    let body = body.to_string();
    format!(
        "POST /v1/completions HTTP/1.1\r\ncontent-type: application/json\r\naccept: */*\r\nhost: {addr}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Total length of the response in `buf` (head and body), once its head is complete.
fn response_length(buf: &[u8]) -> anyhow::Result<Option<usize>> {
    let Some(end) = find(buf, b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .context("the floor's server sent no content-length")?;
    Ok(Some(end + 4 + length))
}

/// Pair a floor's requests with its server's stamps: one connection, one request at a time, so
/// the server's n-th stamp is the n-th request.
fn pair(spans: &[(Instant, Instant)], stamps: &Stamps) -> anyhow::Result<Vec<Timed>> {
    let stamps = stamps.lock().unwrap_or_else(|e| e.into_inner()).clone();
    anyhow::ensure!(
        stamps.len() == spans.len(),
        "the floor's server saw {} requests, not {}",
        stamps.len(),
        spans.len()
    );
    Ok(spans
        .iter()
        .zip(&stamps)
        .map(|(&(start, end), &server)| Timed { start, end, server })
        .collect())
}

fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let rate: f64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(500.0);
    let requests: usize = args.next().map(|a| a.parse()).transpose()?.unwrap_or(2500);

    let server = start_server()?;
    let config = LoadConfig {
        base_url: server.url.clone(),
        model: "instant".into(),
        traffic: Traffic::OpenLoop { rate, seed: 1 },
        bound: Bound::Requests(requests),
        prompt: Prompt::RandomWords { words: 32, seed: 1 },
        max_tokens: 1,
        ignore_eos: true,
        include_usage: true,
        temperature: 0.0,
        warmup: 20,
        timeout_s: 30.0,
        api_key: None,
        // As `course bench` runs: the bar is drawn when stderr is a terminal.
        progress: true,
    };
    // The runtime `course bench` runs the client on: tokio's default, one worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let out = runtime.block_on(load::run(&config))?;
    let stamped = server
        .stamps
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let at = |offset_ms: f64| out.started + Duration::from_secs_f64(offset_ms / 1000.0);
    let mut timed = Vec::new();
    for r in out.records.iter().filter(|r| r.ok) {
        let server = r
            .prompt_tokens
            .and_then(|serial| stamped.get(serial))
            .context("a request came back without its server stamp")?;
        timed.push(Timed {
            start: at(r.start_ms),
            end: at(r.start_ms + r.e2el_ms),
            server: *server,
        });
    }
    let lag: Vec<f64> = out
        .records
        .iter()
        .filter_map(|r| r.dispatch_lag_ms)
        .collect();
    println!(
        "load client: {} requests at {rate} req/s ({} ok) in {:.2} s, achieved {:.1} req/s, over {} connections",
        out.records.len(),
        timed.len(),
        out.duration_s(),
        timed.len() as f64 / out.duration_s(),
        server.connections.load(Ordering::Relaxed)
    );
    let added = print_split(&timed);
    print_row("dispatch lag (ms, not in latency)", &lag);

    let floor_server = start_server()?;
    let floor = pair(
        &floor_run(&floor_server.url, &config.body(0), rate, requests)?,
        &floor_server.stamps,
    )?;
    println!("floor: the same requests from a bare blocking socket, same schedule");
    let floor_added = print_split(&floor);

    let async_server = start_server()?;
    let spans = runtime.block_on(async_floor_run(
        &async_server.url,
        &config.body(0),
        rate,
        requests,
    ))?;
    println!("async floor: the same from one tokio socket on the client's runtime");
    let async_added = print_split(&pair(&spans, &async_server.stamps)?);

    let p = |xs: &[f64]| {
        let q = |q| percentile(xs, q).unwrap_or(f64::NAN);
        format!(
            "P50 {:.3} / P90 {:.3} / P99 {:.3} ms",
            q(50.0),
            q(90.0),
            q(99.0)
        )
    };
    println!(
        "client overhead at {rate} req/s: added {}; target P99 < 1 ms",
        p(&added)
    );
    println!(
        "  floors: blocking socket {}; tokio socket {}",
        p(&floor_added),
        p(&async_added)
    );
    Ok(())
}
