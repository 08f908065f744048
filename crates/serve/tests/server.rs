//! The server (the `serving` crate, behind `gpt2 serve` and `serve`) on loopback, run on four
//! tiny models: GPT-2's synthetic checkpoint, two Llama-family fixtures (tiny-llama: a
//! separate head and grouped-query attention; tiny-qwen3: RMSNorm on queries and keys and a chat
//! template of its own) and a GGUF file (tiny-qwen3-mixed.gguf: quantized matrices of several
//! types, the tokenizer and ChatML template of its metadata). On each: streamed and whole
//! completions and chat completions, every 400 case, the queue-full 503, continuous batching
//! (requests that join a running batch get exactly their solo tokens), cancellation, 64 clients
//! with some disconnecting, graceful shutdown mid-stream, and the bench load client end to end.
//!
//! They live in this package, which links both model families and the server anyway, rather than
//! in gpt2's tests: there they pulled the HTTP stack (tokio, hyper, reqwest) into gpt2's test
//! build, which scripts/test-aarch64.sh cross-compiles for the CPU code alone.

use std::path::{Path, PathBuf};
use std::sync::mpsc as std_mpsc;
use std::time::Duration;

use engine::generate::{FinishReason, Flow, Request, Sampling};
use futures_util::StreamExt;
use gpt2::{Config, DeviceChoice};
use serde_json::{json, Value};
use serving::scheduler::{Engine, Job, JobEvent};
use serving::{EngineOptions, Loader, ServedModel, Server, StepHook, StepTrace};
use tokio::sync::{mpsc, oneshot};

const MODEL: &str = "tiny";

/// A tiny model to serve: 64-token context, 512-token vocabulary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fixture {
    /// GPT-2's tiny synthetic checkpoint, with its synthetic tokenizer; no chat template.
    Gpt2,
    /// crates/llama/tests/fixtures/tiny-llama (transformers' weights) with a synthetic tokenizer
    /// of its vocabulary; no chat template.
    Llama,
    /// crates/llama/tests/fixtures/tiny-qwen3, a synthetic tokenizer, and [`QWEN3_TEMPLATE`].
    Qwen3,
    /// crates/llama/tests/fixtures/gguf/tiny-qwen3-mixed.gguf (scripts/make-gguf-fixtures.py):
    /// the same weights quantized, loaded as `serve --model FILE.gguf` loads it.
    Qwen3Gguf,
}

/// A chat template written for these tests, in the manner of real ones: a namespace carries the
/// system message past the loop, string methods trim and capitalise, a role it does not know
/// is refused with `raise_exception`, and the cue for the reply depends on
/// `add_generation_prompt`.
const QWEN3_TEMPLATE: &str = "{%- set ns = namespace(sys='') -%}\
{%- for m in messages -%}\
{%- if m.role == 'system' -%}{%- set ns.sys = m.content.strip() -%}\
{%- elif m.role in ['user', 'assistant'] -%}{{ '#' ~ m.role[0].upper() ~ ' ' ~ m.content.strip() ~ '\\n' }}\
{%- else -%}{{ raise_exception('this model takes system, user and assistant messages only') }}\
{%- endif -%}{%- endfor -%}\
{%- if add_generation_prompt -%}{{ ns.sys ~ '#A' }}{%- endif -%}";

impl Fixture {
    /// The checkpoint in a temp dir's `ckpt` folder.
    fn checkpoint(self) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let ckpt = dir.path().join("ckpt");
        let llama = |name: &str| {
            let from = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../llama/tests/fixtures")
                .join(name);
            std::fs::create_dir_all(&ckpt).unwrap();
            for file in ["config.json", "generation_config.json", "model.safetensors"] {
                std::fs::copy(from.join(file), ckpt.join(file)).unwrap();
            }
            engine::tokenizer::write_synthetic(&ckpt.join("tokenizer.json"), 512, 3, "<|end|>")
                .unwrap();
        };
        match self {
            Fixture::Gpt2 => gpt2::weights::write_synthetic(&ckpt, &Config::tiny()).unwrap(),
            Fixture::Llama => llama("tiny-llama"),
            Fixture::Qwen3Gguf => {
                std::fs::create_dir_all(&ckpt).unwrap();
                let from = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../llama/tests/fixtures/gguf/tiny-qwen3-mixed.gguf");
                std::fs::copy(from, ckpt.join("model.gguf")).unwrap();
            }
            Fixture::Qwen3 => {
                llama("tiny-qwen3");
                let config = json!({"chat_template": QWEN3_TEMPLATE, "eos_token": "<|end|>"});
                std::fs::write(ckpt.join("tokenizer_config.json"), config.to_string()).unwrap();
            }
        }
        dir
    }

    /// The model of the checkpoint in `dir` (from [`Fixture::checkpoint`]), as the commands
    /// load it.
    fn load(self, dir: &Path) -> ServedModel {
        let ckpt = dir.join("ckpt");
        let run = gpt2::cli::RunArgs {
            device: DeviceChoice::Cpu,
            ..Default::default()
        };
        match self {
            Fixture::Gpt2 => {
                let args = gpt2::cli::ModelArgs {
                    model: ckpt.to_string_lossy().into_owned(),
                    run,
                };
                gpt2::serve::served_model(&args, "test").unwrap()
            }
            Fixture::Qwen3Gguf => {
                let loaded = llama::gguf::load_for_generation(
                    &ckpt.join("model.gguf"),
                    &candle_core::Device::Cpu,
                    run.kernel_path().unwrap(),
                )
                .unwrap();
                let kv_dtype = serving::kv_dtype(&loaded.model);
                ServedModel {
                    kv_dtype,
                    kv_bytes_per_token: llama::generate::kv_bytes_per_token(
                        loaded.model.config(),
                        kv_dtype,
                    ),
                    limits: loaded.limits,
                    model: Box::new(loaded.model),
                    tokenizer: loaded.tokenizer.unwrap(),
                    chat_template: loaded.chat_template,
                    synthetic: false,
                }
            }
            Fixture::Llama | Fixture::Qwen3 => {
                let model = llama::weights::load(
                    &ckpt,
                    &candle_core::Device::Cpu,
                    candle_core::DType::F32,
                    run.kernel_path().unwrap(),
                )
                .unwrap();
                let cfg = model.config();
                let kv_dtype = serving::kv_dtype(&model);
                ServedModel {
                    kv_dtype,
                    kv_bytes_per_token: llama::generate::kv_bytes_per_token(cfg, kv_dtype),
                    limits: llama::generate::limits(cfg, &ckpt).unwrap(),
                    model: Box::new(model),
                    tokenizer: engine::tokenizer::Tokenizer::from_dir(&ckpt)
                        .unwrap()
                        .unwrap(),
                    chat_template: engine::loader::chat_template(&ckpt).unwrap(),
                    synthetic: false,
                }
            }
        }
    }

    /// Loads the checkpoint in `dir` on the model thread, as the commands do.
    fn loader(self, dir: &Path) -> Loader {
        let dir: PathBuf = dir.to_path_buf();
        Box::new(move || Ok(self.load(&dir)))
    }

    /// The prompt the chat endpoint makes of a system message "Be brief." and a user's "Hi".
    fn chat_prompt(self) -> &'static str {
        match self {
            Fixture::Gpt2 | Fixture::Llama => "System: Be brief.\nUser: Hi\nAssistant:",
            Fixture::Qwen3 => "#U Hi\nBe brief.#A",
            Fixture::Qwen3Gguf => {
                "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
            }
        }
    }
}

/// `request` generated alone, as a reference for what the batch gives it.
fn alone(model: &ServedModel, request: &Request) -> Vec<u32> {
    let done = engine::generate::generate(
        model.model.as_ref(),
        &model.limits,
        std::slice::from_ref(request),
        &mut |_| Flow::Continue,
    )
    .unwrap();
    done[0].tokens.clone()
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

/// Start a server; `on_step` sees every decode step.
async fn start_with(
    fixture: Fixture,
    options: EngineOptions,
    on_step: Option<StepHook>,
) -> TestServer {
    let dir = fixture.checkpoint();
    let server = Server::start(fixture.loader(dir.path()), MODEL.into(), options, on_step).unwrap();
    let chat = server.chat().describe();
    match fixture {
        Fixture::Qwen3 => assert!(chat.contains("tokenizer_config.json"), "{chat}"),
        Fixture::Qwen3Gguf => assert!(chat.contains("model.gguf"), "{chat}"),
        _ => assert!(chat.contains("no chat template"), "{chat}"),
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = oneshot::channel::<()>();
    let done = tokio::spawn(server.serve(listener, async move {
        let _ = rx.await;
    }));
    TestServer {
        url,
        shutdown: Some(tx),
        done,
        _dir: dir,
    }
}

async fn start(fixture: Fixture) -> TestServer {
    start_with(fixture, EngineOptions::new(4, 16), None).await
}

/// A step hook that reports each step and then waits for the test's go-ahead; once the test
/// drops its sender, every step goes ahead at once.
fn gate(traces: std_mpsc::Sender<StepTrace>, go: std_mpsc::Receiver<()>) -> StepHook {
    Box::new(move |trace| {
        let _ = traces.send(trace.clone());
        let _ = go.recv();
    })
}

/// A server whose engine holds each step until the test's go-ahead (see [`gate`]), the traces
/// of its steps, and the go-ahead's sender (dropping it lets every step go).
async fn start_gated(
    fixture: Fixture,
    options: EngineOptions,
) -> (
    TestServer,
    std_mpsc::Receiver<StepTrace>,
    std_mpsc::Sender<()>,
) {
    let (trace_tx, traces) = std_mpsc::channel();
    let (go, go_rx) = std_mpsc::channel();
    let server = start_with(fixture, options, Some(gate(trace_tx, go_rx))).await;
    (server, traces, go)
}

/// Waits (off the async threads) for the next step trace.
async fn next_trace(
    traces: std_mpsc::Receiver<StepTrace>,
) -> (StepTrace, std_mpsc::Receiver<StepTrace>) {
    tokio::task::spawn_blocking(move || {
        let trace = traces
            .recv_timeout(Duration::from_secs(60))
            .expect("a decode step within 60 s");
        (trace, traces)
    })
    .await
    .unwrap()
}

/// The JSON body of a GET.
async fn get_json(url: String) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

async fn post_to(url: &str, path: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}{path}"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap()
}

async fn post(url: &str, body: impl Into<reqwest::Body>) -> reqwest::Response {
    post_to(url, "/v1/completions", body).await
}

/// The `data:` payloads of an SSE body, in order.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter_map(|event| {
            event
                .lines()
                .find_map(|l| l.strip_prefix("data:"))
                .map(|d| d.trim().to_string())
        })
        .collect()
}

/// A whole stream's chunks, parsed, after checking that it ends with `[DONE]`.
fn sse_chunks(text: &str) -> Vec<Value> {
    let data = sse_data(text);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    data[..data.len() - 1]
        .iter()
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Waits until `/health` reports `n` queued requests.
async fn wait_queued(url: &str, n: usize) {
    for _ in 0..400 {
        let health: Value = get_json(format!("{url}/health")).await;
        if health["queued"] == n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("{n} requests never queued");
}

/// The `server_timings` object: three non-negative millisecond figures.
fn check_timings(timings: &Value) {
    for key in ["queue_ms", "prefill_ms", "decode_ms"] {
        let ms = timings[key]
            .as_f64()
            .unwrap_or_else(|| panic!("{key} missing in {timings}"));
        assert!(ms >= 0.0 && ms.is_finite(), "{key} = {ms}");
    }
    assert!(
        timings["prefill_ms"].as_f64().unwrap() > 0.0,
        "a prefill takes time: {timings}"
    );
}

async fn models_and_health(fixture: Fixture) {
    let server = start(fixture).await;
    let models: Value = get_json(format!("{}/v1/models", server.url)).await;
    assert_eq!(models["object"], "list");
    assert_eq!(models["data"][0]["id"], MODEL);
    assert_eq!(models["data"][0]["max_model_len"], 64);
    let health = reqwest::get(format!("{}/health", server.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    let health: Value = health.json().await.unwrap();
    assert_eq!(health["status"], "ok");
    assert_eq!(health["max_batch_size"], 4);
    let missing = reqwest::get(format!("{}/v2/nothing", server.url))
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);
    let body: Value = missing.json().await.unwrap();
    assert!(body["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1/completions"));
    server.stop().await;
}

async fn whole_and_streamed_completions_agree(fixture: Fixture) {
    let server = start(fixture).await;
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
    check_timings(&body["server_timings"]);

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let response = post(&server.url, streamed.to_string()).await;
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/event-stream"));
    let chunks = sse_chunks(&response.text().await.unwrap());
    let text_chunks: Vec<&Value> = chunks
        .iter()
        .filter(|c| {
            c["choices"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty())
        })
        .collect();
    assert!(
        text_chunks.len() >= 2,
        "tokens arrive as separate chunks, got {}",
        text_chunks.len()
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert_eq!(
        text, whole_text,
        "greedy decoding: the stream spells the same text"
    );
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 12);
    check_timings(&usage_chunk["server_timings"]);
    assert_eq!(
        chunks
            .iter()
            .filter(|c| c.get("server_timings").is_some())
            .count(),
        1,
        "only the last chunk has them"
    );
    let finished: Vec<&Value> = chunks
        .iter()
        .filter(|c| !c["choices"][0]["finish_reason"].is_null())
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["choices"][0]["finish_reason"], "length");

    // Token-id prompts are accepted as in OpenAI's API.
    let ids = post(
        &server.url,
        json!({"model": MODEL, "prompt": [1, 2, 3], "max_tokens": 2, "ignore_eos": true})
            .to_string(),
    )
    .await;
    assert_eq!(ids.status(), 200);
    let ids: Value = ids.json().await.unwrap();
    assert_eq!(ids["usage"]["prompt_tokens"], 3);
    server.stop().await;
}

async fn every_invalid_request_is_a_400_naming_its_parameter(fixture: Fixture) {
    let server = start(fixture).await;
    let long_prompt: Vec<u32> = (0..70).collect();
    let cases: Vec<(String, Option<&str>)> = vec![
        ("{\"model\": ".into(), None),
        ("[1, 2, 3]".into(), None),
        ("".into(), None),
        (
            json!({"model": "gpt-4", "prompt": "hi"}).to_string(),
            Some("model"),
        ),
        (json!({"prompt": "hi"}).to_string(), Some("model")),
        (
            json!({"model": 7, "prompt": "hi"}).to_string(),
            Some("model"),
        ),
        (json!({"model": MODEL}).to_string(), Some("prompt")),
        (
            json!({"model": MODEL, "prompt": ""}).to_string(),
            Some("prompt"),
        ),
        (
            json!({"model": MODEL, "prompt": {"text": "hi"}}).to_string(),
            Some("prompt"),
        ),
        (
            json!({"model": MODEL, "prompt": long_prompt}).to_string(),
            Some("prompt"),
        ),
        (
            json!({"model": MODEL, "prompt": [600]}).to_string(),
            Some("prompt"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "max_tokens": 0}).to_string(),
            Some("max_tokens"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "max_tokens": -5}).to_string(),
            Some("max_tokens"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "max_tokens": 64}).to_string(),
            Some("max_tokens"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "max_tokens": "10"}).to_string(),
            Some("max_tokens"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "max_tokens": 2.5}).to_string(),
            Some("max_tokens"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "temperature": "warm"}).to_string(),
            Some("temperature"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "temperature": -1}).to_string(),
            Some("temperature"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "top_p": 0}).to_string(),
            Some("top_p"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "top_p": 1e-300}).to_string(),
            Some("top_p"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "stream": 1}).to_string(),
            Some("stream"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "n": 3}).to_string(),
            Some("n"),
        ),
        (
            json!({"model": MODEL, "prompt": "hi", "stream_options": true, "stream": true})
                .to_string(),
            Some("stream_options"),
        ),
    ];
    for (body, param) in cases {
        let response = post(&server.url, body.clone()).await;
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        let error = &error["error"];
        assert_eq!(error["type"], "invalid_request_error", "{body}");
        assert!(
            error["message"].as_str().is_some_and(|m| m.len() > 10),
            "{body}: {error}"
        );
        assert_eq!(error["param"].as_str(), param, "{body}: {error}");
    }
    server.stop().await;
}

async fn no_body_can_panic_the_server(fixture: Fixture) {
    let server = start(fixture).await;
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
        assert!(
            status == 200 || status == 400,
            "{}: {status}",
            String::from_utf8_lossy(&body[..body.len().min(80)])
        );
    }
    // Past axum's 2 MB body limit: refused before parsing, still with an OpenAI-style body.
    let huge = json!({"model": MODEL, "prompt": "x".repeat(3 << 20)}).to_string();
    let response = post(&server.url, huge).await;
    assert_eq!(response.status(), 413);
    let error: Value = response.json().await.unwrap();
    assert!(
        error["error"]["message"].as_str().unwrap().contains("body"),
        "{error}"
    );
    let health = reqwest::get(format!("{}/health", server.url))
        .await
        .unwrap();
    assert_eq!(health.status(), 200, "still serving");
    server.stop().await;
}

fn small_request() -> String {
    json!({"model": MODEL, "prompt": "hi", "max_tokens": 3, "ignore_eos": true}).to_string()
}

async fn post_owned_response(url: String, body: String) -> reqwest::Response {
    post(&url, body).await
}

async fn post_owned(url: String, body: String) -> u16 {
    post(&url, body).await.status().as_u16()
}

/// `n` small requests sent at once, each answered with its status.
fn small_requests(url: &str, n: usize) -> Vec<tokio::task::JoinHandle<u16>> {
    (0..n)
        .map(|_| tokio::spawn(post_owned(url.to_string(), small_request())))
        .collect()
}

async fn full_queue_answers_503_with_retry_after_then_recovers(fixture: Fixture) {
    let (server, traces, go) = start_gated(fixture, EngineOptions::new(1, 2)).await;
    let url = server.url.clone();
    let first = tokio::spawn(post_owned(url.clone(), small_request()));
    // The model thread has taken the first request and is held before its first pass.
    let (trace, _traces) = next_trace(traces).await;
    assert_eq!(trace.prefill.len(), 1);
    let queued = small_requests(&url, 2);
    wait_queued(&url, 2).await;
    let refused = post(&url, small_request()).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    let error: Value = refused.json().await.unwrap();
    assert_eq!(error["error"]["code"], "queue_full");
    drop(go);
    assert_eq!(first.await.unwrap(), 200);
    for q in queued {
        assert_eq!(
            q.await.unwrap(),
            200,
            "queued requests are served once the model has room"
        );
    }
    server.stop().await;
}

async fn waiting_requests_join_up_to_the_batch_size(fixture: Fixture) {
    let (server, traces, go) = start_gated(fixture, EngineOptions::new(4, 16)).await;
    let url = server.url.clone();
    let first = tokio::spawn(post_owned(url.clone(), small_request()));
    let (trace, traces) = next_trace(traces).await;
    assert_eq!(
        (trace.rows.len(), trace.prefill.len()),
        (0, 1),
        "the first request's prompt"
    );
    let rest = small_requests(&url, 6);
    wait_queued(&url, 6).await;
    drop(go);
    assert_eq!(first.await.unwrap(), 200);
    for r in rest {
        assert_eq!(r.await.unwrap(), 200);
    }
    let traces: Vec<StepTrace> = traces.try_iter().collect();
    let sizes: Vec<usize> = traces
        .iter()
        .map(|t| t.rows.len() + t.prefill.len())
        .collect();
    assert_eq!(
        sizes.iter().max(),
        Some(&4),
        "6 waiting requests with --max-batch-size 4: {traces:?}"
    );
    // The first request decoding when the others came: three prompts shared its next pass,
    // and the four decoded together in the one after.
    assert_eq!(
        (
            traces[0].rows.len(),
            traces[0].joining.len(),
            traces[1].rows.len()
        ),
        (1, 3, 4),
        "{traces:?}"
    );
    server.stop().await;
}

/// A request for the engine tests: greedy unless `seed` is given, fixed length.
fn request(prompt: &[u32], max_tokens: usize, seed: Option<u64>) -> Request {
    let sampling = match seed {
        None => Sampling::greedy(),
        Some(seed) => Sampling {
            temperature: 0.9,
            top_k: Some(40),
            top_p: None,
            seed,
        },
    };
    Request {
        prompt: prompt.to_vec(),
        max_tokens,
        sampling,
        stop_at_eos: false,
    }
}

/// Submits `request` straight to the engine; returns its id and its events.
fn submit(engine: &Engine, request: &Request) -> (u64, mpsc::UnboundedReceiver<JobEvent>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let id = engine
        .submit(Job::new(request.clone(), tx))
        .unwrap_or_else(|_| panic!("queued"));
    (id, rx)
}

/// Reads events until the request is done: its tokens and how it finished.
fn wait_done(rx: &mut mpsc::UnboundedReceiver<JobEvent>) -> (Vec<u32>, FinishReason) {
    loop {
        match rx.blocking_recv() {
            Some(JobEvent::Done { finish, tokens, .. }) => return (tokens, finish),
            Some(JobEvent::Text(_)) => {}
            other => panic!("unexpected event {other:?}"),
        }
    }
}

/// An engine whose every step reports its trace and then waits for the test's go-ahead.
struct Stepped {
    engine: Engine,
    traces: std_mpsc::Receiver<StepTrace>,
    go: Option<std_mpsc::Sender<()>>,
}

impl Stepped {
    fn start(fixture: Fixture, dir: &Path, options: EngineOptions) -> Self {
        let (trace_tx, traces) = std_mpsc::channel();
        let (go, go_rx) = std_mpsc::channel();
        let engine =
            Engine::start(fixture.loader(dir), options, Some(gate(trace_tx, go_rx))).unwrap();
        Stepped {
            engine,
            traces,
            go: Some(go),
        }
    }

    /// The trace of the next forward pass.
    fn next(&self) -> StepTrace {
        self.traces
            .recv_timeout(Duration::from_secs(60))
            .expect("a forward pass")
    }

    /// Submits `request` and returns its id, its events and the trace of the pass it joins.
    fn submit_and_step(
        &self,
        request: &Request,
    ) -> (u64, mpsc::UnboundedReceiver<JobEvent>, StepTrace) {
        let (id, rx) = submit(&self.engine, request);
        (id, rx, self.next())
    }

    /// Lets the waiting pass go on.
    fn go(&self) {
        self.go.as_ref().expect("not released").send(()).unwrap();
    }

    /// From now on every pass goes ahead at once.
    fn release(&mut self) {
        self.go = None;
    }
}

/// `n` token ids from `from`, `stride` apart, within the fixtures' 512-token vocabulary.
fn prompt(n: usize, from: u32, stride: u32) -> Vec<u32> {
    (0..n as u32).map(|i| (from + stride * i) % 500).collect()
}

/// Four requests, each `(prompt length, max_tokens, seed)`: prompt k (from 1) is `prompt(len,
/// k, stride)`, so no two share their first token.
fn four_requests(stride: u32, spec: [(usize, usize, Option<u64>); 4]) -> [Request; 4] {
    let mut from = 0;
    spec.map(|(len, max_tokens, seed)| {
        from += 1;
        request(&prompt(len, from, stride), max_tokens, seed)
    })
}

/// Each request ended at its length with exactly the tokens it gets served alone.
fn assert_solo_tokens(
    solo: &ServedModel,
    done: [(&Request, &mut mpsc::UnboundedReceiver<JobEvent>); 4],
) {
    for (req, rx) in done {
        let (tokens, finish) = wait_done(rx);
        assert_eq!(
            tokens,
            alone(solo, req),
            "prompt of {} tokens",
            req.prompt.len()
        );
        assert_eq!(finish, FinishReason::Length);
    }
}

fn requests_joining_a_running_batch_get_exactly_their_solo_tokens(fixture: Fixture) {
    let dir = fixture.checkpoint();
    let solo = fixture.load(dir.path());
    let mut s = Stepped::start(fixture, dir.path(), EngineOptions::new(4, 16));

    // Different prompt lengths (shorter and longer than the running batch when they join),
    // different output lengths (so rows leave while others decode), one seeded sampler.
    let [a, b, c, d] = four_requests(
        37,
        [
            (5, 20, None),
            (11, 12, None),
            (2, 15, Some(7)),
            (30, 6, None),
        ],
    );

    let (ia, mut ra, t0) = s.submit_and_step(&a);
    assert_eq!(
        (t0.rows.clone(), t0.prefill.clone(), t0.joining.clone()),
        (vec![], vec![(ia, 5)], vec![ia])
    );
    let (ib, mut rb) = submit(&s.engine, &b);
    s.go();
    let t1 = s.next();
    assert_eq!(
        (t1.rows.clone(), t1.prefill.clone(), t1.joining.clone()),
        (vec![ia], vec![(ib, 11)], vec![ib]),
        "b's prompt shares a pass with a's decoding"
    );
    s.go();
    let t2 = s.next();
    assert_eq!(
        (t2.rows.clone(), t2.prefill.clone()),
        (vec![ia, ib], vec![]),
        "a and b decode together"
    );
    let (ic, mut rc) = submit(&s.engine, &c);
    s.go();
    let t3 = s.next();
    assert_eq!(
        (t3.rows.clone(), t3.prefill.clone()),
        (vec![ia, ib], vec![(ic, 2)])
    );
    let (id, mut rd) = submit(&s.engine, &d);
    s.go();
    let t4 = s.next();
    assert_eq!(
        (t4.rows.clone(), t4.prefill.clone()),
        (vec![ia, ib, ic], vec![(id, 30)]),
        "d's prompt is longer than any so far"
    );
    s.go();
    assert_eq!(s.next().rows, vec![ia, ib, ic, id]);
    s.release();

    assert_solo_tokens(
        &solo,
        [(&a, &mut ra), (&b, &mut rb), (&c, &mut rc), (&d, &mut rd)],
    );
    // Rows left as they finished (d after 6 tokens, b after 12, c after 15) while the others went on.
    let later: Vec<usize> = s.traces.try_iter().map(|t| t.rows.len()).collect();
    assert!(
        later.windows(2).all(|w| w[1] <= w[0]),
        "nobody else joined: {later:?}"
    );
    assert!(
        later.contains(&3) && later.contains(&2) && later.contains(&1),
        "{later:?}"
    );
    s.engine.join();
}

fn prompts_longer_than_a_chunk_are_prefilled_beside_the_decoding_ones_and_get_their_solo_tokens(
    fixture: Fixture,
) {
    let dir = fixture.checkpoint();
    let solo = fixture.load(dir.path());
    let options = EngineOptions {
        prefill_chunk: 8,
        ..EngineOptions::new(4, 16)
    };
    let mut s = Stepped::start(fixture, dir.path(), options);

    // d: 30 tokens, in chunks of 8 while a decodes. e (3 tokens) is admitted once d's rest
    // leaves room in a pass, and f (5) in the pass after, when e's rest and f fit in 8.
    let [a, d, e, f] = four_requests(
        41,
        [(4, 24, None), (30, 6, None), (3, 5, Some(11)), (5, 7, None)],
    );

    let (ia, mut ra, t0) = s.submit_and_step(&a);
    assert_eq!(
        (t0.rows.clone(), t0.prefill.clone()),
        (vec![], vec![(ia, 4)]),
        "with nothing decoding, a's prompt goes whole"
    );
    let (id, mut rd) = submit(&s.engine, &d);
    let (ie, mut re) = submit(&s.engine, &e);
    let (iff, mut rf) = submit(&s.engine, &f);
    let mut seen = Vec::new();
    for _ in 0..6 {
        s.go();
        let t = s.next();
        seen.push((t.rows.clone(), t.prefill.clone(), t.joining.clone()));
    }
    s.release();
    let expected = vec![
        (vec![ia], vec![(id, 8)], vec![]),
        (vec![ia], vec![(id, 8)], vec![]),
        (vec![ia], vec![(id, 8)], vec![]),
        (vec![ia], vec![(id, 6), (ie, 2)], vec![id]),
        (vec![ia, id], vec![(ie, 1), (iff, 5)], vec![ie, iff]),
        (vec![ia, id, ie, iff], vec![], vec![]),
    ];
    assert_eq!(seen, expected, "a decodes at every pass while d, then e and f, are prefilled beside it, 8 prompt tokens a pass at most");

    assert_solo_tokens(
        &solo,
        [(&a, &mut ra), (&d, &mut rd), (&e, &mut re), (&f, &mut rf)],
    );
    s.engine.join();
}

fn a_cancelled_request_frees_its_slot_at_the_next_step(fixture: Fixture) {
    let dir = fixture.checkpoint();
    let mut s = Stepped::start(fixture, dir.path(), EngineOptions::new(1, 16));
    let (ia, ra) = submit(&s.engine, &request(&[1, 2, 3], 40, None));
    let (ib, mut rb) = submit(&s.engine, &request(&[4, 5], 3, None));
    let (ic, rc) = submit(&s.engine, &request(&[6], 3, None));
    assert_eq!(s.next().prefill, vec![(ia, 3)]);
    s.go();
    assert_eq!(s.next().rows, vec![ia]);
    // a's client goes away while a decodes; c's while it waits in the queue.
    drop(ra);
    drop(rc);
    s.go();
    let t2 = s.next();
    assert_eq!(
        (t2.rows.clone(), t2.prefill.clone()),
        (vec![], vec![(ib, 2)]),
        "b takes a's slot at the next pass"
    );
    s.release();
    let (tokens, finish) = wait_done(&mut rb);
    assert_eq!((tokens.len(), finish), (3, FinishReason::Length));
    let rest: Vec<StepTrace> = s.traces.try_iter().collect();
    assert!(
        rest.iter()
            .all(|t| !t.rows.contains(&ic) && !t.rows.contains(&ia)),
        "{rest:?}"
    );
    s.engine.join();
}

async fn shutdown_finishes_the_stream_in_flight_then_stops(fixture: Fixture) {
    // The model thread is held before its first decode pass (the first token, from the
    // prompt's pass, is already out) until the test has asked for shutdown.
    let (server, traces, go) = start_gated(fixture, EngineOptions::new(4, 16)).await;
    let url = server.url.clone();
    let body = json!({"model": MODEL, "prompt": "hi", "max_tokens": 30, "ignore_eos": true,
        "stream": true, "stream_options": {"include_usage": true}});
    let response = tokio::spawn(post_owned_response(url.clone(), body.to_string()));
    let (prompt_pass, traces) = next_trace(traces).await;
    assert_eq!(prompt_pass.rows.len(), 0);
    go.send(()).unwrap();
    let (held, _traces) = next_trace(traces).await;
    assert_eq!(held.rows.len(), 1, "held before the first decode pass");
    let mut stream = response.await.unwrap().bytes_stream();
    let mut text = String::from_utf8_lossy(&stream.next().await.unwrap().unwrap()).into_owned();

    let TestServer {
        shutdown,
        done,
        _dir,
        ..
    } = server;
    shutdown.unwrap().send(()).unwrap();
    // New connections are refused once shutdown has begun.
    let mut refused = false;
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(url.trim_start_matches("http://"))
            .await
            .is_err()
        {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(refused, "the listener closes at shutdown");
    assert!(
        !done.is_finished(),
        "the server waits for the stream in flight"
    );
    drop(go);
    while let Some(chunk) = stream.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let data = sse_data(&text);
    assert_eq!(data.last().map(String::as_str), Some("[DONE]"));
    let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    assert_eq!(
        usage["usage"]["completion_tokens"], 30,
        "the whole completion was delivered"
    );
    tokio::time::timeout(Duration::from_secs(30), done)
        .await
        .expect("server exits")
        .unwrap()
        .unwrap();
}

/// One streamed request; `leave_early` drops the connection after the first chunk.
/// Returns the completion tokens the usage chunk reported (None for a client that left).
async fn streamed_client(url: String, i: usize, leave_early: bool) -> Option<u64> {
    let body = json!({"model": MODEL, "prompt": format!("client {i} asks"), "max_tokens": 12 + i % 5,
        "ignore_eos": true, "stream": true, "stream_options": {"include_usage": true}});
    let response = post(&url, body.to_string()).await;
    assert_eq!(response.status(), 200, "client {i}");
    let mut stream = response.bytes_stream();
    if leave_early {
        let _ = stream.next().await;
        return None;
    }
    let mut text = String::new();
    while let Some(chunk) = stream.next().await {
        text.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    let data = sse_data(&text);
    assert_eq!(
        data.last().map(String::as_str),
        Some("[DONE]"),
        "client {i}"
    );
    let usage: Value = serde_json::from_str(&data[data.len() - 2]).unwrap();
    usage["usage"]["completion_tokens"].as_u64()
}

async fn sixty_four_clients_some_leaving_leave_the_server_healthy(fixture: Fixture) {
    let (trace_tx, traces) = std_mpsc::channel::<StepTrace>();
    let record: StepHook = Box::new(move |t| {
        let _ = trace_tx.send(t.clone());
    });
    let server = start_with(fixture, EngineOptions::new(8, 128), Some(record)).await;
    let clients: Vec<_> = (0..64)
        .map(|i| tokio::spawn(streamed_client(server.url.clone(), i, i % 4 == 0)))
        .collect();
    let all = tokio::time::timeout(
        Duration::from_secs(120),
        futures_util::future::join_all(clients),
    )
    .await
    .expect("64 clients within 120 s");
    for (i, outcome) in all.into_iter().enumerate() {
        let tokens = outcome.unwrap();
        if i % 4 != 0 {
            assert_eq!(
                tokens,
                Some(12 + (i % 5) as u64),
                "client {i} got its whole completion"
            );
        }
    }
    let sizes: Vec<usize> = traces.try_iter().map(|t| t.rows.len()).collect();
    assert!(
        sizes.iter().all(|&n| n <= 8),
        "never more than --max-batch-size: {sizes:?}"
    );
    assert!(
        sizes.iter().any(|&n| n > 1),
        "requests were decoded together"
    );
    // Still serving, with nothing left behind in the queue.
    let health: Value = get_json(format!("{}/health", server.url)).await;
    assert_eq!(
        (health["status"].as_str(), health["queued"].as_u64()),
        (Some("ok"), Some(0))
    );
    assert_eq!(post(&server.url, small_request()).await.status(), 200);
    server.stop().await;
}

async fn chat_completions_whole_and_streamed_agree_with_the_same_usage(fixture: Fixture) {
    let server = start(fixture).await;
    let messages =
        json!([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]);
    let request = json!({"model": MODEL, "messages": messages, "max_completion_tokens": 10, "temperature": 0, "ignore_eos": true});
    let response = post_to(&server.url, "/v1/chat/completions", request.to_string()).await;
    let status = response.status();
    let body: Value = response.json().await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["object"], "chat.completion");
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["finish_reason"], "length");
    let whole_text = body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!whole_text.is_empty());
    let usage = &body["usage"];
    assert_eq!(usage["completion_tokens"], 10);
    check_timings(&body["server_timings"]);

    // The prompt is the documented transcript (or the checkpoint's template's rendering), and
    // it is what the completions endpoint gets for the same text.
    let rendered = fixture.chat_prompt();
    let plain = post(&server.url, json!({"model": MODEL, "prompt": rendered, "max_tokens": 10, "temperature": 0, "ignore_eos": true}).to_string()).await;
    let plain: Value = plain.json().await.unwrap();
    assert_eq!(plain["usage"], *usage, "same prompt tokens, same usage");
    assert_eq!(
        plain["choices"][0]["text"].as_str(),
        Some(whole_text.as_str())
    );

    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    streamed["stream_options"] = json!({"include_usage": true});
    let response = post_to(&server.url, "/v1/chat/completions", streamed.to_string()).await;
    assert_eq!(response.status(), 200);
    let chunks = sse_chunks(&response.text().await.unwrap());
    assert!(chunks
        .iter()
        .all(|c| c["object"] == "chat.completion.chunk"));
    assert_eq!(
        chunks[0]["choices"][0]["delta"]["role"], "assistant",
        "the first delta names the role"
    );
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, whole_text);
    let last = chunks.last().unwrap();
    assert_eq!(last["choices"], json!([]));
    assert_eq!(last["usage"], *usage);
    check_timings(&last["server_timings"]);
    let finished: Vec<&Value> = chunks
        .iter()
        .filter(|c| !c["choices"][0]["finish_reason"].is_null())
        .collect();
    assert_eq!(finished.len(), 1);
    assert_eq!(finished[0]["choices"][0]["delta"], json!({}));

    for (body, param) in [
        (json!({"model": MODEL, "prompt": "hi"}), "messages"),
        (
            json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 64}),
            "max_tokens",
        ),
        (
            json!({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 70}),
            "max_completion_tokens",
        ),
        (
            json!({"model": "gpt-4", "messages": [{"role": "user", "content": "hi"}]}),
            "model",
        ),
    ] {
        let response = post_to(&server.url, "/v1/chat/completions", body.to_string()).await;
        assert_eq!(response.status(), 400, "{body}");
        let error: Value = response.json().await.unwrap();
        assert_eq!(error["error"]["param"], param, "{body}: {error}");
    }
    server.stop().await;
}

async fn the_bench_load_client_measures_the_server_end_to_end(fixture: Fixture) {
    let server = start(fixture).await;
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
    for r in &outcome.records {
        let t = r.server_timings.expect("the server reports its timings");
        assert!(
            t.queue_ms >= 0.0 && t.prefill_ms > 0.0 && t.decode_ms > 0.0,
            "{t:?}"
        );
        assert!(
            r.ttft_ms >= t.queue_ms + t.prefill_ms,
            "the client's TTFT holds the server's part: {r:?}"
        );
    }
    let run = bench::report::Run::from_load("served".into(), &config, &Default::default(), outcome)
        .unwrap();
    let metrics = &run.metrics;
    assert_eq!(metrics.completed, 12);
    assert_eq!(metrics.total_output_tokens, 96);
    assert!(metrics.ttft_ms.is_some() && metrics.tpot_ms.is_some());
    let breakdown = metrics
        .ttft_breakdown
        .as_ref()
        .expect("a breakdown against this server");
    assert_eq!(breakdown.requests, 12);
    assert!(breakdown.rest_ms.as_ref().unwrap().min >= 0.0);
    assert!(bench::report::table(&run).contains("TTFT = queue + prefill + rest"));

    // The same load on the chat endpoint.
    // (Three words: the transcript's role lines take room in the tiny model's 64-token context.)
    let chat = bench::load::LoadConfig {
        base_url: format!("{}/v1/chat/completions", server.url),
        prompt: bench::load::Prompt::RandomWords { words: 3, seed: 5 },
        warmup: 0,
        ..config.clone()
    };
    assert_eq!(chat.endpoint(), bench::load::Endpoint::Chat);
    let outcome = bench::load::run(&chat).await.unwrap();
    assert_eq!(outcome.records.len(), 12);
    for r in &outcome.records {
        assert!(
            r.ok && r.output_tokens == 8 && r.server_timings.is_some(),
            "{r:?}"
        );
    }
    server.stop().await;
}

/// A template that refuses a conversation (`raise_exception`) makes it a 400 naming `messages`,
/// with the template's own words; the transcript takes any role.
async fn a_conversation_the_template_refuses_is_a_400_with_its_words(fixture: Fixture) {
    let server = start(fixture).await;
    let body = json!({"model": MODEL, "max_tokens": 2, "ignore_eos": true,
        "messages": [{"role": "tool", "content": "42"}, {"role": "user", "content": "and?"}]});
    let response = post_to(&server.url, "/v1/chat/completions", body.to_string()).await;
    let status = response.status();
    let reply: Value = response.json().await.unwrap();
    match fixture {
        Fixture::Qwen3 => {
            assert_eq!(status, 400, "{reply}");
            assert_eq!(reply["error"]["param"], "messages");
            assert_eq!(
                reply["error"]["message"],
                "this model takes system, user and assistant messages only"
            );
        }
        _ => assert_eq!(status, 200, "{reply}"),
    }
    server.stop().await;
}

/// One `/metrics` scrape, read by the bench client's own reader (`course bench
/// --scrape-metrics`), which must find our names.
async fn scrape(url: &str) -> formats::bench::MetricsSample {
    let response = reqwest::get(format!("{url}/metrics")).await.unwrap();
    assert_eq!(response.status(), 200);
    let text = response.text().await.unwrap();
    let (sample, naming) = bench::scrape::read_sample(&text).unwrap();
    assert_eq!(naming, formats::bench::Naming::Course, "{text}");
    sample
}

/// `/metrics` once the engine has released every finished request: a response's last byte
/// reaches the client just before the engine frees the request's slot and cache, so a scrape
/// right after it may still count it. Polls for up to two seconds, then returns what it read
/// (the caller's assertions say what is wrong).
async fn scrape_when_released(url: &str) -> formats::bench::MetricsSample {
    let mut sample = scrape(url).await;
    for _ in 0..400 {
        if sample.requests_running == Some(0.0) && sample.kv_cache_used_bytes == Some(0.0) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
        sample = scrape(url).await;
    }
    sample
}

/// The gauges rise while a request runs and waits, and return to zero after; the counters add
/// up the prompt and generated tokens; the KV bytes are the request's whole cache.
async fn metrics_follow_the_requests_and_return_to_zero(fixture: Fixture) {
    let (server, traces, go) = start_gated(fixture, EngineOptions::new(1, 16)).await;
    let url = server.url.clone();
    let idle = scrape(&url).await;
    assert_eq!(
        (
            idle.requests_running,
            idle.requests_waiting,
            idle.kv_cache_used_bytes
        ),
        (Some(0.0), Some(0.0), Some(0.0))
    );
    let capacity = idle.kv_cache_capacity_bytes.unwrap();
    assert!(capacity > 0.0);
    assert!(
        idle.resident_memory_bytes.is_some_and(|b| b > 1e6),
        "{idle:?}"
    );

    let body = |n: usize| {
        json!({"model": MODEL, "prompt": [1, 2, 3, 4, 5], "max_tokens": n, "ignore_eos": true})
            .to_string()
    };
    let first = tokio::spawn(post_owned(url.clone(), body(6)));
    let (_, _traces) = next_trace(traces).await;
    let second = tokio::spawn(post_owned(url.clone(), body(3)));
    wait_queued(&url, 1).await;
    let busy = scrape(&url).await;
    assert_eq!(
        (busy.requests_running, busy.requests_waiting),
        (Some(1.0), Some(1.0))
    );
    // --max-batch-size 1 and the default budget: one request of the whole context fits.
    let used = busy.kv_cache_used_bytes.unwrap();
    assert!(used > 0.0 && used < capacity, "{busy:?}");
    assert_eq!(busy.kv_cache_usage, Some(used / capacity));
    // 5 prompt + 6 new tokens, the last never cached: 10 positions.
    assert_eq!(used * 64.0, capacity * 10.0, "{busy:?}");
    drop(go);
    assert_eq!(first.await.unwrap(), 200);
    assert_eq!(second.await.unwrap(), 200);
    let after = scrape_when_released(&url).await;
    assert_eq!(
        (
            after.requests_running,
            after.requests_waiting,
            after.kv_cache_used_bytes,
            after.kv_cache_usage
        ),
        (Some(0.0), Some(0.0), Some(0.0), Some(0.0))
    );
    assert_eq!(after.prompt_tokens_total, Some(10.0));
    assert_eq!(after.generation_tokens_total, Some(9.0));
    server.stop().await;
}

/// With a KV budget that holds one of these requests at a time, a second waits in the queue
/// although the batch has room, then runs; one that could never fit is a 503 at once.
async fn requests_beyond_the_kv_budget_wait_then_complete_and_one_too_big_is_a_503(
    fixture: Fixture,
) {
    let dir = fixture.checkpoint();
    let per_token = fixture.load(dir.path()).kv_bytes_per_token;
    // Room for 12 positions: a request of 4 prompt + 8 new tokens (11 cached) fits, two do not.
    let options = EngineOptions {
        kv_cache: serving::KvCacheSize::Bytes(12 * per_token),
        ..EngineOptions::new(4, 16)
    };
    let (trace_tx, traces) = std_mpsc::channel::<StepTrace>();
    let record: StepHook = Box::new(move |t| {
        let _ = trace_tx.send(t.clone());
    });
    drop(dir);
    let server = start_with(fixture, options, Some(record)).await;
    let url = server.url.clone();
    let body = |prompt: Vec<u32>, n: usize| {
        json!({"model": MODEL, "prompt": prompt, "max_tokens": n, "ignore_eos": true}).to_string()
    };
    let both: Vec<_> = (0..2)
        .map(|i| tokio::spawn(post_owned(url.clone(), body(vec![1 + i, 2, 3, 4], 8))))
        .collect();
    for r in both {
        assert_eq!(
            r.await.unwrap(),
            200,
            "the waiting request runs once the first is done"
        );
    }
    let traces: Vec<StepTrace> = traces.try_iter().collect();
    assert!(
        traces.iter().all(|t| t.rows.len() + t.prefill.len() <= 1),
        "never two at once under this budget: {traces:?}"
    );
    assert_eq!(
        traces.iter().filter(|t| !t.joining.is_empty()).count(),
        2,
        "{traces:?}"
    );

    let too_big = post(&url, body(vec![1, 2, 3, 4, 5, 6, 7, 8], 8)).await;
    assert_eq!(too_big.status(), 503);
    assert!(
        too_big.headers().get("retry-after").is_none(),
        "retrying cannot help"
    );
    let error: Value = too_big.json().await.unwrap();
    assert_eq!(error["error"]["code"], "kv_cache_too_small");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("--kv-cache-bytes"), "{message}");
    let sample = scrape_when_released(&url).await;
    assert_eq!(
        sample.kv_cache_capacity_bytes,
        Some((12 * per_token) as f64)
    );
    assert_eq!(sample.kv_cache_used_bytes, Some(0.0));
    server.stop().await;
}

/// Every test above, once per model.
macro_rules! on_every_model {
    (async: [$($async_test:ident),* $(,)?], sync: [$($sync_test:ident),* $(,)?]) => {
        on_every_model!(@model gpt2_tiny, Fixture::Gpt2, [$($async_test),*], [$($sync_test),*]);
        on_every_model!(@model tiny_llama, Fixture::Llama, [$($async_test),*], [$($sync_test),*]);
        on_every_model!(@model tiny_qwen3, Fixture::Qwen3, [$($async_test),*], [$($sync_test),*]);
        on_every_model!(@model tiny_qwen3_gguf, Fixture::Qwen3Gguf, [$($async_test),*], [$($sync_test),*]);
    };
    (@model $module:ident, $fixture:expr, [$($async_test:ident),*], [$($sync_test:ident),*]) => {
        mod $module {
            use super::Fixture;
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $async_test() {
                    super::$async_test($fixture).await
                }
            )*
            $(
                #[test]
                fn $sync_test() {
                    super::$sync_test($fixture)
                }
            )*
        }
    };
}

on_every_model!(
    async: [
        models_and_health,
        whole_and_streamed_completions_agree,
        every_invalid_request_is_a_400_naming_its_parameter,
        no_body_can_panic_the_server,
        full_queue_answers_503_with_retry_after_then_recovers,
        waiting_requests_join_up_to_the_batch_size,
        shutdown_finishes_the_stream_in_flight_then_stops,
        sixty_four_clients_some_leaving_leave_the_server_healthy,
        chat_completions_whole_and_streamed_agree_with_the_same_usage,
        the_bench_load_client_measures_the_server_end_to_end,
        a_conversation_the_template_refuses_is_a_400_with_its_words,
        metrics_follow_the_requests_and_return_to_zero,
        requests_beyond_the_kv_budget_wait_then_complete_and_one_too_big_is_a_503,
    ],
    sync: [
        requests_joining_a_running_batch_get_exactly_their_solo_tokens,
        prompts_longer_than_a_chunk_are_prefilled_beside_the_decoding_ones_and_get_their_solo_tokens,
        a_cancelled_request_frees_its_slot_at_the_next_step,
    ]
);
