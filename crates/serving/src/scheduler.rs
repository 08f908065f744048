//! The scheduler: one thread owns the model and runs every accepted request in one
//! continuously changing batch.
//!
//! Requests wait in a bounded queue (`--queue-size`; beyond it the answer is 503). The model
//! thread loops over forward passes. Before each:
//!
//! 1. **Admit.** While fewer than `--max-batch-size` requests are in the batch (decoding or
//!    prefilling) and the prompt tokens admitted but not yet prefilled are fewer than the
//!    pass's budget, it takes waiting requests in arrival order. So every request it admits
//!    starts in the next pass, and its queue time ends there.
//! 2. **Leave.** Requests whose client has gone away are stopped now, before the pass.
//! 3. **One pass** ([`engine::generate::Batch::step`]): the next token of every decoding
//!    sequence and, in the same forward pass, up to `--prefill-chunk` prompt tokens of the
//!    waiting ones, oldest first; a longer prompt is split over several passes (chunked
//!    prefill), decoding going on at each. With nothing decoding, nobody waits on prompts,
//!    so the budget is lifted and every admitted prompt goes in one pass. A prompt's last
//!    chunk gives the request its first token; from the next pass it decodes. A sequence that
//!    finishes leaves at once and its slot is free for the next request.
//!
//! So a decoding sequence's inter-token latency is one pass: its own row plus at most
//! `--prefill-chunk` prompt tokens. That trades against a long prompt's time to first token
//! (each chunk waits a pass). vLLM's `--max-num-batched-tokens` with chunked prefill bounds the
//! same thing the same way: prompt chunks and decode rows share one forward pass, so the
//! weights are read once for both, and each sequence attends to its own cache (no padding).
//!
//! When nothing is in the batch, the thread sleeps until a request arrives, then waits up to
//! `--batch-wait-ms` for others to share its pass (a full batch never waits).
//!
//! Each generated token is decoded to text on the model thread and sent to the request's
//! channel. Each request is timed: queue (arrival to the pass that starts its prompt),
//! prefill (that pass's start to its first token, every chunk included) and decode (first
//! token to last), returned with its last event. [`StepTrace`]s, one per pass, let tests see
//! which sequences ran together and which were prefilling.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Context;
use tokio::sync::mpsc;

use crate::metrics::Metrics;

use engine::generate::{Batch, Completion, FinishReason, Flow, Limits, Plan, Request, TokenEvent};
use engine::loader::ChatTemplate;
use engine::tokenizer::{TextStream, Tokenizer};
use engine::CausalLm;

/// A model ready to serve, whatever its family: what the scheduler needs of it.
pub struct ServedModel {
    pub model: Box<dyn CausalLm>,
    pub tokenizer: Tokenizer,
    /// Its context and end-of-sequence ids.
    pub limits: Limits,
    /// Its chat template, when its checkpoint has one.
    pub chat_template: Option<ChatTemplate>,
    /// Seeded random weights (the startup line says so).
    pub synthetic: bool,
    /// The type its KV cache holds, and the bytes one position takes in it (keys and values,
    /// every layer).
    pub kv_dtype: candle_core::DType,
    pub kv_bytes_per_token: u64,
}

/// The KV cache's budget: what admission control holds requests to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvBudget {
    pub dtype: candle_core::DType,
    pub bytes_per_token: u64,
    /// Bytes all admitted requests may reserve together.
    pub capacity: u64,
}

impl KvBudget {
    /// The bytes a request reserves from admission to its end: its whole cache, prompt and
    /// generated tokens but the last (never fed back), as [`Batch::admit`] allocates it.
    pub fn need(&self, prompt: usize, max_tokens: usize) -> u64 {
        (prompt + max_tokens).saturating_sub(1).max(1) as u64 * self.bytes_per_token
    }
}

/// Builds the model and its tokenizer, on the model thread (see [`Engine::start`]).
pub type Loader = Box<dyn FnOnce() -> anyhow::Result<ServedModel> + Send>;

/// What the HTTP side knows of the model, sent back once it is loaded.
pub struct ModelInfo {
    pub kv: KvBudget,
    pub tokenizer: Arc<Tokenizer>,
    pub limits: Limits,
    pub vocab_size: usize,
    pub chat_template: Option<ChatTemplate>,
    pub synthetic: bool,
    pub metrics: Arc<Metrics>,
    pub held: Arc<AtomicU64>,
}

/// Called on the model thread before every forward pass, with what the pass will run.
/// Tests use it to watch the batch and to hold the model thread at a known pass.
pub type StepHook = Box<dyn FnMut(&StepTrace) + Send>;

/// One forward pass, as the scheduler is about to run it. Ids are [`Engine::submit`]'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepTrace {
    /// Counts passes from 0 since the engine started.
    pub step: u64,
    /// The requests decoding one token each in this pass, in row order.
    pub rows: Vec<u64>,
    /// The requests with prompt tokens in this pass, and how many each (a chunk, or the rest).
    pub prefill: Vec<(u64, usize)>,
    /// Those of `prefill` whose prompt ends in this pass: they get their first token from it
    /// and decode from the next.
    pub joining: Vec<u64>,
}

impl StepTrace {
    fn new(step: u64, plan: &Plan) -> StepTrace {
        let ids = |v: &[usize]| v.iter().map(|&id| id as u64).collect();
        StepTrace {
            step,
            rows: ids(&plan.decode),
            prefill: plan.prefill.iter().map(|&(id, n)| (id as u64, n)).collect(),
            joining: ids(&plan.joining),
        }
    }

    /// Prompt tokens in this pass.
    pub fn prefill_tokens(&self) -> usize {
        self.prefill.iter().map(|(_, n)| n).sum()
    }
}

/// Where one request's time went, measured on the model thread.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Timings {
    /// From arrival (queued) to the start of the pass that starts its prompt.
    pub queue: Duration,
    /// From that pass's start to its first token (every chunk of its prompt).
    pub prefill: Duration,
    /// From its first token to its last.
    pub decode: Duration,
}

/// What the model thread sends back to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum JobEvent {
    /// Newly decoded text (one or more tokens' worth; never empty).
    Text(String),
    /// The request is finished: its tokens (all of them, as ids) and its timings.
    Done {
        finish: FinishReason,
        tokens: Vec<u32>,
        timings: Timings,
    },
    /// Generation failed for this request.
    Failed(String),
}

/// One queued request.
pub struct Job {
    pub request: Request,
    pub events: mpsc::UnboundedSender<JobEvent>,
    id: u64,
    arrived: Instant,
}

impl Job {
    pub fn new(request: Request, events: mpsc::UnboundedSender<JobEvent>) -> Job {
        Job {
            request,
            events,
            id: 0,
            arrived: Instant::now(),
        }
    }
}

/// Why a request was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// The queue already holds `--queue-size` requests.
    QueueFull,
    /// The model thread has stopped (it failed, or the server is shutting down).
    Stopped,
}

/// Scheduling knobs.
#[derive(Debug, Clone)]
pub struct EngineOptions {
    /// Most sequences decoding together.
    pub max_batch_size: usize,
    pub queue_size: usize,
    /// When nothing is decoding and a request arrives, wait up to this long for more to share
    /// its prefill.
    pub batch_wait: Duration,
    /// Prompt tokens per pass while others decode, at most: longer prompts are prefilled in
    /// chunks over several passes.
    pub prefill_chunk: usize,
    /// KV-cache bytes all admitted requests may reserve together; a request that would pass it
    /// waits.
    pub kv_cache: KvCacheSize,
}

/// How the KV-cache budget is set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KvCacheSize {
    /// Room for `max_batch_size` requests of the model's whole context.
    WholeContext,
    /// This many bytes (`--kv-cache-bytes`).
    Bytes(u64),
    /// This fraction of the memory free once the weights are loaded
    /// (`--kv-cache-memory-fraction`, the CPU's MemAvailable): vLLM's `gpu_memory_utilization`
    /// sizes its cache from the memory left after the weights in the same way.
    FractionOfFree(f64),
}

impl KvCacheSize {
    /// The budget in bytes for a model of `context` positions at `bytes_per_token`, on `device`.
    fn bytes(
        self,
        max_batch_size: usize,
        context: usize,
        bytes_per_token: u64,
        device: &candle_core::Device,
    ) -> anyhow::Result<u64> {
        match self {
            KvCacheSize::WholeContext => {
                Ok((max_batch_size.max(1) * context) as u64 * bytes_per_token)
            }
            KvCacheSize::Bytes(bytes) => Ok(bytes),
            KvCacheSize::FractionOfFree(fraction) => {
                if !device.is_cpu() {
                    anyhow::bail!(
                        "--kv-cache-memory-fraction reads the CPU's free memory, and this model runs on {device:?}: \
                         give the budget in bytes with --kv-cache-bytes"
                    );
                }
                let free = engine::memory::available().ok_or_else(|| {
                    anyhow::anyhow!(
                        "--kv-cache-memory-fraction: this system does not report its free memory (no MemAvailable in \
                         /proc/meminfo); give the budget in bytes with --kv-cache-bytes"
                    )
                })?;
                Ok((free as f64 * fraction) as u64)
            }
        }
    }
}

impl EngineOptions {
    /// `max_batch_size` and `queue_size` as given, no waiting, the default prefill budget.
    pub fn new(max_batch_size: usize, queue_size: usize) -> EngineOptions {
        EngineOptions {
            max_batch_size,
            queue_size,
            batch_wait: Duration::ZERO,
            prefill_chunk: DEFAULT_PREFILL_CHUNK,
            kv_cache: KvCacheSize::WholeContext,
        }
    }
}

/// Default of `--prefill-chunk`. See the module docs for the trade-off: 256 takes a typical
/// benchmark prompt (about 180 tokens) in one pass with room for the next one's first chunk.
pub const DEFAULT_PREFILL_CHUNK: usize = 256;

/// The handle the HTTP side holds. Dropping every handle lets the model thread finish the
/// accepted work and exit; [`Engine::join`] waits for that.
pub struct Engine {
    queue: mpsc::Sender<Job>,
    thread: Option<JoinHandle<()>>,
    next_id: AtomicU64,
    pub options: EngineOptions,
    pub tokenizer: Arc<Tokenizer>,
    pub limits: Limits,
    pub vocab_size: usize,
    /// The checkpoint's chat template, handed to the HTTP side once (see [`Engine::start`]).
    pub chat_template: Option<ChatTemplate>,
    pub synthetic: bool,
    pub kv: KvBudget,
    pub metrics: Arc<Metrics>,
    /// A request taken from the queue and held for KV-cache room (1) or not (0).
    held: Arc<AtomicU64>,
}

impl Engine {
    /// Start the model thread: it runs `load`, and this returns once the model is loaded (or
    /// with the loader's error).
    ///
    /// The weights are loaded on the thread that uses them. On CUDA, candle gives each thread
    /// its own default stream and nothing orders one thread's stream after another's, so
    /// weights uploaded on the main thread could still be in flight when the model thread's
    /// first kernels read them. (This cannot be tested without a GPU.)
    pub fn start(
        load: Loader,
        options: EngineOptions,
        on_step: Option<StepHook>,
    ) -> anyhow::Result<Engine> {
        let (queue, rx) = mpsc::channel(options.queue_size.max(1));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel::<anyhow::Result<ModelInfo>>();
        let knobs = options.clone();
        let held_by_model = Arc::new(AtomicU64::new(0));
        let thread = std::thread::Builder::new()
            .name("model".into())
            .spawn(move || {
                let served = match load() {
                    Ok(loaded) => loaded,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let ServedModel {
                    model,
                    tokenizer,
                    limits,
                    chat_template,
                    synthetic,
                    kv_dtype,
                    kv_bytes_per_token,
                } = served;
                let capacity = match knobs.kv_cache.bytes(
                    knobs.max_batch_size,
                    limits.context,
                    kv_bytes_per_token,
                    model.device(),
                ) {
                    Ok(bytes) => bytes,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let kv = KvBudget {
                    dtype: kv_dtype,
                    bytes_per_token: kv_bytes_per_token,
                    capacity,
                };
                let tokenizer = Arc::new(tokenizer);
                let metrics = Arc::new(Metrics::new(kv.capacity));
                let _ = ready_tx.send(Ok(ModelInfo {
                    kv,
                    tokenizer: tokenizer.clone(),
                    limits: limits.clone(),
                    vocab_size: model.vocab_size(),
                    chat_template,
                    synthetic,
                    metrics: metrics.clone(),
                    held: held_by_model.clone(),
                }));
                let mut scheduler =
                    Scheduler::new(model.as_ref(), &limits, &tokenizer, knobs, on_step);
                scheduler.kv = Some((kv, metrics, held_by_model));
                scheduler.run(rx);
            })
            .context("cannot start the model thread")?;
        let info = match ready_rx.recv() {
            Ok(ready) => ready?,
            Err(_) => {
                let _ = thread.join();
                anyhow::bail!("the model thread stopped while loading the model");
            }
        };
        Ok(Engine {
            queue,
            thread: Some(thread),
            next_id: AtomicU64::new(0),
            options,
            tokenizer: info.tokenizer,
            limits: info.limits,
            vocab_size: info.vocab_size,
            chat_template: info.chat_template,
            synthetic: info.synthetic,
            kv: info.kv,
            metrics: info.metrics,
            held: info.held,
        })
    }

    /// Queue a request without waiting: a full queue is an immediate answer (HTTP 503).
    /// Returns the id that [`StepTrace`]s name it by.
    pub fn submit(&self, mut job: Job) -> Result<u64, Rejected> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        job.id = id;
        job.arrived = Instant::now();
        self.queue.try_send(job).map(|()| id).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Rejected::QueueFull,
            mpsc::error::TrySendError::Closed(_) => Rejected::Stopped,
        })
    }

    /// Requests waiting to join the batch (not counting those decoding).
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// The `/metrics` text, with the waiting requests counted now (queued, and one held for
    /// KV-cache room).
    pub fn metrics_text(&self) -> String {
        let waiting = self.queued() as u64 + self.held.load(Ordering::Relaxed);
        self.metrics
            .requests_waiting
            .set(i64::try_from(waiting).unwrap_or(i64::MAX));
        self.metrics.render()
    }

    /// Close the queue and wait until the model thread has finished every accepted request.
    pub fn join(mut self) {
        let thread = self.thread.take();
        drop(self);
        if let Some(thread) = thread {
            if thread.join().is_err() {
                tracing::error!("the model thread panicked");
            }
        }
    }
}

/// A request in the batch, as the scheduler tracks it.
struct Live<'t> {
    job: Job,
    stream: TextStream<'t>,
    /// Text sent so far, to flush what the stream still holds when the request ends.
    sent: String,
    scheduled: Instant,
    first_token: Option<Instant>,
    /// KV-cache bytes reserved for it ([`KvBudget::need`]).
    kv_bytes: u64,
}

struct Scheduler<'m> {
    model: &'m dyn CausalLm,
    limits: &'m Limits,
    tokenizer: &'m Tokenizer,
    options: EngineOptions,
    on_step: Option<StepHook>,
    batch: Batch,
    live: HashMap<u64, Live<'m>>,
    /// A request taken from the queue while the thread slept, or held for KV-cache room, not
    /// admitted yet.
    held: Option<Job>,
    step: u64,
    /// The KV budget, the series it reports to, and the engine's flag for a held request.
    kv: Option<(KvBudget, Arc<Metrics>, Arc<AtomicU64>)>,
}

impl<'m> Scheduler<'m> {
    fn new(
        model: &'m dyn CausalLm,
        limits: &'m Limits,
        tokenizer: &'m Tokenizer,
        options: EngineOptions,
        on_step: Option<StepHook>,
    ) -> Self {
        Scheduler {
            model,
            limits,
            tokenizer,
            options,
            on_step,
            batch: Batch::new(),
            live: HashMap::new(),
            held: None,
            step: 0,
            kv: None,
        }
    }

    fn run(mut self, mut rx: mpsc::Receiver<Job>) {
        loop {
            if self.batch.is_empty() && self.held.is_none() {
                match rx.blocking_recv() {
                    Some(job) => self.held = Some(job),
                    None => return, // closed and empty: every accepted request is done
                }
            }
            self.admit(&mut rx);
            self.drop_cancelled();
            if !self.batch.is_empty() {
                self.pass();
            }
        }
    }

    /// The next pass's budget of prompt tokens: `--prefill-chunk` while others decode, none
    /// when nobody would wait on the prompts.
    fn budget(&self) -> Option<usize> {
        self.batch
            .is_decoding()
            .then_some(self.options.prefill_chunk.max(1))
    }

    /// Takes waiting requests while the batch has room and the next pass has prompt budget
    /// left, so that each starts in that pass. With nothing in the batch, waits up to
    /// `--batch-wait-ms` for more to share the pass.
    fn admit(&mut self, rx: &mut mpsc::Receiver<Job>) {
        let idle = self.batch.is_empty();
        let deadline = Instant::now()
            + if idle {
                self.options.batch_wait
            } else {
                Duration::ZERO
            };
        let budget = self.budget().unwrap_or(usize::MAX);
        let mut pending = self.batch.unprefilled();
        let mut group: Vec<Job> = Vec::new();
        let mut group_kv = 0;
        while self.batch.len() + group.len() < self.options.max_batch_size.max(1)
            && pending < budget
        {
            let job = match self.held.take() {
                Some(job) => job,
                None => match rx.try_recv() {
                    Ok(job) => job,
                    Err(mpsc::error::TryRecvError::Empty)
                        if !group.is_empty() && Instant::now() < deadline =>
                    {
                        std::thread::sleep(Duration::from_micros(200));
                        continue;
                    }
                    Err(_) => break,
                },
            };
            // Clients that left while queued cost nothing.
            if job.events.is_closed() {
                continue;
            }
            // Not enough KV cache left: it waits (first in line) until requests finish.
            let need = self.kv_need(&job.request);
            if self.kv_reserved() + group_kv + need > self.kv_capacity() {
                self.held = Some(job);
                break;
            }
            group_kv += need;
            pending = pending.saturating_add(job.request.prompt.len());
            group.push(job);
        }
        if group.is_empty() {
            self.report();
            return;
        }
        let scheduled = Instant::now();
        for job in group {
            let kv_bytes = self.kv_need(&job.request);
            let (id, request) = (job.id, job.request.clone());
            self.live.insert(
                id,
                Live {
                    job,
                    stream: self.tokenizer.stream(),
                    sent: String::new(),
                    scheduled,
                    first_token: None,
                    kv_bytes,
                },
            );
            // One at a time, so that a request the batch refuses fails alone.
            match self
                .batch
                .admit(self.model, self.limits, vec![(id as usize, request)])
            {
                Ok(done) => self.finish(done),
                Err(e) => self.fail(&[id], &e.into()),
            }
        }
        self.report();
    }

    fn kv_need(&self, request: &Request) -> u64 {
        self.kv.as_ref().map_or(0, |(kv, ..)| {
            kv.need(request.prompt.len(), request.max_tokens)
        })
    }

    fn kv_capacity(&self) -> u64 {
        self.kv.as_ref().map_or(u64::MAX, |(kv, ..)| kv.capacity)
    }

    /// KV-cache bytes the admitted requests hold.
    fn kv_reserved(&self) -> u64 {
        self.live.values().map(|l| l.kv_bytes).sum()
    }

    /// The gauges, as the batch now stands.
    fn report(&self) {
        if let Some((_, metrics, held)) = &self.kv {
            metrics
                .requests_running
                .set(i64::try_from(self.batch.len()).unwrap_or(i64::MAX));
            metrics.set_kv_used(self.kv_reserved());
            held.store(u64::from(self.held.is_some()), Ordering::Relaxed);
        }
    }

    /// Stops the requests whose client has gone away, so their slots are free now.
    fn drop_cancelled(&mut self) {
        let gone: Vec<u64> = self
            .batch
            .ids()
            .into_iter()
            .map(|id| id as u64)
            .filter(|id| self.live.get(id).is_none_or(|l| l.job.events.is_closed()))
            .collect();
        for id in gone {
            if let Some(completion) = self.batch.cancel(id as usize) {
                self.finish(vec![(id as usize, completion)]);
            }
        }
        self.report();
    }

    /// One forward pass: every decoding sequence's next token and the next prompt chunk(s).
    fn pass(&mut self) {
        let budget = self.budget();
        let plan = self.batch.plan(budget);
        if let Some(hook) = self.on_step.as_mut() {
            hook(&StepTrace::new(self.step, &plan));
        }
        let metrics = self.kv.as_ref().map(|(_, m, _)| m.clone());
        self.step += 1;
        let live = &mut self.live;
        let result = self
            .batch
            .step(self.model, self.limits, budget, &mut |event| {
                if let Some(m) = &metrics {
                    m.generation_tokens.inc();
                }
                on_token(live, event)
            });
        if let (Some(m), Ok(_)) = (&metrics, &result) {
            m.prompt_tokens.inc_by(plan.prefill_tokens() as u64);
        }
        match result {
            Ok(done) => self.finish(done),
            Err(e) => {
                // A failed pass leaves its sequences' caches in an unknown state: every
                // request admitted and not finished fails, and the next starts a fresh batch.
                let ids: Vec<u64> = self.live.keys().copied().collect();
                self.batch = Batch::new();
                self.fail(&ids, &e.into());
            }
        }
        self.report();
    }

    /// Sends the last text and the `Done` event of finished requests.
    fn finish(&mut self, done: Vec<(usize, Completion)>) {
        let now = Instant::now();
        for (id, completion) in done {
            let Some(live) = self.live.remove(&(id as u64)) else {
                continue;
            };
            // A token can end inside a UTF-8 character: the stream holds it until the
            // character is whole, and the leftovers are flushed here.
            if let Ok(full) = self.tokenizer.decode(&completion.tokens) {
                if let Some(rest) = full
                    .strip_prefix(live.sent.as_str())
                    .filter(|r| !r.is_empty())
                {
                    let _ = live.job.events.send(JobEvent::Text(rest.to_string()));
                }
            }
            let first = live.first_token.unwrap_or(now);
            let timings = Timings {
                queue: live.scheduled.saturating_duration_since(live.job.arrived),
                prefill: first.saturating_duration_since(live.scheduled),
                decode: now.saturating_duration_since(first),
            };
            tracing::debug!(
                id,
                tokens = completion.tokens.len(),
                ?timings,
                "request done"
            );
            let _ = live.job.events.send(JobEvent::Done {
                finish: completion.finish,
                tokens: completion.tokens,
                timings,
            });
        }
    }

    fn fail(&mut self, ids: &[u64], e: &anyhow::Error) {
        tracing::error!("generation failed: {e:#}");
        // Clients get the cause, not the backtrace candle may have attached to it.
        let cause = format!("{e:#}");
        let cause = cause.lines().next().unwrap_or("unknown error");
        for id in ids {
            if let Some(live) = self.live.remove(id) {
                let _ = live
                    .job
                    .events
                    .send(JobEvent::Failed(format!("generation failed: {cause}")));
            }
        }
    }
}

/// Streams one token's text to its request; a request whose client has gone is stopped.
fn on_token(live: &mut HashMap<u64, Live<'_>>, event: TokenEvent) -> Flow {
    let Some(request) = live.get_mut(&(event.row as u64)) else {
        return Flow::Stop;
    };
    if event.index == 0 {
        request.first_token = Some(Instant::now());
    }
    if let Ok(Some(text)) = request.stream.push(event.token) {
        if !text.is_empty() {
            request.sent.push_str(&text);
            let _ = request.job.events.send(JobEvent::Text(text));
        }
    }
    if request.job.events.is_closed() {
        Flow::Stop
    } else {
        Flow::Continue
    }
}

#[cfg(test)]
mod kv_cache_size_tests {
    use super::KvCacheSize;
    use candle_core::Device;

    #[test]
    fn each_rule_gives_its_budget() {
        let cpu = Device::Cpu;
        assert_eq!(
            KvCacheSize::WholeContext
                .bytes(8, 1024, 73_728, &cpu)
                .unwrap(),
            8 * 1024 * 73_728
        );
        assert_eq!(
            KvCacheSize::Bytes(29_000_000)
                .bytes(8, 1024, 73_728, &cpu)
                .unwrap(),
            29_000_000
        );
        // A share of what is free now: never more than all of it, and half of it is about half.
        if let Some(free) = engine::memory::available() {
            let all = KvCacheSize::FractionOfFree(1.0)
                .bytes(8, 1024, 73_728, &cpu)
                .unwrap();
            let half = KvCacheSize::FractionOfFree(0.5)
                .bytes(8, 1024, 73_728, &cpu)
                .unwrap();
            assert!(all > 0 && half > 0);
            assert!(half < all, "half {half} all {all} (free {free})");
            let ratio = half as f64 / all as f64;
            assert!((0.4..0.6).contains(&ratio), "{ratio}");
        }
    }
}
