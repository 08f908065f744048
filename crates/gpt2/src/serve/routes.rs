//! HTTP routes: `POST /v1/completions`, `GET /v1/models`, `GET /health`.

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

use super::api::{self, ApiError, CompletionParams, Prompt};
use super::engine::{Engine, Job, JobEvent, Rejected};
use crate::generate::{FinishReason, Request, Sampling};
use crate::tokenizer::Tokenizer;

/// What every handler shares.
pub struct AppState {
    pub engine: Engine,
    pub tokenizer: Arc<Tokenizer>,
    /// The one model name accepted in requests and listed by `/v1/models`.
    pub served_model: String,
    pub vocab_size: usize,
    pub context: usize,
    pub created: u64,
    next_id: AtomicU64,
}

impl AppState {
    pub fn new(engine: Engine, tokenizer: Arc<Tokenizer>, served_model: String, vocab_size: usize, context: usize) -> AppState {
        let created = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        AppState { engine, tokenizer, served_model, vocab_size, context, created, next_id: AtomicU64::new(0) }
    }
}

pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .fallback(|| async { ApiError::not_found("no such route: this server has POST /v1/completions, GET /v1/models and GET /health") })
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

async fn models(State(state): State<Arc<AppState>>) -> Json<Value> {
    Json(json!({
        "object": "list",
        "data": [{
            "id": state.served_model,
            "object": "model",
            "created": state.created,
            "owned_by": "gpt2-course",
            "max_model_len": state.context,
        }],
    }))
}

fn finish_reason(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Length => "length",
        FinishReason::Eos | FinishReason::Stopped => "stop",
    }
}

async fn completions(State(state): State<Arc<AppState>>, body: Result<Bytes, BytesRejection>) -> Response {
    match start_completion(&state, body) {
        Ok((params, prompt_tokens, rx)) => {
            let id = format!("cmpl-{}", state.next_id.fetch_add(1, Ordering::Relaxed));
            let reply = Reply { id, created: state.created, model: params.model.clone(), prompt_tokens };
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
    body: Result<Bytes, BytesRejection>,
) -> Result<(CompletionParams, usize, mpsc::UnboundedReceiver<JobEvent>), ApiError> {
    let bytes = body.map_err(|rejection| ApiError {
        status: rejection.status(),
        ..ApiError::bad_body(format!("cannot read the request body: {}", rejection.body_text()))
    })?;
    let params = api::parse_completion(&bytes, &state.served_model)?;
    let prompt = match &params.prompt {
        Prompt::Tokens(ids) => ids.clone(),
        Prompt::Text(text) => state
            .tokenizer
            .encode(text)
            .map_err(|e| ApiError::invalid("prompt", format!("cannot tokenize the prompt: {e}")))?,
    };
    api::check_lengths(&prompt, params.max_tokens, state.vocab_size, state.context)?;
    let seed = params.seed.unwrap_or_else(|| state.next_id.load(Ordering::Relaxed));
    let request = Request {
        prompt,
        max_tokens: params.max_tokens,
        sampling: Sampling { temperature: params.temperature, top_k: params.top_k, top_p: params.top_p, seed },
        stop_at_eos: !params.ignore_eos,
    };
    let prompt_tokens = request.prompt.len();
    let (events, rx) = mpsc::unbounded_channel();
    state.engine.submit(Job { request, events }).map_err(|why| match why {
        Rejected::QueueFull => ApiError::queue_full(state.engine.queued()),
        Rejected::Stopped => ApiError::unavailable("the model is not running (the server is shutting down); retry later"),
    })?;
    Ok((params, prompt_tokens, rx))
}

/// Identity of one response, repeated in every chunk.
struct Reply {
    id: String,
    created: u64,
    model: String,
    prompt_tokens: usize,
}

impl Reply {
    fn chunk(&self, text: &str, finish: Option<&str>, with_usage: bool) -> Value {
        let mut chunk = json!({
            "id": self.id,
            "object": "text_completion",
            "created": self.created,
            "model": self.model,
            "choices": [{ "index": 0, "text": text, "logprobs": null, "finish_reason": finish }],
        });
        if with_usage {
            // With include_usage, OpenAI sends `usage: null` on every chunk but the last.
            chunk["usage"] = Value::Null;
        }
        chunk
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
/// the usage chunk when asked for, then `data: [DONE]`.
fn stream_response(
    reply: Reply,
    include_usage: bool,
    rx: mpsc::UnboundedReceiver<JobEvent>,
) -> Sse<impl futures_util::Stream<Item = Result<Event, std::convert::Infallible>>> {
    let reply = Arc::new(reply);
    let events = stream::unfold((rx, false), move |(mut rx, finished)| {
        let reply = reply.clone();
        async move {
            if finished {
                return None;
            }
            let mut data: Vec<String> = match rx.recv().await {
                Some(JobEvent::Text(text)) => {
                    return Some((vec![reply.chunk(&text, None, include_usage).to_string()], (rx, false)));
                }
                Some(JobEvent::Done { finish, completion_tokens }) => {
                    let mut data = vec![reply.chunk("", Some(finish_reason(finish)), include_usage).to_string()];
                    if include_usage {
                        let usage = json!({
                            "id": reply.id, "object": "text_completion", "created": reply.created,
                            "model": reply.model, "choices": [], "usage": reply.usage(completion_tokens),
                        });
                        data.push(usage.to_string());
                    }
                    data
                }
                Some(JobEvent::Failed(message)) => vec![ApiError::internal(message).body().to_string()],
                None => vec![ApiError::internal("generation stopped before the request finished").body().to_string()],
            };
            data.push("[DONE]".to_string());
            Some((data, (rx, true)))
        }
    });
    Sse::new(events.flat_map(|data| stream::iter(data.into_iter().map(|d| Ok(Event::default().data(d))))))
}

/// The whole completion in one JSON body.
async fn whole_response(reply: Reply, mut rx: mpsc::UnboundedReceiver<JobEvent>) -> Response {
    let mut text = String::new();
    loop {
        match rx.recv().await {
            Some(JobEvent::Text(piece)) => text.push_str(&piece),
            Some(JobEvent::Done { finish, completion_tokens }) => {
                return Json(json!({
                    "id": reply.id,
                    "object": "text_completion",
                    "created": reply.created,
                    "model": reply.model,
                    "choices": [{ "index": 0, "text": text, "logprobs": null, "finish_reason": finish_reason(finish) }],
                    "usage": reply.usage(completion_tokens),
                }))
                .into_response();
            }
            Some(JobEvent::Failed(message)) => return ApiError::internal(message).into_response(),
            None => return ApiError::internal("generation stopped before the request finished").into_response(),
        }
    }
}
