//! The load client: drives any OpenAI-compatible `/v1/completions` (or `/v1/chat/completions`)
//! endpoint.
//!
//! Two traffic shapes, as in vLLM's serving benchmark:
//! - **open loop** (`--rate R`): requests arrive as a Poisson process (exponential gaps with mean
//!   1/R, seeded), whether or not earlier ones have finished — what real users do;
//! - **closed loop** (`--concurrency C`): C workers each send a request as soon as their previous
//!   one finishes — a fixed number of users.
//!
//! The run ends after `--requests N` requests or `--duration S` seconds of arrivals; requests in
//! flight are always allowed to finish, and the run's duration runs until the last one does.

mod progress;
mod request;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp};
use serde::Serialize;
use serde_json::{json, Value};
use tokio::runtime::Handle;
use tokio::sync::mpsc;

use crate::metrics::RequestRecord;
use progress::Progress;

pub use request::send;

/// How requests are offered to the server.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Traffic {
    /// Poisson arrivals at `rate` requests per second.
    OpenLoop { rate: f64, seed: u64 },
    /// `concurrency` requests always in flight.
    ClosedLoop { concurrency: usize },
}

/// When the run stops sending.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    Requests(usize),
    DurationS(f64),
}

/// Everything one load run needs; serialised into `bench.json` as the run's `config`.
#[derive(Debug, Clone, Serialize)]
pub struct LoadConfig {
    /// e.g. `http://127.0.0.1:8000` (a trailing `/v1` is accepted and dropped).
    pub base_url: String,
    pub model: String,
    pub traffic: Traffic,
    pub bound: Bound,
    pub prompt: Prompt,
    pub max_tokens: usize,
    /// Send vLLM's `ignore_eos: true` so every request produces exactly `max_tokens` tokens.
    pub ignore_eos: bool,
    /// Send `stream_options: {include_usage: true}` to get exact token counts.
    pub include_usage: bool,
    pub temperature: f64,
    /// Untimed requests sent one at a time before the run; the first also checks the set-up.
    pub warmup: usize,
    pub timeout_s: f64,
    #[serde(skip)]
    pub api_key: Option<String>,
    #[serde(skip)]
    pub progress: bool,
}

/// The part of a comparison's load that stays fixed (exercises 2 and 7): seeded random-word
/// prompts, greedy decoding of exactly `max_tokens` tokens with their usage counted, and two
/// warm-up requests. Between the comparison's runs only the arrivals and the count change, so a
/// difference between two runs is the server's, not the load's.
#[derive(Debug, Clone)]
pub struct FixedLoad {
    pub base_url: String,
    pub model: String,
    pub prompt_words: usize,
    /// Seeds the prompts and, in [`FixedLoad::open_loop`], the arrivals.
    pub seed: u64,
    pub max_tokens: usize,
    pub timeout_s: f64,
    pub progress: bool,
}

impl FixedLoad {
    /// This load with `traffic`, bounded at `requests` requests.
    pub fn config(&self, traffic: Traffic, requests: usize) -> LoadConfig {
        LoadConfig {
            base_url: self.base_url.clone(),
            model: self.model.clone(),
            traffic,
            bound: Bound::Requests(requests),
            prompt: Prompt::RandomWords {
                words: self.prompt_words,
                seed: self.seed,
            },
            max_tokens: self.max_tokens,
            ignore_eos: true,
            include_usage: true,
            temperature: 0.0,
            warmup: 2,
            timeout_s: self.timeout_s,
            api_key: None,
            progress: self.progress,
        }
    }

    /// This load with open-loop arrivals at `rate` requests a second, seeded with its seed.
    pub fn open_loop(&self, rate: f64, requests: usize) -> LoadConfig {
        let seed = self.seed;
        self.config(Traffic::OpenLoop { rate, seed }, requests)
    }
}

/// Which OpenAI endpoint the requests go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `/v1/completions`: the prompt as `prompt`.
    Completions,
    /// `/v1/chat/completions`: the prompt as one user message.
    Chat,
}

impl LoadConfig {
    /// `{base}/v1/completions`, or the endpoint `base_url` names itself when it ends in
    /// `/completions` (`…/v1/chat/completions` drives the chat endpoint).
    pub fn completions_url(&self) -> String {
        let base = self.base_url.trim_end_matches('/');
        if base.ends_with("/completions") {
            return base.to_string();
        }
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/completions")
    }

    /// The endpoint [`LoadConfig::completions_url`] names.
    pub fn endpoint(&self) -> Endpoint {
        if self.completions_url().ends_with("/chat/completions") {
            Endpoint::Chat
        } else {
            Endpoint::Completions
        }
    }

    /// The JSON body of request number `index`.
    pub fn body(&self, index: usize) -> Value {
        let mut body = json!({
            "model": self.model,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
            "stream": true,
        });
        match self.endpoint() {
            Endpoint::Completions => body["prompt"] = json!(self.prompt.text(index)),
            Endpoint::Chat => {
                body["messages"] = json!([{ "role": "user", "content": self.prompt.text(index) }])
            }
        }
        if self.include_usage {
            body["stream_options"] = json!({ "include_usage": true });
        }
        if self.ignore_eos {
            body["ignore_eos"] = json!(true);
        }
        body
    }

    /// [`LoadConfig::body`] serialised, as it goes on the wire.
    pub fn body_bytes(&self, index: usize) -> Vec<u8> {
        // Serialising a `Value` cannot fail: its keys are strings.
        serde_json::to_vec(&self.body(index)).unwrap_or_default()
    }

    /// A run's name when none is given: "gpt2 @ 4 req/s".
    pub fn default_label(&self) -> String {
        match self.traffic {
            Traffic::OpenLoop { rate, .. } => format!("{} @ {rate} req/s", self.model),
            Traffic::ClosedLoop { concurrency } => {
                format!("{} @ concurrency {concurrency}", self.model)
            }
        }
    }

    /// The configuration of replicate `k` (from 0): arrivals and prompts seeded `k` further on.
    /// Its warm-up stays: each replicate opens its own connections, whose first requests would
    /// otherwise pay for it.
    pub fn replicate(&self, k: usize) -> LoadConfig {
        let shift = |seed: u64| seed.wrapping_add(k as u64);
        let mut c = self.clone();
        if let Traffic::OpenLoop { rate, seed } = c.traffic {
            c.traffic = Traffic::OpenLoop {
                rate,
                seed: shift(seed),
            };
        }
        if let Prompt::RandomWords { words, seed } = c.prompt {
            c.prompt = Prompt::RandomWords {
                words,
                seed: shift(seed),
            };
        }
        c
    }

    fn validate(&self) -> Result<()> {
        match self.traffic {
            Traffic::OpenLoop { rate, .. } if !(rate.is_finite() && rate > 0.0) => {
                bail!("--rate must be a positive number of requests per second; got {rate}")
            }
            Traffic::ClosedLoop { concurrency: 0 } => bail!("--concurrency must be at least 1"),
            _ => {}
        }
        match self.bound {
            Bound::Requests(0) => bail!("--requests must be at least 1"),
            Bound::DurationS(d) if !(d.is_finite() && d > 0.0) => {
                bail!("--duration must be a positive number of seconds; got {d}")
            }
            _ => {}
        }
        if self.max_tokens == 0 {
            bail!("--max-tokens must be at least 1");
        }
        if !self.base_url.starts_with("http://") && !self.base_url.starts_with("https://") {
            bail!("--base-url must start with http:// or https://, e.g. http://127.0.0.1:8000; got `{}`", self.base_url);
        }
        Ok(())
    }
}

/// `rate` rounded down to two significant figures: a rate a person can type (exercises 2 and 7
/// choose theirs from a measurement). Scaled by an exact power of ten, so 1.2 prints as 1.2
/// rather than 1.2000000000000002.
pub fn round_rate(rate: f64) -> f64 {
    let e = rate.log10().floor() as i32 - 1;
    let rounded = if e >= 0 {
        (rate / 10f64.powi(e)).floor() * 10f64.powi(e)
    } else {
        (rate * 10f64.powi(-e)).floor() / 10f64.powi(-e)
    };
    rounded.max(10f64.powi(e))
}

/// The prompt of each request.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Prompt {
    /// The same text every time (beware: servers with prefix caching answer repeats faster).
    Fixed(String),
    /// `words` words drawn from a small English list, different for every request and
    /// reproducible from `seed`, so that prefix caches cannot flatter the figures.
    RandomWords { words: usize, seed: u64 },
}

const WORDS: &[&str] = &[
    "the",
    "model",
    "reads",
    "a",
    "long",
    "story",
    "about",
    "river",
    "and",
    "mountain",
    "people",
    "who",
    "measure",
    "time",
    "with",
    "small",
    "clocks",
    "every",
    "morning",
    "light",
    "falls",
    "on",
    "quiet",
    "streets",
    "where",
    "children",
    "learn",
    "numbers",
    "from",
    "old",
    "books",
    "while",
    "engineers",
    "build",
    "fast",
    "machines",
    "that",
    "answer",
    "questions",
    "in",
    "many",
    "languages",
    "under",
    "bright",
    "summer",
    "sky",
    "near",
    "green",
    "fields",
    "of",
];

impl Prompt {
    pub fn text(&self, index: usize) -> String {
        match self {
            Prompt::Fixed(text) => text.clone(),
            Prompt::RandomWords { words, seed } => {
                let mut rng = StdRng::seed_from_u64(
                    seed ^ (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                );
                let mut text = String::with_capacity(words * 8);
                for i in 0..*words {
                    if i > 0 {
                        text.push(' ');
                    }
                    text.push_str(WORDS[rng.random_range(0..WORDS.len())]);
                }
                text
            }
        }
    }
}

/// The outcome of a load run: per-request records and each replicate's wall-clock duration.
pub struct LoadOutcome {
    pub records: Vec<RequestRecord>,
    /// One entry per replicate ([`run`] makes one, [`run_replicates`] several).
    pub durations_s: Vec<f64>,
    /// The instant the (first) timed run began: its records' `start_ms` count from here.
    pub started: Instant,
}

impl LoadOutcome {
    /// Every replicate's wall-clock time together.
    pub fn duration_s(&self) -> f64 {
        self.durations_s.iter().sum()
    }
}

/// `replicates` independent runs of the same configuration, one after another, each with its
/// own arrival seed and prompts (the configured seed plus the replicate's number), its own
/// connections and warm-up, starting once the previous one has drained. Every record
/// carries its replicate's number, and its `start_ms` counts from that replicate's start.
/// Replicates are what lets an interval see run-to-run change (crate::intervals).
pub async fn run_replicates(config: &LoadConfig, replicates: usize) -> Result<LoadOutcome> {
    if replicates == 0 {
        bail!("--replicates must be at least 1");
    }
    let mut outcome: Option<LoadOutcome> = None;
    for k in 0..replicates {
        if replicates > 1 && config.progress {
            eprintln!("replicate {} of {replicates}", k + 1);
        }
        let one = run(&config.replicate(k)).await?;
        match outcome.as_mut() {
            None => outcome = Some(one),
            Some(all) => {
                all.records.extend(
                    one.records
                        .into_iter()
                        .map(|r| RequestRecord { replicate: k, ..r }),
                );
                all.durations_s.extend(one.durations_s);
            }
        }
    }
    outcome.ok_or_else(|| anyhow::anyhow!("no replicate ran"))
}

/// Run the benchmark. Errors only when the set-up is wrong (bad flags, or the warm-up request
/// fails); failures during the run are recorded per request.
///
/// Works on any tokio runtime. `course bench` gives it tokio's default multi-threaded one (one
/// worker per core): on a busy 2-core machine its P99 overhead was lower in more runs than on a
/// single-threaded runtime, whose one thread stalls every request in flight when the OS
/// descheduled it (`examples/client_overhead.rs` measures it).
pub async fn run(config: &LoadConfig) -> Result<LoadOutcome> {
    config.validate()?;
    let url = config.completions_url();
    let url = reqwest::Url::parse(&url).with_context(|| {
        format!(
            "--base-url `{}` does not make a valid URL ({url})",
            config.base_url
        )
    })?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs_f64(config.timeout_s))
        .tcp_nodelay(true)
        .pool_max_idle_per_host(usize::MAX)
        .build()?;

    for i in 0..config.warmup {
        // Warm-up prompts come from the far end of the index range, so that a server with
        // prefix caching has not seen any timed prompt before.
        let body = config.body_bytes(usize::MAX - i);
        let r = send(
            &client,
            &url,
            config.api_key.as_deref(),
            body,
            Instant::now(),
        )
        .await;
        if !r.ok {
            bail!(
                "warm-up request {} to {url} failed: {}\nnext step: check that the server is up, \
                 that --base-url points at it and that --model names a model it serves \
                 (GET {}/v1/models lists them)",
                i + 1,
                r.error.unwrap_or_default(),
                url.as_str().trim_end_matches("/v1/completions")
            );
        }
    }

    let (tx, mut rx) = mpsc::unbounded_channel::<RequestRecord>();
    let run_start = Instant::now();
    let shared = Arc::new(Shared {
        client,
        url,
        config: config.clone(),
        run_start,
    });
    let driver = match config.traffic {
        Traffic::OpenLoop { rate, seed } => {
            let pacer = Pacer {
                shared,
                rate,
                seed,
                bound: config.bound,
                tx,
                runtime: Handle::current(),
            };
            tokio::task::spawn_blocking(move || pacer.run())
        }
        Traffic::ClosedLoop { concurrency } => {
            tokio::spawn(closed_loop(shared, concurrency, config.bound, tx))
        }
    };
    let progress = Progress::start(config);
    let mut records = Vec::new();
    while let Some(record) = rx.recv().await {
        progress.done_one();
        records.push(record);
    }
    let duration_s = run_start.elapsed().as_secs_f64();
    driver.await?;
    progress.finish();
    records.sort_by(|a, b| a.start_ms.total_cmp(&b.start_ms));
    Ok(LoadOutcome {
        records,
        durations_s: vec![duration_s],
        started: run_start,
    })
}

struct Shared {
    client: reqwest::Client,
    url: reqwest::Url,
    config: LoadConfig,
    run_start: Instant,
}

impl Shared {
    /// Send a prepared body; the clock starts inside, just before the request is handed over.
    async fn send(&self, body: Vec<u8>) -> RequestRecord {
        send(
            &self.client,
            &self.url,
            self.config.api_key.as_deref(),
            body,
            self.run_start,
        )
        .await
    }
}

/// Open-loop arrivals, paced by an OS thread of their own.
///
/// tokio's timer ticks once a millisecond: a `sleep_until` wakes up to 1 ms late, and every
/// arrival that falls inside one tick is released at the same instant, so Poisson traffic would
/// reach the server in bursts. The pacer thread sleeps with the OS's high-resolution timer
/// instead, prepares each request's body before its arrival time, and hands it to the runtime
/// when it is due. Each record keeps both times: `start_ms` (actually sent, where every latency
/// starts) and `start_ms - dispatch_lag_ms` (the Poisson arrival time).
struct Pacer {
    shared: Arc<Shared>,
    rate: f64,
    seed: u64,
    bound: Bound,
    tx: mpsc::UnboundedSender<RequestRecord>,
    runtime: Handle,
}

impl Pacer {
    fn run(self) {
        let mut rng = StdRng::seed_from_u64(self.seed);
        let gaps = Exp::new(self.rate).expect("rate validated positive");
        let mut arrival_s = 0.0f64;
        let mut index = 0usize;
        loop {
            match self.bound {
                Bound::Requests(n) if index >= n => break,
                Bound::DurationS(d) if arrival_s >= d => break,
                _ => {}
            }
            if self.tx.is_closed() {
                break; // the run was abandoned
            }
            let body = self.shared.config.body_bytes(index);
            let due = self.shared.run_start + Duration::from_secs_f64(arrival_s);
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let (shared, tx) = (self.shared.clone(), self.tx.clone());
            let due_ms = arrival_s * 1000.0;
            self.runtime.spawn(async move {
                let mut record = shared.send(body).await;
                record.dispatch_lag_ms = Some(record.start_ms - due_ms);
                let _ = tx.send(record);
            });
            index += 1;
            arrival_s += gaps.sample(&mut rng);
        }
    }
}

async fn closed_loop(
    shared: Arc<Shared>,
    concurrency: usize,
    bound: Bound,
    tx: mpsc::UnboundedSender<RequestRecord>,
) {
    let claimed = Arc::new(AtomicUsize::new(0));
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency {
        let (shared, tx, claimed) = (shared.clone(), tx.clone(), claimed.clone());
        workers.spawn(async move {
            loop {
                let index = claimed.fetch_add(1, Ordering::Relaxed);
                let more = match bound {
                    Bound::Requests(n) => index < n,
                    Bound::DurationS(d) => shared.run_start.elapsed().as_secs_f64() < d,
                };
                if !more {
                    break;
                }
                let body = shared.config.body_bytes(index);
                let _ = tx.send(shared.send(body).await);
            }
        });
    }
    while workers.join_next().await.is_some() {}
}
