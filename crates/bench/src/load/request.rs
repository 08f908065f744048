//! One streamed completion request, timed from the client's side.
//!
//! The request is a plain OpenAI `POST /v1/completions` (or `/v1/chat/completions`) with
//! `stream: true`; the response is read as server-sent events. Each event whose
//! `choices[0].text` (chat: `choices[0].delta.content`) is non-empty counts as a
//! token arrival (TTFT for the first, an ITL gap for each later one), exactly as vLLM's
//! benchmark client counts them. `usage.completion_tokens`, when a server sends it, gives the
//! token count; otherwise each text chunk counts as one token. A `server_timings` object
//! (`gpt2 serve` sends one with its last chunk) is kept as the server's own account.

use std::time::Instant;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use serde_json::Value;

use crate::metrics::{RequestRecord, ServerTimings};

/// Longest slice of an error body kept in a record.
const ERROR_SNIPPET: usize = 300;

/// What a chunk or a whole non-streamed body told us.
#[derive(Default)]
struct Parsed {
    has_text: bool,
    completion_tokens: Option<usize>,
    prompt_tokens: Option<usize>,
    server_timings: Option<ServerTimings>,
    error: Option<String>,
}

fn parse_body(v: &Value) -> Parsed {
    // Completions put the text in `text`; chat in `delta.content` (streamed) or
    // `message.content` (whole).
    let text = [
        "/choices/0/text",
        "/choices/0/delta/content",
        "/choices/0/message/content",
    ]
    .iter()
    .find_map(|p| v.pointer(p).and_then(Value::as_str))
    .unwrap_or("");
    let usage = |field: &str| {
        v.get("usage")
            .and_then(|u| u.get(field))
            .and_then(Value::as_u64)
            .map(|n| n as usize)
    };
    Parsed {
        has_text: !text.is_empty(),
        completion_tokens: usage("completion_tokens"),
        prompt_tokens: usage("prompt_tokens"),
        // All three figures, or none: a partial object is some other server's field.
        server_timings: v.get("server_timings").and_then(|t| {
            let ms = |key: &str| t.get(key).and_then(Value::as_f64);
            Some(ServerTimings {
                queue_ms: ms("queue_ms")?,
                prefill_ms: ms("prefill_ms")?,
                decode_ms: ms("decode_ms")?,
            })
        }),
        error: v.get("error").filter(|e| !e.is_null()).map(|e| {
            e.get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| e.to_string())
        }),
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn snippet(s: &str) -> String {
    let s = s.trim();
    match s.char_indices().nth(ERROR_SNIPPET) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s.to_string(),
    }
}

/// Send `body` (JSON, already serialised) to `url` and time it. `run_start` anchors `start_ms`.
/// Never fails: a failure is a record with `ok: false` and the reason, because a failed request
/// is a result too.
///
/// The clock starts here, after the body was built: preparing a request is not part of its
/// latency, as in vLLM's benchmark, which builds all its requests before the run.
pub async fn send(
    client: &reqwest::Client,
    url: &reqwest::Url,
    api_key: Option<&str>,
    body: Vec<u8>,
    run_start: Instant,
) -> RequestRecord {
    let sent = Instant::now();
    let mut record = RequestRecord {
        start_ms: ms(sent - run_start),
        ..Default::default()
    };
    let fail = |record: &mut RequestRecord, why: String| {
        record.ok = false;
        record.e2el_ms = ms(sent.elapsed());
        record.error = Some(why);
    };

    let mut request = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    if let Some(key) = api_key {
        request = request.bearer_auth(key);
    }
    let response = match request.send().await {
        Ok(r) => r,
        Err(e) => {
            fail(&mut record, format!("request failed: {e}"));
            return record;
        }
    };
    let status = response.status();
    record.status = Some(status.as_u16());
    if !status.is_success() {
        let text = response.text().await.unwrap_or_default();
        fail(&mut record, format!("HTTP {status}: {}", snippet(&text)));
        return record;
    }

    let is_stream = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if !is_stream {
        // A server that ignores `stream: true` answers with one body: TTFT = E2EL.
        let text = match response.text().await {
            Ok(t) => t,
            Err(e) => {
                fail(&mut record, format!("reading the response failed: {e}"));
                return record;
            }
        };
        let elapsed = ms(sent.elapsed());
        let Ok(value) = serde_json::from_str::<Value>(&text) else {
            fail(
                &mut record,
                format!("response is neither SSE nor JSON: {}", snippet(&text)),
            );
            return record;
        };
        let parsed = parse_body(&value);
        if let Some(e) = parsed.error {
            fail(&mut record, format!("server error: {e}"));
            return record;
        }
        record.ok = parsed.has_text;
        record.ttft_ms = elapsed;
        record.e2el_ms = elapsed;
        record.output_tokens = parsed
            .completion_tokens
            .unwrap_or(usize::from(parsed.has_text));
        record.prompt_tokens = parsed.prompt_tokens;
        record.server_timings = parsed.server_timings;
        if !record.ok {
            record.error = Some("the response carried no text".into());
        }
        return record;
    }

    let mut events = response.bytes_stream().eventsource();
    let mut last_token: Option<Instant> = None;
    let mut chunks = 0usize;
    let mut usage_tokens = None;
    while let Some(event) = events.next().await {
        let now = Instant::now();
        let event = match event {
            Ok(e) => e,
            Err(e) => {
                fail(
                    &mut record,
                    format!("stream broke after {chunks} chunks: {e}"),
                );
                return record;
            }
        };
        let data = event.data.trim();
        if data == "[DONE]" {
            break;
        }
        if data.is_empty() {
            continue;
        }
        let Ok(value) = serde_json::from_str::<Value>(data) else {
            fail(
                &mut record,
                format!("an event is not JSON: {}", snippet(data)),
            );
            return record;
        };
        let parsed = parse_body(&value);
        if let Some(e) = parsed.error {
            fail(&mut record, format!("server error mid-stream: {e}"));
            return record;
        }
        if parsed.has_text {
            match last_token {
                None => record.ttft_ms = ms(now - sent),
                Some(prev) => record.itl_ms.push(ms(now - prev)),
            }
            last_token = Some(now);
            chunks += 1;
        }
        usage_tokens = parsed.completion_tokens.or(usage_tokens);
        record.prompt_tokens = parsed.prompt_tokens.or(record.prompt_tokens);
        record.server_timings = parsed.server_timings.or(record.server_timings);
    }
    record.e2el_ms = ms(sent.elapsed());
    if chunks == 0 {
        fail(&mut record, "the stream ended without any text".into());
        return record;
    }
    record.ok = true;
    record.output_tokens = usage_tokens.unwrap_or(chunks);
    record
}
