//! The OpenAI completions and chat-completions requests, checked field by field, the chat
//! template, and OpenAI-style error bodies.
//!
//! Every field is read from a `serde_json::Value` by hand rather than through a derived
//! struct, so that each rejection names the parameter at fault (`param`), says what was
//! expected, and no body — however malformed — can panic the server.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

/// An error answered as `{"error": {"message", "type", "param", "code"}}`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub kind: &'static str,
    pub param: Option<&'static str>,
    pub code: Option<&'static str>,
    /// Seconds, for `Retry-After`.
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn invalid(param: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
            kind: "invalid_request_error",
            param: Some(param),
            code: None,
            retry_after: None,
        }
    }

    pub fn with_code(mut self, code: &'static str) -> ApiError {
        self.code = Some(code);
        self
    }

    pub fn bad_body(message: impl Into<String>) -> ApiError {
        ApiError {
            param: None,
            ..ApiError::invalid("", message)
        }
    }

    pub fn queue_full(queued: usize) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: format!(
                "the server is at capacity: {queued} requests are already waiting (--queue-size); retry after 1 s"
            ),
            kind: "server_overloaded",
            param: None,
            code: Some("queue_full"),
            retry_after: Some(1),
        }
    }

    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: Some("unavailable"),
            retry_after: Some(1),
        }
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
            kind: "server_error",
            param: None,
            code: None,
            retry_after: None,
        }
    }

    pub fn not_found(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
            kind: "invalid_request_error",
            param: None,
            code: Some("not_found"),
            retry_after: None,
        }
    }

    pub fn body(&self) -> Value {
        json!({ "error": {
            "message": self.message,
            "type": self.kind,
            "param": self.param.filter(|p| !p.is_empty()),
            "code": self.code,
        }})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

/// The prompt as sent: text to tokenize, token ids, or chat messages (rendered into text by
/// the server's [`crate::chat::ChatFormat`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Prompt {
    Text(String),
    Tokens(Vec<u32>),
    Chat(Vec<Message>),
}

/// Which OpenAI endpoint a body was sent to: the fields differ a little.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endpoint {
    /// `POST /v1/completions`: a `prompt`.
    Completions,
    /// `POST /v1/chat/completions`: `messages`, rendered by the server's chat format.
    Chat,
}

/// A checked `POST /v1/completions` or `/v1/chat/completions` body (the fields this server
/// acts on). A chat body's messages are [`Prompt::Chat`].
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionParams {
    pub model: String,
    pub prompt: Prompt,
    pub max_tokens: usize,
    /// The field `max_tokens` came from (`max_completion_tokens` in a chat body that sent it),
    /// so a length refused later names what the client sent.
    pub max_tokens_param: &'static str,
    pub temperature: f64,
    pub top_p: Option<f64>,
    pub top_k: Option<usize>,
    pub seed: Option<u64>,
    pub stream: bool,
    pub include_usage: bool,
    /// vLLM's extension: keep generating past the end-of-text token.
    pub ignore_eos: bool,
}

/// OpenAI's default when `max_tokens` is absent.
pub const DEFAULT_MAX_TOKENS: usize = 16;

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A present, non-null field.
fn field<'a>(body: &'a Value, name: &str) -> Option<&'a Value> {
    body.get(name).filter(|v| !v.is_null())
}

fn bool_field(body: &Value, name: &'static str) -> Result<bool, ApiError> {
    match field(body, name) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(v) => Err(ApiError::invalid(
            name,
            format!("`{name}` must be a boolean, got {}", type_name(v)),
        )),
    }
}

fn number_field(body: &Value, name: &'static str) -> Result<Option<f64>, ApiError> {
    match field(body, name) {
        None => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or_else(|| {
            ApiError::invalid(
                name,
                format!("`{name}` must be a number, got {}", type_name(v)),
            )
        }),
    }
}

fn integer_field(body: &Value, name: &'static str) -> Result<Option<i64>, ApiError> {
    match field(body, name) {
        None => Ok(None),
        Some(v) => match v.as_i64() {
            Some(n) => Ok(Some(n)),
            None if v.is_u64() => Err(ApiError::invalid(name, format!("`{name}` is too large"))),
            None => Err(ApiError::invalid(
                name,
                format!("`{name}` must be an integer, got {}", describe(v)),
            )),
        },
    }
}

fn describe(v: &Value) -> String {
    match v {
        Value::Number(n) => format!("{n}"),
        other => type_name(other).to_string(),
    }
}

/// Check a `/v1/completions` body against the OpenAI schema and this server's limits.
/// `served` is the one model name accepted. Token-count limits are checked later, once the
/// prompt is tokenized ([`check_lengths`]).
pub fn parse_completion(bytes: &[u8], served: &str) -> Result<CompletionParams, ApiError> {
    parse_request(bytes, served, Endpoint::Completions)
}

/// Check a `/v1/chat/completions` body as [`parse_completion`] checks a completions body.
pub fn parse_chat(bytes: &[u8], served: &str) -> Result<CompletionParams, ApiError> {
    parse_request(bytes, served, Endpoint::Chat)
}

fn parse_request(
    bytes: &[u8],
    served: &str,
    endpoint: Endpoint,
) -> Result<CompletionParams, ApiError> {
    let body: Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_body(format!(
            "the body is not valid JSON (line {}, column {}: {e}); send a JSON object such as \
             {{\"model\": \"{served}\", \"prompt\": \"Hello\", \"max_tokens\": 16}}",
            e.line(),
            e.column()
        ))
    })?;
    if !body.is_object() {
        return Err(ApiError::bad_body(format!(
            "the body must be a JSON object, got {}",
            type_name(&body)
        )));
    }

    let model = match field(&body, "model") {
        None => {
            return Err(ApiError::invalid(
                "model",
                format!("`model` is required; this server serves \"{served}\""),
            ))
        }
        Some(Value::String(m)) => m.clone(),
        Some(v) => {
            return Err(ApiError::invalid(
                "model",
                format!("`model` must be a string, got {}", type_name(v)),
            ))
        }
    };
    if model != served {
        return Err(ApiError::invalid("model", format!("the model `{model}` does not exist; this server serves \"{served}\" (GET /v1/models)"))
            .with_code("model_not_found"));
    }

    let prompt = match endpoint {
        Endpoint::Completions => match field(&body, "prompt") {
            None => {
                return Err(ApiError::invalid(
                    "prompt",
                    "`prompt` is required: a string or an array of token ids",
                ))
            }
            Some(Value::String(s)) if s.is_empty() => {
                return Err(ApiError::invalid("prompt", "`prompt` is empty"))
            }
            Some(Value::String(s)) => Prompt::Text(s.clone()),
            Some(Value::Array(items)) => parse_array_prompt(items)?,
            Some(v) => {
                return Err(ApiError::invalid(
                    "prompt",
                    format!(
                        "`prompt` must be a string or an array of token ids, got {}",
                        type_name(v)
                    ),
                ))
            }
        },
        Endpoint::Chat => Prompt::Chat(parse_messages(field(&body, "messages"))?),
    };

    // Chat's newer name wins over the older one it replaces.
    let (length_param, given) = match (endpoint, integer_field(&body, "max_completion_tokens")?) {
        (Endpoint::Chat, Some(n)) => ("max_completion_tokens", Some(n)),
        _ => ("max_tokens", integer_field(&body, "max_tokens")?),
    };
    let max_tokens = match given {
        None => DEFAULT_MAX_TOKENS,
        Some(n) if n < 1 => {
            return Err(ApiError::invalid(
                length_param,
                format!("`{length_param}` must be at least 1, got {n}"),
            ))
        }
        Some(n) => usize::try_from(n).map_err(|_| {
            ApiError::invalid(length_param, format!("`{length_param}` is too large"))
        })?,
    };

    let temperature = number_field(&body, "temperature")?.unwrap_or(1.0);
    if !(0.0..=2.0).contains(&temperature) {
        return Err(ApiError::invalid(
            "temperature",
            format!("`temperature` must be between 0 and 2, got {temperature}"),
        ));
    }
    let top_p = number_field(&body, "top_p")?;
    if let Some(p) = top_p {
        // Sampling works in f32: a p that rounds to 0 there would keep no token at all.
        if !(p > 0.0 && p <= 1.0 && (p as f32) > 0.0) {
            return Err(ApiError::invalid(
                "top_p",
                format!("`top_p` must be in (0, 1] (and at least 1e-38), got {p}"),
            ));
        }
    }
    // vLLM's extension; -1 (and 0) mean "no top-k", as there.
    let top_k = match integer_field(&body, "top_k")? {
        None | Some(-1) | Some(0) => None,
        Some(k) if k < -1 => {
            return Err(ApiError::invalid(
                "top_k",
                format!("`top_k` must be -1 (off) or at least 1, got {k}"),
            ))
        }
        Some(k) => Some(k as usize),
    };
    let seed = integer_field(&body, "seed")?.map(|s| s as u64);
    match integer_field(&body, "n")? {
        None | Some(1) => {}
        Some(n) => {
            return Err(ApiError::invalid(
                "n",
                format!("`n` must be 1 (one completion per request), got {n}"),
            ))
        }
    }
    if let Some(best_of) = integer_field(&body, "best_of")? {
        if best_of != 1 {
            return Err(ApiError::invalid(
                "best_of",
                "`best_of` is not supported; leave it out or set it to 1",
            ));
        }
    }
    let unsupported: &[&'static str] = match endpoint {
        Endpoint::Completions => &["stop", "logprobs", "suffix", "logit_bias"],
        Endpoint::Chat => &["stop", "logit_bias", "tools", "functions", "top_logprobs"],
    };
    for &param in unsupported {
        // An empty list (or map) asks for nothing, and some clients always send one.
        let empty = |v: &Value| {
            matches!(v, Value::Array(a) if a.is_empty())
                || matches!(v, Value::Object(o) if o.is_empty())
        };
        if field(&body, param).is_some_and(|v| !empty(v)) {
            return Err(ApiError::invalid(
                param,
                format!("`{param}` is not supported by this server; leave it out"),
            ));
        }
    }
    let refused_flag = match endpoint {
        Endpoint::Completions => "echo",
        Endpoint::Chat => "logprobs",
    };
    if bool_field(&body, refused_flag)? {
        return Err(ApiError::invalid(
            refused_flag,
            format!("`{refused_flag}` is not supported by this server; leave it out"),
        ));
    }

    let stream = bool_field(&body, "stream")?;
    let include_usage = match field(&body, "stream_options") {
        None => false,
        Some(opts @ Value::Object(_)) => bool_field(opts, "include_usage").map_err(|_| {
            ApiError::invalid(
                "stream_options",
                "`stream_options.include_usage` must be a boolean",
            )
        })?,
        Some(v) => {
            return Err(ApiError::invalid(
                "stream_options",
                format!("`stream_options` must be an object, got {}", type_name(v)),
            ))
        }
    };
    if include_usage && !stream {
        return Err(ApiError::invalid(
            "stream_options",
            "`stream_options` is only allowed when `stream` is true",
        ));
    }
    let ignore_eos = bool_field(&body, "ignore_eos")?;

    Ok(CompletionParams {
        model,
        prompt,
        max_tokens,
        max_tokens_param: length_param,
        temperature,
        top_p,
        top_k,
        seed,
        stream,
        include_usage,
        ignore_eos,
    })
}

/// One chat message: its role and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    pub role: String,
    pub content: String,
}

const ROLES: [&str; 5] = ["system", "developer", "user", "assistant", "tool"];

fn parse_messages(messages: Option<&Value>) -> Result<Vec<Message>, ApiError> {
    let bad = |message: String| ApiError::invalid("messages", message);
    let items = match messages {
        None => {
            return Err(bad(
                "`messages` is required: an array of {\"role\", \"content\"} objects".into(),
            ))
        }
        Some(Value::Array(items)) if items.is_empty() => {
            return Err(bad("`messages` is empty: send at least one message".into()))
        }
        Some(Value::Array(items)) => items,
        Some(v) => {
            return Err(bad(format!(
                "`messages` must be an array, got {}",
                type_name(v)
            )))
        }
    };
    items
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let role = match m.get("role") {
                Some(Value::String(r)) if ROLES.contains(&r.as_str()) => r.clone(),
                Some(Value::String(r)) => return Err(bad(format!("messages[{i}].role `{r}` is not one of {}", ROLES.join(", ")))),
                _ => return Err(bad(format!("messages[{i}] needs a string `role` ({})", ROLES.join(", ")))),
            };
            let content = match m.get("content") {
                Some(Value::String(text)) => text.clone(),
                // The parts form: only text parts, joined.
                Some(Value::Array(parts)) => parts
                    .iter()
                    .map(|p| match (p.get("type").and_then(Value::as_str), p.get("text").and_then(Value::as_str)) {
                        (Some("text"), Some(text)) => Ok(text),
                        _ => Err(bad(format!("messages[{i}].content: only text parts ({{\"type\": \"text\", \"text\": ...}}) are supported"))),
                    })
                    .collect::<Result<Vec<&str>, ApiError>>()?
                    .concat(),
                None | Some(Value::Null) => String::new(),
                Some(v) => return Err(bad(format!("messages[{i}].content must be a string or an array of text parts, got {}", type_name(v)))),
            };
            Ok(Message { role, content })
        })
        .collect()
}

fn parse_array_prompt(items: &[Value]) -> Result<Prompt, ApiError> {
    match items {
        [] => Err(ApiError::invalid("prompt", "`prompt` is empty")),
        [Value::String(s)] if !s.is_empty() => Ok(Prompt::Text(s.clone())),
        [Value::String(_), ..] => {
            Err(ApiError::invalid("prompt", "send one prompt per request (an array of several strings is a batch, which this server does not take)"))
        }
        ids => ids
            .iter()
            .map(|v| v.as_u64().and_then(|n| u32::try_from(n).ok()))
            .collect::<Option<Vec<u32>>>()
            .map(Prompt::Tokens)
            .ok_or_else(|| ApiError::invalid("prompt", "an array `prompt` must hold token ids (non-negative integers)")),
    }
}

/// Check the tokenized prompt against the vocabulary and the context window.
/// `max_tokens_param` names the length field the client sent.
pub fn check_lengths(
    prompt: &[u32],
    max_tokens: usize,
    max_tokens_param: &'static str,
    vocab_size: usize,
    context: usize,
) -> Result<(), ApiError> {
    if prompt.is_empty() {
        return Err(ApiError::invalid("prompt", "`prompt` tokenizes to nothing"));
    }
    if let Some(bad) = prompt.iter().find(|&&id| id as usize >= vocab_size) {
        return Err(ApiError::invalid(
            "prompt",
            format!("token id {bad} is outside the vocabulary (0..{vocab_size})"),
        ));
    }
    if prompt.len() >= context {
        return Err(ApiError::invalid(
            "prompt",
            format!("the prompt is {} tokens, but the model's context is {context} tokens: shorten the prompt", prompt.len()),
        )
        .with_code("context_length_exceeded"));
    }
    if prompt.len() + max_tokens > context {
        return Err(ApiError::invalid(
            max_tokens_param,
            format!(
                "`{max_tokens_param}` is {max_tokens}, but the prompt's {} tokens leave room for at most {} in the model's {context}-token context",
                prompt.len(),
                context - prompt.len()
            ),
        )
        .with_code("context_length_exceeded"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<CompletionParams, ApiError> {
        parse_completion(body.as_bytes(), "m")
    }

    #[test]
    fn defaults_follow_openai() {
        let p = parse(r#"{"model": "m", "prompt": "hi"}"#).unwrap();
        assert_eq!(p.max_tokens, 16);
        assert_eq!(p.temperature, 1.0);
        assert!(!p.stream && !p.include_usage && !p.ignore_eos);
        let p = parse(r#"{"model": "m", "prompt": [1, 2], "stream": true, "stream_options": {"include_usage": true}, "top_k": -1}"#).unwrap();
        assert_eq!(p.prompt, Prompt::Tokens(vec![1, 2]));
        assert!(p.include_usage && p.top_k.is_none());
    }

    #[test]
    fn each_rejection_names_its_parameter() {
        for (body, param) in [
            (r#"{"prompt": "hi"}"#, Some("model")),
            (r#"{"model": "x", "prompt": "hi"}"#, Some("model")),
            (r#"{"model": "m"}"#, Some("prompt")),
            (r#"{"model": "m", "prompt": 5}"#, Some("prompt")),
            (r#"{"model": "m", "prompt": [-1]}"#, Some("prompt")),
            (r#"{"model": "m", "prompt": ["a", "b"]}"#, Some("prompt")),
            (
                r#"{"model": "m", "prompt": "hi", "max_tokens": 0}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model": "m", "prompt": "hi", "max_tokens": "8"}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model": "m", "prompt": "hi", "max_tokens": 1.5}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model": "m", "prompt": "hi", "max_tokens": 1e30}"#,
                Some("max_tokens"),
            ),
            (
                r#"{"model": "m", "prompt": "hi", "temperature": "hot"}"#,
                Some("temperature"),
            ),
            (
                r#"{"model": "m", "prompt": "hi", "temperature": 9}"#,
                Some("temperature"),
            ),
            (
                r#"{"model": "m", "prompt": "hi", "stream": "yes"}"#,
                Some("stream"),
            ),
            (r#"{"model": "m", "prompt": "hi", "n": 2}"#, Some("n")),
            (
                r#"{"model": "m", "prompt": "hi", "stop": ["\n"]}"#,
                Some("stop"),
            ),
            (
                r#"{"model": "m", "prompt": "hi", "stream_options": {"include_usage": true}}"#,
                Some("stream_options"),
            ),
            ("[1, 2]", None),
            ("{not json", None),
        ] {
            let err = parse(body).unwrap_err();
            assert_eq!(err.status, StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(err.param, param, "{body}: {}", err.message);
        }
    }

    #[test]
    fn chat_messages_are_rendered_and_checked() {
        let p = parse_chat(
            br#"{"model": "m", "messages": [{"role": "system", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hi "}, {"type": "text", "text": "there"}]}],
                "max_completion_tokens": 5, "max_tokens": 9}"#,
            "m",
        )
        .unwrap();
        let said = |role: &str, content: &str| Message {
            role: role.into(),
            content: content.into(),
        };
        assert_eq!(
            p.prompt,
            Prompt::Chat(vec![said("system", "Be brief."), said("user", "Hi there")])
        );
        assert_eq!(p.max_tokens, 5, "max_completion_tokens wins");
        assert_eq!(parse_chat(br#"{"model": "m", "messages": [{"role": "user", "content": "x"}], "max_tokens": 3}"#, "m").unwrap().max_tokens, 3);
        for (body, param) in [
            (r#"{"model": "m"}"#, "messages"),
            (r#"{"model": "m", "messages": []}"#, "messages"),
            (r#"{"model": "m", "messages": "hi"}"#, "messages"),
            (
                r#"{"model": "m", "messages": [{"content": "hi"}]}"#,
                "messages",
            ),
            (
                r#"{"model": "m", "messages": [{"role": "wizard", "content": "hi"}]}"#,
                "messages",
            ),
            (
                r#"{"model": "m", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}"#,
                "messages",
            ),
            (
                r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "max_completion_tokens": 0}"#,
                "max_completion_tokens",
            ),
            (
                r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function"}]}"#,
                "tools",
            ),
            (
                r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "logprobs": true}"#,
                "logprobs",
            ),
        ] {
            let err = parse_chat(body.as_bytes(), "m").unwrap_err();
            assert_eq!(err.param, Some(param), "{body}: {}", err.message);
        }
        // A chat body is not a completions body, and the other way round.
        assert_eq!(
            parse(r#"{"model": "m", "messages": [{"role": "user", "content": "hi"}]}"#)
                .unwrap_err()
                .param,
            Some("prompt")
        );
        assert_eq!(
            parse_chat(br#"{"model": "m", "prompt": "hi"}"#, "m")
                .unwrap_err()
                .param,
            Some("messages")
        );
    }

    #[test]
    fn lengths_are_checked_against_the_context() {
        assert!(check_lengths(&[1, 2], 6, "max_tokens", 10, 8).is_ok());
        assert_eq!(
            check_lengths(&[1, 2], 7, "max_tokens", 10, 8)
                .unwrap_err()
                .param,
            Some("max_tokens")
        );
        assert_eq!(
            check_lengths(&[1, 2], 7, "max_completion_tokens", 10, 8)
                .unwrap_err()
                .param,
            Some("max_completion_tokens")
        );
        assert_eq!(
            check_lengths(&[1; 8], 1, "max_tokens", 10, 8)
                .unwrap_err()
                .param,
            Some("prompt")
        );
        assert_eq!(
            check_lengths(&[10], 1, "max_tokens", 10, 8)
                .unwrap_err()
                .param,
            Some("prompt")
        );
    }
}
