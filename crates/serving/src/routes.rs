//! HTTP routes: `POST /v1/completions`, `POST /v1/chat/completions`, `GET /v1/models`,
//! `GET /health`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::State;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use futures_util::{stream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::api::{self, ApiError, CompletionParams, Endpoint, Prompt};
use crate::chat::ChatFormat;
use crate::scheduler::{Engine, Job, JobEvent, Rejected, Timings};
use engine::generate::{FinishReason, Request, Sampling};
use engine::tokenizer::Tokenizer;

/// What every handler shares.
pub struct AppState {
    pub engine: Engine,
    /// The one model name accepted in requests and listed by `/v1/models`.
    pub served_model: String,
    /// How chat messages become a prompt.
    pub chat: ChatFormat,
    pub created: u64,
    next_id: AtomicU64,
}

impl AppState {
    pub fn new(engine: Engine, served_model: String, chat: ChatFormat) -> AppState {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        AppState {
            engine,
            served_model,
            chat,
            created,
            next_id: AtomicU64::new(0),
        }
    }

    fn tokenizer(&self) -> &Tokenizer {
        &self.engine.tokenizer
    }
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/chat/completions", post(chat_completions))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .fallback(|| async {
            ApiError::not_found(
                "no such route: this server has POST /v1/completions, POST /v1/chat/completions, GET /v1/models, GET /health and GET /metrics",
            )
        })
        .with_state(state)
}

async fn health(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "status": "ok",
        "model": state.served_model,
        "queued": state.engine.queued(),
        "queue_size": state.engine.options.queue_size,
        "max_batch_size": state.engine.options.max_batch_size,
    }))
}

/// The Prometheus text format ([`crate::metrics`]).
async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.engine.metrics_text(),
    )
        .into_response()
}

async fn models(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{
            "id": state.served_model,
            "object": "model",
            "created": state.created,
            "owned_by": "gpt2-course",
            "max_model_len": state.engine.limits.context,
        }],
    }))
}

fn finish_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Length => "length",
        FinishReason::Eos | FinishReason::Stopped => "stop",
    }
}

async fn completions(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    respond(&state, Endpoint::Completions, body).await
}

async fn chat_completions(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    respond(&state, Endpoint::Chat, body).await
}

async fn respond(
    state: &AppState,
    endpoint: Endpoint,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    match start_completion(state, endpoint, body) {
        Ok((params, prompt_tokens, rx)) => {
            let n = state.next_id.fetch_add(1, Ordering::Relaxed);
            let id = match endpoint {
                Endpoint::Completions => format!("cmpl-{n}"),
                Endpoint::Chat => format!("chatcmpl-{n}"),
            };
            let reply = Reply {
                endpoint,
                id,
                created: state.created,
                model: params.model.clone(),
                prompt_tokens,
            };
            if params.stream {
                stream_response(reply, params.include_usage, rx).into_response()
            } else {
                whole_response(reply, rx).await
            }
        }
        Err(e) => e.into_response(),
    }
}

/// Validate, tokenize and queue a request.
fn start_completion(
    state: &AppState,
    endpoint: Endpoint,
    body: Result<Bytes, BytesRejection>,
) -> Result<(CompletionParams, usize, mpsc::UnboundedReceiver<JobEvent>), ApiError> {
    let bytes = body.map_err(|rejection| ApiError {
        status: rejection.status(),
        ..ApiError::bad_body(format!(
            "cannot read the request body: {}",
            rejection.body_text()
        ))
    })?;
    let params = match endpoint {
        Endpoint::Completions => api::parse_completion(&bytes, &state.served_model)?,
        Endpoint::Chat => api::parse_chat(&bytes, &state.served_model)?,
    };
    let param = match endpoint {
        Endpoint::Completions => "prompt",
        Endpoint::Chat => "messages",
    };
    // A text prompt gets the tokens the tokenizer puts around every text (Llama's BOS), as
    // vLLM and llama.cpp's server tokenize completions; a chat template writes its own (its
    // `bos_token`), so what it renders is tokenized as is, or the BOS would come twice.
    let encode = |text: &str, special: bool| {
        let tokenizer = state.tokenizer();
        match special {
            true => tokenizer.encode_with_special_tokens(text),
            false => tokenizer.encode(text),
        }
        .map_err(|e| ApiError::invalid(param, format!("cannot tokenize the prompt: {e}")))
    };
    let prompt = match &params.prompt {
        Prompt::Tokens(ids) => ids.clone(),
        Prompt::Text(text) => encode(text, true)?,
        Prompt::Chat(messages) => encode(
            &state
                .chat
                .render(messages)
                .map_err(|why| ApiError::invalid("messages", why))?,
            matches!(state.chat, ChatFormat::Transcript),
        )?,
    };
    api::check_lengths(
        &prompt,
        params.max_tokens,
        params.max_tokens_param,
        state.engine.vocab_size,
        state.engine.limits.context,
    )?;
    let kv = state.engine.kv;
    let need = kv.need(prompt.len(), params.max_tokens);
    if need > kv.capacity {
        return Err(ApiError {
            code: Some("kv_cache_too_small"),
            retry_after: None,
            ..ApiError::unavailable(format!(
                "this request's KV cache ({} positions x {} bytes = {need} bytes) is larger than the server's whole \
                 KV-cache budget ({} bytes, --kv-cache-bytes): it could never run; send a shorter prompt or a smaller \
                 `{}`, or start the server with a larger --kv-cache-bytes",
                prompt.len() + params.max_tokens - 1,
                kv.bytes_per_token,
                kv.capacity,
                params.max_tokens_param
            ))
        });
    }
    let seed = params
        .seed
        .unwrap_or_else(|| state.next_id.load(Ordering::Relaxed));
    let request = Request {
        prompt,
        max_tokens: params.max_tokens,
        sampling: Sampling {
            temperature: params.temperature,
            top_k: params.top_k,
            top_p: params.top_p,
            seed,
        },
        stop_at_eos: !params.ignore_eos,
    };
    let prompt_tokens = request.prompt.len();
    let (events, rx) = mpsc::unbounded_channel();
    state
        .engine
        .submit(Job::new(request, events))
        .map_err(|why| match why {
            Rejected::QueueFull => ApiError::queue_full(state.engine.queued()),
            Rejected::Stopped => ApiError::unavailable(
                "the model is not running (the server is shutting down); retry later",
            ),
        })?;
    Ok((params, prompt_tokens, rx))
}

/// Identity of one response, repeated in every chunk.
struct Reply {
    endpoint: Endpoint,
    id: String,
    created: u64,
    model: String,
    prompt_tokens: usize,
}

/// The `server_timings` object: where the request's time went on the server, in ms.
fn timings_json(t: &Timings) -> Value {
    let ms = |d: std::time::Duration| (d.as_secs_f64() * 1e6).round() / 1e3;
    json!({ "queue_ms": ms(t.queue), "prefill_ms": ms(t.prefill), "decode_ms": ms(t.decode) })
}

impl Reply {
    fn object(&self, streamed: bool) -> &'static str {
        match (self.endpoint, streamed) {
            (Endpoint::Completions, _) => "text_completion",
            (Endpoint::Chat, false) => "chat.completion",
            (Endpoint::Chat, true) => "chat.completion.chunk",
        }
    }

    fn envelope(&self, streamed: bool, choices: Value) -> Value {
        json!({ "id": self.id, "object": self.object(streamed), "created": self.created, "model": self.model, "choices": choices })
    }

    /// One streamed chunk. A chat stream's first chunk also carries the assistant's role.
    fn chunk(&self, text: &str, finish: Option<&str>, first: bool, with_usage: bool) -> Value {
        let choice = match self.endpoint {
            Endpoint::Completions => {
                json!({ "index": 0, "text": text, "logprobs": null, "finish_reason": finish })
            }
            Endpoint::Chat => {
                let delta = match (first, finish) {
                    (_, Some(_)) => json!({}),
                    (true, None) => json!({ "role": "assistant", "content": text }),
                    (false, None) => json!({ "content": text }),
                };
                json!({ "index": 0, "delta": delta, "logprobs": null, "finish_reason": finish })
            }
        };
        let mut chunk = self.envelope(true, json!([choice]));
        if with_usage {
            // With include_usage, OpenAI sends `usage: null` on every chunk but the last.
            chunk["usage"] = Value::Null;
        }
        chunk
    }

    /// The non-streamed body.
    fn whole(
        &self,
        text: String,
        finish: FinishReason,
        completion_tokens: usize,
        timings: &Timings,
    ) -> Value {
        let choice = match self.endpoint {
            Endpoint::Completions => {
                json!({ "index": 0, "text": text, "logprobs": null, "finish_reason": finish_reason(finish) })
            }
            Endpoint::Chat => json!({
                "index": 0, "message": { "role": "assistant", "content": text }, "logprobs": null,
                "finish_reason": finish_reason(finish),
            }),
        };
        let mut body = self.envelope(false, json!([choice]));
        body["usage"] = self.usage(completion_tokens);
        body["server_timings"] = timings_json(timings);
        body
    }

    fn usage(&self, completion_tokens: usize) -> Value {
        json!({
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": self.prompt_tokens + completion_tokens,
        })
    }
}

/// Server-sent events: one chunk per piece of text, a final chunk with the finish reason,
/// the usage chunk when asked for, then `data: [DONE]`. The last chunk before `[DONE]` carries
/// `server_timings`.
fn stream_response(
    reply: Reply,
    include_usage: bool,
    rx: mpsc::UnboundedReceiver<JobEvent>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let reply = Arc::new(reply);
    let events = stream::unfold((rx, true, false), move |(mut rx, first, finished)| {
        let reply = reply.clone();
        async move {
            if finished {
                return None;
            }
            let mut data: Vec<Value> = match rx.recv().await {
                Some(JobEvent::Text(text)) => {
                    return Some((
                        vec![reply.chunk(&text, None, first, include_usage).to_string()],
                        (rx, false, false),
                    ));
                }
                Some(JobEvent::Done {
                    finish,
                    tokens,
                    timings,
                }) => {
                    let mut data = Vec::new();
                    if first && reply.endpoint == Endpoint::Chat {
                        // No text at all: the role still comes first.
                        data.push(reply.chunk("", None, true, include_usage));
                    }
                    data.push(reply.chunk("", Some(finish_reason(finish)), false, include_usage));
                    if include_usage {
                        let mut usage = reply.envelope(true, json!([]));
                        usage["usage"] = reply.usage(tokens.len());
                        data.push(usage);
                    }
                    if let Some(last) = data.last_mut() {
                        last["server_timings"] = timings_json(&timings);
                    }
                    data
                }
                Some(JobEvent::Failed(message)) => vec![ApiError::internal(message).body()],
                None => vec![
                    ApiError::internal("generation stopped before the request finished").body(),
                ],
            };
            let mut data: Vec<String> = data.drain(..).map(|v| v.to_string()).collect();
            data.push("[DONE]".to_string());
            Some((data, (rx, false, true)))
        }
    });
    Sse::new(
        events
            .flat_map(|data| stream::iter(data.into_iter().map(|d| Ok(Event::default().data(d))))),
    )
}

/// The whole completion in one JSON body.
async fn whole_response(reply: Reply, mut rx: mpsc::UnboundedReceiver<JobEvent>) -> Response {
    let mut text = String::new();
    loop {
        match rx.recv().await {
            Some(JobEvent::Text(piece)) => text.push_str(&piece),
            Some(JobEvent::Done {
                finish,
                tokens,
                timings,
            }) => {
                return Json(reply.whole(text, finish, tokens.len(), &timings)).into_response();
            }
            Some(JobEvent::Failed(message)) => return ApiError::internal(message).into_response(),
            None => {
                return ApiError::internal("generation stopped before the request finished")
                    .into_response()
            }
        }
    }
}
