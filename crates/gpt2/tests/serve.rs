//! `gpt2 serve` on loopback with a tiny synthetic model: streamed and whole completions,
//! every 400 case, the queue-full 503, batching, client disconnects, graceful shutdown
//! mid-stream, and the bench load client end to end.

use std::path::Path;
use std::sync::mpsc as std_mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use gpt2::serve::{EngineOptions, Generator, Server};
use gpt2::{Completion, Config, DeviceChoice, FinishReason, Model};
use serde_json::{json, Value};
use tokio::sync::oneshot;

const MODEL: &str = "tiny";

/// The tiny synthetic checkpoint (64-token context, 512-token vocabulary) in a temp dir.
fn tiny_checkpoint() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    gpt2::weights::write_synthetic(&dir.path().join("ckpt"), &Config::tiny()).unwrap();
    dir
}

fn load(dir: &Path) -> (Model, gpt2::Tokenizer) {
    let args = gpt2::cli::ModelArgs {
        model: dir.join("ckpt").to_string_lossy().into_owned(),
        device: DeviceChoice::Cpu,
        dtype: candle_core::DType::F32,
    };
    let loaded = args.load().unwrap();
    (loaded.model, loaded.tokenizer.expect("synthetic checkpoints ship a tokenizer"))
}

struct TestServer {
    url: String,
    shutdown: Option<oneshot::Sender<()>>,
    done: tokio::task::JoinHandle<anyhow::Result<()>>,
    _dir: tempfile::TempDir,
}

impl TestServer {
    async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.done.await.unwrap().unwrap();
    }
}

/// Start a server whose generator is `wrap(model)`.
async fn start_with(options: EngineOptions, wrap: impl FnOnce(Model) -> Generator) -> TestServer {
    let dir = tiny_checkpoint();
    let (model, tokenizer) = load(dir.path());
    let cfg = model.config().clone();
    let server = Server::start(wrap(model), tokenizer, MODEL.into(), cfg.vocab_size, cfg.n_positions, options).unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = oneshot::channel::<()>();
    let done = tokio::spawn(server.serve(listener, async move {
        let _ = rx.await;
    }));
    TestServer { url, shutdown: Some(tx), done, _dir: dir }
}

fn plain(model: Model) -> Generator {
    Box::new(move |requests, on_token| Ok(gpt2::generate(&model, requests, on_token)?))
}

fn options(max_batch_size: usize, queue_size: usize) -> EngineOptions {
    EngineOptions { max_batch_size, queue_size, batch_wait: Duration::ZERO }
}

async fn start() -> TestServer {
    start_with(options(4, 16), plain).await
}

async fn post(url: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}/v1/completions"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|event| event.lines().find_map(|l| l.strip_prefix("data:")).map(|d| d.trim().to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn models_and_health() {
    let server = start().await;
    let models: Value = reqwest::get(format!("{}/v1/models", server.url)).await.unwrap().json().await.unwrap();
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], MODEL);
    assert_eq!(models["data"][0]["max_model_len"], 64);
    let health = reqwest::get(format!("{}/health", server.url)).await.unwrap();
    assert_eq!(health.status(), 200);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["max_batch_size"], 4);
    let missing = reqwest::get(format!("{}/v2/nothing", server.url)).await.unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert!(body["error"]["message"].as_str().unwrap().contains("/v1/completions"));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whole_and_streamed_completions_agree() {
    let server = start().await;
    let request = json!({"model": MODEL, "prompt": "Benchmark, then profile.", "max_tokens": 12,
        "temperature": 0, "ignore_eos": true});
    let response = post(&server.url, request.to_string()).await;
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "text_completion");
    assert_eq!(body["model"], MODEL);
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    let usage = &body["usage"];
    assert_eq!(usage["completion_tokens"], 12);
    let prompt_tokens = usage["prompt_tokens"].as_u64().unwrap();
    assert!(prompt_tokens > 0);
    assert_eq!(usage["total_tokens"], prompt_tokens + 12);
    let whole_text = body["choices"][0]["text"].as_str().unwrap().to_string();
    assert!(!whole_text.is_empty());

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let response = post(&server.url, streamed.to_string()).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let data = sse_data(&response.text().await.unwrap());
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = data[..data.len() - 1].iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let text_chunks: Vec<&Value> = chunks.iter().filter(|c| c["choices"][0]["text"].as_str().is_some_and(|t| !t.is_empty())).collect();
    assert!(text_chunks.len() >= 2, "tokens arrive as separate chunks, got {}", text_chunks.len());
    let text: String = chunks.iter().filter_map(|c| c["choices"][0]["text"].as_str()).collect();
    assert_eq!(text, whole_text, "greedy decoding: the stream spells the same text");
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 12);
    let finished: Vec<&Value> = chunks.iter().filter(|c| !c["choices"][0]["finish_reason"].is_null()).collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["choices"][0]["finish_reason"], "length");

    // Token-id prompts are accepted as in OpenAI's API.
    let ids = post(&server.url, json!({"model": MODEL, "prompt": [1, 2, 3], "max_tokens": 2, "ignore_eos": true}).to_string()).await;
    assert_eq!(ids.status(), 200);
    let ids: Value = ids.json().await.unwrap();
    assert_eq!(ids["usage"]["prompt_tokens"], 3);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_invalid_request_is_a_400_naming_its_parameter() {
    let server = start().await;
    let long_prompt: Vec<u32> = (0..70).collect();
    let cases: Vec<(String, Option<&str>)> = vec![
        ("{\"model\": ".into(), None),
        ("[1, 2, 3]".into(), None),
        ("".into(), None),
        (json!({"model": "gpt-4", "prompt": "hi"}).to_string(), Some("model")),
        (json!({"prompt": "hi"}).to_string(), Some("model")),
        (json!({"model": 7, "prompt": "hi"}).to_string(), Some("model")),
        (json!({"model": MODEL}).to_string(), Some("prompt")),
        (json!({"model": MODEL, "prompt": ""}).to_string(), Some("prompt")),
        (json!({"model": MODEL, "prompt": {"text": "hi"}}).to_string(), Some("prompt")),
        (json!({"model": MODEL, "prompt": long_prompt}).to_string(), Some("prompt")),
        (json!({"model": MODEL, "prompt": [600]}).to_string(), Some("prompt")),
        (json!({"model": MODEL, "prompt": "hi", "max_tokens": 0}).to_string(), Some("max_tokens")),
        (json!({"model": MODEL, "prompt": "hi", "max_tokens": -5}).to_string(), Some("max_tokens")),
        (json!({"model": MODEL, "prompt": "hi", "max_tokens": 64}).to_string(), Some("max_tokens")),
        (json!({"model": MODEL, "prompt": "hi", "max_tokens": "10"}).to_string(), Some("max_tokens")),
        (json!({"model": MODEL, "prompt": "hi", "max_tokens": 2.5}).to_string(), Some("max_tokens")),
        (json!({"model": MODEL, "prompt": "hi", "temperature": "warm"}).to_string(), Some("temperature")),
        (json!({"model": MODEL, "prompt": "hi", "temperature": -1}).to_string(), Some("temperature")),
        (json!({"model": MODEL, "prompt": "hi", "top_p": 0}).to_string(), Some("top_p")),
        (json!({"model": MODEL, "prompt": "hi", "top_p": 1e-300}).to_string(), Some("top_p")),
        (json!({"model": MODEL, "prompt": "hi", "stream": 1}).to_string(), Some("stream")),
        (json!({"model": MODEL, "prompt": "hi", "n": 3}).to_string(), Some("n")),
        (json!({"model": MODEL, "prompt": "hi", "stream_options": true, "stream": true}).to_string(), Some("stream_options")),
    ];
    for (body, param) in cases {
        let response = post(&server.url, body.clone()).await;
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        let error = &error["error"];
        assert_eq!(error["type"], "invalid_request_error", "{body}");
        assert!(error["message"].as_str().is_some_and(|m| m.len() > 10), "{body}: {error}");
        assert_eq!(error["param"].as_str(), param, "{body}: {error}");
    }
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_body_can_panic_the_server() {
    let server = start().await;
    let deep = "[".repeat(10_000) + &"]".repeat(10_000);
    let bodies: Vec<Vec<u8>> = vec![
        vec![0xff, 0xfe, 0x00, 0x80],
        b"null".to_vec(),
        b"\"just a string\"".to_vec(),
        deep.into_bytes(),
        json!({"model": MODEL, "prompt": "hi", "max_tokens": 18446744073709551615u64}).to_string().into_bytes(),
        json!({"model": MODEL, "prompt": "hi", "max_tokens": 1e300}).to_string().into_bytes(),
        json!({"model": MODEL, "prompt": [4294967296u64]}).to_string().into_bytes(),
        json!({"model": MODEL, "prompt": "\u{0}\u{feff}✓ \u{10ffff}", "max_tokens": 1}).to_string().into_bytes(),
        json!({"model": MODEL, "prompt": "hi", "seed": -1, "top_k": 100000, "max_tokens": 1}).to_string().into_bytes(),
        json!({"model": MODEL, "prompt": "hi", "temperature": 2, "top_p": 1e-30, "max_tokens": 1}).to_string().into_bytes(),
        json!({"model": MODEL, "prompt": "hi", "temperature": 1e-300, "max_tokens": 1}).to_string().into_bytes(),
        json!({"model": MODEL, "prompt": ["a"], "max_tokens": 1, "stream": null, "unknown": {"x": [1]}}).to_string().into_bytes(),
    ];
    for body in bodies {
        let response = post(&server.url, body.clone()).await;
        let status = response.status().as_u16();
        assert!(status == 200 || status == 400, "{}: {status}", String::from_utf8_lossy(&body[..body.len().min(80)]));
    }
    // Past axum's 2 MB body limit: refused before parsing, still with an OpenAI-style body.
    let huge = json!({"model": MODEL, "prompt": "x".repeat(3 << 20)}).to_string();
    let response = post(&server.url, huge).await;
    assert_eq!(response.status(), 413);
    let error: Value = response.json().await.unwrap();
    assert!(error["error"]["message"].as_str().unwrap().contains("body"), "{error}");
    let health = reqwest::get(format!("{}/health", server.url)).await.unwrap();
    assert_eq!(health.status(), 200, "still serving");
    server.stop().await;
}

/// A generator that reports each batch's size, then waits for the test's go-ahead.
fn gated(batches: std_mpsc::Sender<usize>, go: Arc<Mutex<std_mpsc::Receiver<()>>>) -> impl FnOnce(Model) -> Generator {
    move |model| {
        Box::new(move |requests, on_token| {
            let _ = batches.send(requests.len());
            let _ = go.lock().unwrap().recv();
            Ok(gpt2::generate(&model, requests, on_token)?)
        })
    }
}

fn small_request() -> String {
    json!({"model": MODEL, "prompt": "hi", "max_tokens": 3, "ignore_eos": true}).to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_queue_answers_503_with_retry_after_then_recovers() {
    let (batch_tx, batch_rx) = std_mpsc::channel();
    let (go_tx, go_rx) = std_mpsc::channel();
    let server = start_with(options(1, 2), gated(batch_tx, Arc::new(Mutex::new(go_rx)))).await;
    let url = server.url.clone();
    let first = tokio::spawn(post_owned(url.clone(), small_request()));
    // The model thread has taken the first request and is held at the gate.
    assert_eq!(tokio::task::spawn_blocking(move || (batch_rx.recv().unwrap(), batch_rx)).await.unwrap().0, 1);
    let queued: Vec<_> = (0..2).map(|_| tokio::spawn(post_owned(url.clone(), small_request()))).collect();
    // Wait until both are in the queue.
    for _ in 0..200 {
        let health: Value = reqwest::get(format!("{url}/health")).await.unwrap().json().await.unwrap();
        if health["queued"] == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let refused = post(&url, small_request()).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "queue_full");
    for _ in 0..3 {
        go_tx.send(()).unwrap();
    }
    assert_eq!(first.await.unwrap(), 200);
    for q in queued {
        assert_eq!(q.await.unwrap(), 200, "queued requests are served once the model is free");
    }
    server.stop().await;
}

async fn post_owned(url: String, body: String) -> u16 {
    post(&url, body).await.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_requests_are_decoded_together_up_to_the_batch_size() {
    let (batch_tx, batch_rx) = std_mpsc::channel();
    let (go_tx, go_rx) = std_mpsc::channel();
    let server = start_with(options(4, 16), gated(batch_tx, Arc::new(Mutex::new(go_rx)))).await;
    let url = server.url.clone();
    let first = tokio::spawn(post_owned(url.clone(), small_request()));
    let batch_rx = tokio::task::spawn_blocking(move || {
        assert_eq!(batch_rx.recv().unwrap(), 1);
        batch_rx
    })
    .await
    .unwrap();
    let rest: Vec<_> = (0..6).map(|_| tokio::spawn(post_owned(url.clone(), small_request()))).collect();
    for _ in 0..200 {
        let health: Value = reqwest::get(format!("{url}/health")).await.unwrap().json().await.unwrap();
        if health["queued"] == 6 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for _ in 0..3 {
        go_tx.send(()).unwrap();
    }
    assert_eq!(first.await.unwrap(), 200);
    for r in rest {
        assert_eq!(r.await.unwrap(), 200);
    }
    let sizes: Vec<usize> = batch_rx.try_iter().collect();
    assert_eq!(sizes, vec![4, 2], "6 waiting requests with --max-batch-size 4");
    server.stop().await;
}

/// Records how every row of every batch finished.
fn recording(finishes: Arc<Mutex<Vec<FinishReason>>>) -> impl FnOnce(Model) -> Generator {
    move |model| {
        Box::new(move |requests, on_token| {
            let mut slow = |event: gpt2::TokenEvent| {
                std::thread::sleep(Duration::from_millis(2));
                on_token(event)
            };
            let out: Vec<Completion> = gpt2::generate(&model, requests, &mut slow)?;
            finishes.lock().unwrap().extend(out.iter().map(|c| c.finish));
            Ok(out)
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_disconnects_mid_stream_stops_its_row() {
    let finishes = Arc::new(Mutex::new(Vec::new()));
    let server = start_with(options(4, 16), recording(finishes.clone())).await;
    let body = json!({"model": MODEL, "prompt": "hi", "max_tokens": 50, "ignore_eos": true, "stream": true});
    let response = post(&server.url, body.to_string()).await;
    let mut stream = response.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("data:"));
    drop(stream);
    for _ in 0..500 {
        if !finishes.lock().unwrap().is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(*finishes.lock().unwrap(), vec![FinishReason::Stopped]);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_finishes_the_stream_in_flight_then_stops() {
    // The generator pauses after the first token until the test has asked for shutdown.
    let (resume_tx, resume_rx) = std_mpsc::channel::<()>();
    let resume_rx = Arc::new(Mutex::new(resume_rx));
    let server = start_with(options(4, 16), move |model| {
        Box::new(move |requests, on_token| {
            let mut first = true;
            let mut paced = |event: gpt2::TokenEvent| {
                let flow = on_token(event);
                if std::mem::take(&mut first) {
                    let _ = resume_rx.lock().unwrap().recv();
                }
                flow
            };
            Ok(gpt2::generate(&model, requests, &mut paced)?)
        })
    })
    .await;
    let url = server.url.clone();
    let body = json!({"model": MODEL, "prompt": "hi", "max_tokens": 30, "ignore_eos": true,
        "stream": true, "stream_options": {"include_usage": true}});
    let response = post(&url, body.to_string()).await;
    let mut stream = response.bytes_stream();
    let mut text = String::from_utf8_lossy(&stream.next().await.unwrap().unwrap()).into_owned();

    let TestServer { shutdown, done, _dir, .. } = server;
    shutdown.unwrap().send(()).unwrap();
    // New connections are refused once shutdown has begun.
    let mut refused = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(url.trim_start_matches("http://")).await.is_err() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(refused, "the listener closes at shutdown");
    assert!(!done.is_finished(), "the server waits for the stream in flight");
    resume_tx.send(()).unwrap();
    while let Some(chunk) = stream.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let data = sse_data(&text);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(usage["usage"]["completion_tokens"], 30, "the whole completion was delivered");
    tokio::time::timeout(Duration::from_secs(30), done).await.expect("server exits").unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bench_load_client_measures_the_server_end_to_end() {
    let server = start().await;
    let config = bench::load::LoadConfig {
        base_url: server.url.clone(),
        model: MODEL.into(),
        traffic: bench::load::Traffic::ClosedLoop { concurrency: 4 },
        bound: bench::load::Bound::Requests(12),
        prompt: bench::load::Prompt::RandomWords { words: 6, seed: 5 },
        max_tokens: 8,
        ignore_eos: true,
        include_usage: true,
        temperature: 0.0,
        warmup: 1,
        timeout_s: 60.0,
        api_key: None,
        progress: false,
    };
    let outcome = bench::load::run(&config).await.unwrap();
    assert_eq!(outcome.records.len(), 12);
    for r in &outcome.records {
        assert!(r.ok, "{r:?}");
        assert_eq!(r.output_tokens, 8, "usage.completion_tokens");
        assert!(r.prompt_tokens.is_some_and(|n| n > 0));
        assert!(r.ttft_ms > 0.0 && r.e2el_ms >= r.ttft_ms);
    }
    let metrics = bench::metrics::compute(&outcome.records, outcome.duration_s, &Default::default(), 0);
    assert_eq!(metrics.completed, 12);
    assert_eq!(metrics.total_output_tokens, 96);
    assert!(metrics.ttft_ms.is_some() && metrics.tpot_ms.is_some());
    server.stop().await;
}

