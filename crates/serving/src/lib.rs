//! The course's OpenAI-compatible server with continuous batching, for any model the engine
//! runs: whatever implements [`engine::CausalLm`], with its tokenizer
//! ([`engine::tokenizer::Tokenizer`]), its limits and its chat template ([`ServedModel`]).
//!
//! Where it sits: this crate depends on `engine` only, never on a model family, so the
//! families can use it and it can serve them all without a cycle. `gpt2 serve` (the `gpt2`
//! crate's `serve` feature) loads GPT-2 and calls [`run`]; the `serve` command (the `serve`
//! package, which depends on `gpt2`, `llama` and this crate) reads `--model`, picks the family
//! from the checkpoint's `config.json`, and calls the same [`run`].
//!
//! ```text
//! gpt2 serve --model synthetic --max-batch-size 8          # http://127.0.0.1:8000
//! cargo run -p serve -- --model HuggingFaceTB/SmolLM2-135M
//! curl -N http://127.0.0.1:8000/v1/completions -H 'content-type: application/json' \
//!      -d '{"model": "synthetic", "prompt": "Hello", "max_tokens": 16, "stream": true}'
//! ```
//!
//! - `POST /v1/completions`: streamed (server-sent events) or whole; `usage` in the body, and
//!   in a last chunk with `stream_options.include_usage`. vLLM's `ignore_eos` and `top_k` are
//!   accepted too, so benchmarks can fix the output length.
//! - `POST /v1/chat/completions`: the same, streamed or whole, with the same `usage`; the
//!   messages become a prompt through the checkpoint's chat template, or, for a checkpoint
//!   without one (GPT-2), a plain transcript ([`chat`]), so clients that default to chat
//!   (GuideLLM, AIPerf, `openai`'s `chat.completions`) work unconfigured.
//! - `GET /v1/models`, `GET /health`, and `GET /metrics` in the Prometheus text format
//!   ([`metrics`]: requests running and waiting, KV-cache bytes in use and the budget, tokens
//!   processed, resident memory), the names `course bench --scrape-metrics` reads.
//! - A KV-cache budget (`--kv-cache-bytes`): each admitted request reserves its whole cache
//!   ([`KvBudget::need`]); one that would pass the budget waits in the queue until others end,
//!   one that could never fit is a 503 (`kv_cache_too_small`). The startup line gives the cache's
//!   type, its bytes per token and the budget.
//! - One thread owns the model ([`engine`]) and batches continuously: waiting requests join
//!   the running batch at the next forward pass, up to `--max-batch-size` sequences at once,
//!   and finished ones leave at once; prompts share each pass with the decoding sequences, at
//!   most `--prefill-chunk` prompt tokens a pass (longer ones are split), so a joining prompt
//!   holds up the decoding requests for one bounded pass at
//!   a time. At most `--queue-size` requests wait; beyond that the
//!   answer is 503 with `Retry-After`.
//! - Every response ends with `server_timings` (queue, prefill and decode milliseconds, see
//!   [`engine::Timings`]), an extra field OpenAI clients ignore; `course bench` reads it.
//! - Every invalid request is a 400 with an OpenAI-style error body naming the parameter.
//! - SIGINT / SIGTERM: stop accepting connections, finish every request already accepted, exit.

pub mod api;
pub mod chat;
pub mod metrics;
pub mod routes;
pub mod scheduler;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use axum::serve::ListenerExt;

pub use scheduler::{
    EngineOptions, KvBudget, KvCacheSize, Loader, ServedModel, StepHook, StepTrace, Timings,
};

/// The server's flags, whichever command serves (`gpt2 serve`, `serve`): everything but the
/// model's.
#[derive(clap::Args, Debug, Clone)]
pub struct ServerArgs {
    /// Address to listen on. The default answers this machine only; 0.0.0.0 opens the server
    /// to the network (it has no authentication).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,

    /// Port to listen on (0 picks a free one and prints it).
    #[arg(long, default_value_t = 8000)]
    pub port: u16,

    /// Most sequences decoding together (vLLM's --max-num-seqs): the knob to flip when
    /// benchmarking. New requests join the running batch at the next step while it has room.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub max_batch_size: u16,

    /// Most requests waiting to join the batch; more are refused with 503 and Retry-After.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub queue_size: u32,

    /// When nothing is decoding and a request arrives, wait up to this long (ms) for others to
    /// share its prefill pass (a burst then starts together); a full batch never waits.
    #[arg(long, default_value_t = 5)]
    pub batch_wait_ms: u64,

    /// Prompt tokens per forward pass while other requests decode, at most: prompts share each
    /// pass with the decoding requests' next tokens, and a longer prompt is split over several
    /// passes. Smaller bounds the decoding requests' inter-token latency tighter; larger gives a
    /// long prompt its first token sooner. With nothing decoding, every waiting prompt goes in
    /// one pass.
    #[arg(long, default_value_t = scheduler::DEFAULT_PREFILL_CHUNK as u32, value_parser = clap::value_parser!(u32).range(1..))]
    pub prefill_chunk: u32,

    /// KV-cache bytes all running requests may hold together (each holds its whole cache, its
    /// prompt and max_tokens positions, from admission to its end): a request that would pass it
    /// waits in the queue, one that could never fit is refused with 503 [default: room for
    /// --max-batch-size requests of the model's whole context].
    #[arg(
        long,
        value_name = "BYTES",
        conflicts_with = "kv_cache_memory_fraction"
    )]
    pub kv_cache_bytes: Option<u64>,

    /// The KV-cache budget as a fraction (above 0, at most 1) of the memory free once the
    /// weights are loaded (MemAvailable; CPU only), as vLLM's --gpu-memory-utilization sizes its
    /// cache from what the weights leave.
    #[arg(long, value_name = "FRACTION", value_parser = parse_fraction)]
    pub kv_cache_memory_fraction: Option<f64>,

    /// Name clients must send as `model` [default: the --model value].
    #[arg(long)]
    pub served_model_name: Option<String>,
}

/// A server ready to accept connections: the model thread is running.
pub struct Server {
    state: Arc<routes::AppState>,
}

impl Server {
    /// Start the model thread, which runs `load` (see [`engine::Engine::start`] for why the
    /// model is loaded there), and return once the model is ready. `on_step`, when given, sees
    /// every decode step (tests watch the batch with it).
    pub fn start(
        load: Loader,
        served_model: String,
        options: EngineOptions,
        on_step: Option<StepHook>,
    ) -> Result<Server> {
        let mut engine = scheduler::Engine::start(load, options, on_step)?;
        let chat = chat::ChatFormat::new(engine.chat_template.take())?;
        let state = Arc::new(routes::AppState::new(engine, served_model, chat));
        Ok(Server { state })
    }

    /// How this server turns chat messages into a prompt.
    pub fn chat(&self) -> &chat::ChatFormat {
        &self.state.chat
    }

    /// Serve on `listener` until `shutdown` resolves, then finish every accepted request
    /// (streams included) and stop the model thread.
    pub async fn serve(
        self,
        listener: tokio::net::TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> Result<()> {
        // Streamed chunks are small writes: without TCP_NODELAY each would wait for the
        // client's delayed ACK (about 40 ms), which a benchmark would report as latency.
        let listener = listener.tap_io(|tcp| {
            if let Err(e) = tcp.set_nodelay(true) {
                tracing::warn!("cannot set TCP_NODELAY: {e}");
            }
        });
        let app = routes::router(self.state.clone());
        axum::serve(listener, app)
            .with_graceful_shutdown(shutdown)
            .await
            .context("the HTTP server failed")?;
        // Every connection is closed; the router's handles are gone. Dropping ours closes the
        // queue, and the model thread exits once it is empty.
        let Server { state } = self;
        tokio::task::spawn_blocking(move || match Arc::try_unwrap(state) {
            Ok(state) => state.engine.join(),
            Err(_) => {
                tracing::warn!("requests still hold the engine; not waiting for the model thread")
            }
        })
        .await
        .context("waiting for the model thread")?;
        Ok(())
    }
}

/// Load the model with `load` (on the model thread), listen as `args` says, and serve until
/// SIGINT or SIGTERM. `program` names the command in what it prints (`gpt2 serve`, `serve`);
/// `served` is the model name clients send.
pub fn run(args: ServerArgs, program: &str, served: String, load: Loader) -> Result<()> {
    let served = args.served_model_name.clone().unwrap_or(served);
    let options = EngineOptions {
        max_batch_size: usize::from(args.max_batch_size),
        queue_size: args.queue_size as usize,
        batch_wait: Duration::from_millis(args.batch_wait_ms),
        prefill_chunk: args.prefill_chunk as usize,
        kv_cache: match (args.kv_cache_bytes, args.kv_cache_memory_fraction) {
            (Some(bytes), _) => KvCacheSize::Bytes(bytes),
            (None, Some(fraction)) => KvCacheSize::FractionOfFree(fraction),
            (None, None) => KvCacheSize::WholeContext,
        },
    };
    let server = Server::start(load, served.clone(), options.clone(), None)?;
    let synthetic = server.state.engine.synthetic;
    say(format_args!("{program}: {}", server.chat().describe()));
    let kv = server.state.engine.kv;
    say(format_args!(
        "{program}: KV cache {}, {} bytes per token, budget {} bytes ({:.1} MiB, {}; GET /metrics)",
        kv.dtype.as_str(),
        kv.bytes_per_token,
        kv.capacity,
        kv.capacity as f64 / (1 << 20) as f64,
        match options.kv_cache {
            KvCacheSize::Bytes(_) => "--kv-cache-bytes".to_string(),
            KvCacheSize::FractionOfFree(f) => format!(
                "--kv-cache-memory-fraction {f}: that share of the memory free after the weights"
            ),
            KvCacheSize::WholeContext =>
                "room for --max-batch-size requests of the whole context".to_string(),
        }
    ));

    // The model thread does the heavy work; two I/O threads are plenty for HTTP.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let addr = format!("{}:{}", args.host, args.port);
        let listener = tokio::net::TcpListener::bind(&addr).await.with_context(|| {
            format!("cannot listen on {addr}: is another server using the port? choose another with --port")
        })?;
        let local: SocketAddr = listener.local_addr()?;
        say(format_args!(
            "{program}: listening on http://{local}  (model \"{served}\", --max-batch-size {}, --queue-size {}){}",
            options.max_batch_size,
            options.queue_size,
            if synthetic { "  [synthetic weights: real timings, meaningless text]" } else { "" }
        ));
        say(format_args!("  try: curl http://{local}/v1/models   stop: Ctrl-C"));
        server.serve(listener, shutdown_signal(program.to_string())).await?;
        say(format_args!("{program}: every accepted request finished; bye"));
        Ok(())
    })
}

/// The type a model's KV cache holds: its activations' type (f32 on the CPU's packed paths).
pub fn kv_dtype(model: &dyn engine::CausalLm) -> candle_core::DType {
    model
        .kernel_path()
        .activations(model.device(), model.dtype())
}

/// The error a loader gives for a checkpoint without `tokenizer.json`.
pub fn no_tokenizer(dir: &std::path::Path, program: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{}: missing; `{program}` needs the checkpoint's tokenizer.json to turn prompts into tokens and tokens into \
         text (save it with `tokenizer.save_pretrained(dir)`, or download it from the model's Hub repository)",
        dir.join("tokenizer.json").display()
    )
}

/// One line for the person at the terminal. Unlike `eprintln!`, a closed stderr (`gpt2 serve |
/// head -1`, or a parent that stopped reading once it had the address) is no reason to panic
/// and drop every request in flight: the line is simply not shown.
/// `--kv-cache-memory-fraction`: a number above 0 and at most 1.
fn parse_fraction(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(f) if f > 0.0 && f <= 1.0 => Ok(f),
        Ok(f) => Err(format!(
            "{f} is not a fraction above 0 and at most 1 (0.5 is half)"
        )),
        Err(_) => Err(format!("`{text}` is not a number (0.5 is half)")),
    }
}

fn say(line: std::fmt::Arguments) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "{line}");
}

/// Resolves on the first SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal(program: String) {
    let ctrl_c = async {
        if let Err(e) = tokio::signal::ctrl_c().await {
            tracing::error!("cannot listen for Ctrl-C: {e}");
            std::future::pending::<()>().await;
        }
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(e) => {
                tracing::error!("cannot listen for SIGTERM: {e}");
                std::future::pending::<()>().await;
            }
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
    say(format_args!(
        "{program}: shutting down: no new connections; finishing the requests already accepted \
         (Ctrl-C again to exit at once)"
    ));
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            say(format_args!(
                "{program}: second Ctrl-C: exiting without finishing the requests in flight"
            ));
            std::process::exit(130);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::parse_fraction;

    #[test]
    fn a_memory_fraction_is_above_zero_and_at_most_one() {
        assert_eq!(parse_fraction("0.5"), Ok(0.5));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        for bad in ["0", "-0.2", "1.5", "90%", "half", "NaN"] {
            let e = parse_fraction(bad).unwrap_err();
            assert!(e.contains("0.5 is half"), "{bad}: {e}");
        }
    }
}
