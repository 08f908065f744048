//! A tiny OpenAI-style completions server for tests: it answers instantly (or with a fixed gap
//! between chunks), streams one SSE chunk per token, and counts how many requests are in flight.

#![allow(dead_code, reason = "each test file uses some of the shared helpers")]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use axum::{Json, Router};
use bench::cli::BenchArgs;
use clap::Parser;
use futures_util::{stream, StreamExt};
use serde_json::{json, Value};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: BenchArgs,
}

/// `list` parsed as the `bench` command line parses it.
pub fn args(list: &[&str]) -> BenchArgs {
    Cli::try_parse_from(std::iter::once("bench").chain(list.iter().copied()))
        .unwrap()
        .args
}

/// The small closed-loop run the tests share (4 at a time, 24 requests of 4 tokens of
/// `test-model`, no progress bar) against `url`, written to `out`, with `extra` flags.
pub fn small_run(url: &str, out: &Path, extra: &[&str]) -> BenchArgs {
    let out = out.to_str().unwrap();
    let mut list = vec![
        "--base-url",
        url,
        "--model",
        "test-model",
        "--concurrency",
        "4",
        "--requests",
        "24",
        "--max-tokens",
        "4",
        "--no-progress",
        "--out",
        out,
    ];
    list.extend_from_slice(extra);
    args(&list)
}

#[derive(Clone, Default)]
pub struct Behaviour {
    /// Gap between streamed chunks.
    pub chunk_gap: Duration,
    /// Leave `usage` out of the stream.
    pub no_usage: bool,
    /// Answer `stream: true` with a plain JSON body anyway.
    pub ignore_stream: bool,
    /// The only model name accepted.
    pub model: &'static str,
    /// Serve `GET /metrics` with our server's names (otherwise it answers 404, as a server
    /// without metrics does).
    pub metrics: bool,
}

#[derive(Default)]
pub struct Counters {
    pub in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    pub requests: AtomicUsize,
    pub generated_tokens: AtomicUsize,
}

struct App {
    behaviour: Behaviour,
    counters: Arc<Counters>,
}

/// Decrements the in-flight count when the response (or its stream) is dropped.
struct InFlight(Arc<Counters>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn completions(State(app): State<Arc<App>>, Json(body): Json<Value>) -> Response {
    let c = &app.counters;
    c.requests.fetch_add(1, Ordering::SeqCst);
    if body["model"] != app.behaviour.model {
        let error = json!({"error": {"message": "unknown model", "type": "invalid_request_error", "code": "model_not_found"}});
        return (StatusCode::NOT_FOUND, Json(error)).into_response();
    }
    let now = c.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
    c.max_in_flight.fetch_max(now, Ordering::SeqCst);
    let guard = InFlight(app.counters.clone());
    let n = body["max_tokens"].as_u64().unwrap_or(16) as usize;
    c.generated_tokens.fetch_add(n, Ordering::SeqCst);
    let prompt_tokens = body["prompt"]
        .as_str()
        .map(|p| p.split_whitespace().count())
        .unwrap_or(0);
    let usage = json!({"prompt_tokens": prompt_tokens, "completion_tokens": n, "total_tokens": prompt_tokens + n});
    if !body["stream"].as_bool().unwrap_or(false) || app.behaviour.ignore_stream {
        tokio::time::sleep(app.behaviour.chunk_gap * n as u32).await;
        drop(guard);
        let text: String = (0..n).map(|i| format!(" t{i}")).collect();
        return Json(
            json!({"id": "cmpl-test", "object": "text_completion", "model": body["model"],
            "choices": [{"index": 0, "text": text, "finish_reason": "length"}], "usage": usage}),
        )
        .into_response();
    }
    let gap = app.behaviour.chunk_gap;
    let with_usage = !app.behaviour.no_usage && body["stream_options"]["include_usage"] == true;
    let model = body["model"].clone();
    let mut data: Vec<String> = (0..n)
        .map(|i| {
            let finish = if i + 1 == n {
                Value::from("length")
            } else {
                Value::Null
            };
            json!({"id": "cmpl-test", "object": "text_completion", "model": model,
                "choices": [{"index": 0, "text": format!(" t{i}"), "finish_reason": finish}]})
            .to_string()
        })
        .collect();
    if with_usage {
        data.push(json!({"id": "cmpl-test", "object": "text_completion", "model": model, "choices": [], "usage": usage}).to_string());
    }
    data.push("[DONE]".to_string());
    let events = stream::iter(data.into_iter().enumerate()).then(move |(i, data)| {
        // The guard lives as long as the stream: the request counts as in flight until then.
        let _held = &guard;
        async move {
            if i > 0 && i < n && !gap.is_zero() {
                tokio::time::sleep(gap).await;
            }
            Ok::<_, Infallible>(Event::default().data(data))
        }
    });
    Sse::new(events).into_response()
}

/// `/metrics` in the OpenMetrics text `prometheus-client` writes, with our server's names: each
/// request in flight holds 1000 bytes of an 8000-byte KV cache.
async fn metrics(State(app): State<Arc<App>>) -> String {
    let c = &app.counters;
    let running = c.in_flight.load(Ordering::SeqCst);
    let generated = c.generated_tokens.load(Ordering::SeqCst);
    format!(
        "# HELP course_requests_running Requests in the running batch.\n\
         # TYPE course_requests_running gauge\ncourse_requests_running {running}\n\
         # HELP course_requests_waiting Requests queued.\n\
         # TYPE course_requests_waiting gauge\ncourse_requests_waiting 0\n\
         # HELP course_kv_cache_used_bytes KV-cache bytes in use.\n\
         # TYPE course_kv_cache_used_bytes gauge\ncourse_kv_cache_used_bytes {}\n\
         # HELP course_kv_cache_capacity_bytes KV-cache budget.\n\
         # TYPE course_kv_cache_capacity_bytes gauge\ncourse_kv_cache_capacity_bytes 8000\n\
         # HELP course_generation_tokens Tokens generated.\n\
         # TYPE course_generation_tokens counter\ncourse_generation_tokens_total {generated}\n\
         # EOF\n",
        running * 1000
    )
}

/// Start the server on a free loopback port; returns its base URL and counters.
pub async fn start(behaviour: Behaviour) -> (String, Arc<Counters>) {
    let counters = Arc::new(Counters::default());
    let app = Arc::new(App {
        behaviour,
        counters: counters.clone(),
    });
    let mut router = Router::new().route("/v1/completions", post(completions));
    if app.behaviour.metrics {
        router = router.route("/metrics", get(metrics));
    }
    let router = router.with_state(app);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr: SocketAddr = listener.local_addr().expect("local addr");
    tokio::spawn(async move {
        // Small SSE writes must not wait for Nagle + delayed ACK (about 40 ms a chunk).
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, router).await.expect("test server");
    });
    (format!("http://{addr}"), counters)
}
