//! The batching scheduler: one thread owns the model and decodes batches of queued requests.
//!
//! Requests wait in a bounded queue. The model thread takes the first waiting request, then
//! every other one already waiting up to `--max-batch-size`, and decodes them together as one
//! batch (static batching: a request that arrives mid-batch waits for the next one). Each
//! generated token is decoded to text on the model thread and sent to the request's own
//! channel; a request whose client has gone away is stopped at its next token.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::sync::mpsc;

use crate::generate::{Completion, FinishReason, Flow, Request, TokenEvent};
use crate::tokenizer::Tokenizer;

/// A generation function: decode `requests` as one batch, calling `on_token` per token.
/// In the server it is `gpt2::generate` over the loaded model; tests may wrap it.
pub type Generator = Box<dyn FnMut(&[Request], &mut dyn FnMut(TokenEvent) -> Flow) -> anyhow::Result<Vec<Completion>> + Send>;

/// What the model thread sends back to one request.
#[derive(Debug, Clone, PartialEq)]
pub enum JobEvent {
    /// Newly decoded text (one or more tokens' worth; never empty).
    Text(String),
    /// The request is finished.
    Done { finish: FinishReason, completion_tokens: usize },
    /// Generation failed for the whole batch.
    Failed(String),
}

/// One queued request.
pub struct Job {
    pub request: Request,
    pub events: mpsc::UnboundedSender<JobEvent>,
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
    pub max_batch_size: usize,
    pub queue_size: usize,
    /// After the first request of a batch arrives, wait up to this long for more to fill it.
    pub batch_wait: Duration,
}

/// The handle the HTTP side holds. Dropping every handle lets the model thread finish the
/// queued work and exit; [`Engine::join`] waits for that.
pub struct Engine {
    queue: mpsc::Sender<Job>,
    thread: Option<JoinHandle<()>>,
    pub options: EngineOptions,
}

impl Engine {
    /// Start the model thread. `tokenizer` turns generated ids into text.
    pub fn start(generator: Generator, tokenizer: Arc<Tokenizer>, options: EngineOptions) -> std::io::Result<Engine> {
        let (queue, rx) = mpsc::channel(options.queue_size.max(1));
        let max_batch = options.max_batch_size.max(1);
        let wait = options.batch_wait;
        let thread = std::thread::Builder::new()
            .name("gpt2-model".into())
            .spawn(move || scheduler(generator, tokenizer, rx, max_batch, wait))?;
        Ok(Engine { queue, thread: Some(thread), options })
    }

    /// Queue a request without waiting: a full queue is an immediate answer (HTTP 503).
    pub fn submit(&self, job: Job) -> Result<(), Rejected> {
        self.queue.try_send(job).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => Rejected::QueueFull,
            mpsc::error::TrySendError::Closed(_) => Rejected::Stopped,
        })
    }

    /// Requests waiting for a batch (not counting the batch being decoded).
    pub fn queued(&self) -> usize {
        self.queue.max_capacity() - self.queue.capacity()
    }

    /// Close the queue and wait until the model thread has finished every queued request.
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

fn scheduler(
    mut generate: Generator,
    tokenizer: Arc<Tokenizer>,
    mut rx: mpsc::Receiver<Job>,
    max_batch: usize,
    wait: Duration,
) {
    while let Some(first) = rx.blocking_recv() {
        let mut batch = vec![first];
        let deadline = Instant::now() + wait;
        while batch.len() < max_batch {
            match rx.try_recv() {
                Ok(job) => batch.push(job),
                Err(mpsc::error::TryRecvError::Empty) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_micros(200));
                }
                Err(_) => break,
            }
        }
        // Clients that left while queued cost nothing.
        batch.retain(|job| !job.events.is_closed());
        if !batch.is_empty() {
            run_batch(&mut generate, &tokenizer, &batch);
        }
    }
}

fn run_batch(generate: &mut Generator, tokenizer: &Tokenizer, batch: &[Job]) {
    let requests: Vec<Request> = batch.iter().map(|job| job.request.clone()).collect();
    let mut streams: Vec<_> = batch.iter().map(|_| tokenizer.stream()).collect();
    let mut emitted: Vec<String> = vec![String::new(); batch.len()];
    let started = Instant::now();
    let result = generate(&requests, &mut |event: TokenEvent| {
        let Some(job) = batch.get(event.row) else { return Flow::Stop };
        // A token can end inside a UTF-8 character: the stream holds it until the
        // character is whole, and the leftovers are flushed when the row finishes.
        if let Ok(Some(text)) = streams[event.row].push(event.token) {
            if !text.is_empty() {
                emitted[event.row].push_str(&text);
                let _ = job.events.send(JobEvent::Text(text));
            }
        }
        if job.events.is_closed() {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    match result {
        Ok(completions) => {
            let produced: usize = completions.iter().map(|c| c.tokens.len()).sum();
            tracing::debug!(batch = batch.len(), tokens = produced, secs = started.elapsed().as_secs_f64(), "batch done");
            for ((job, completion), sent) in batch.iter().zip(&completions).zip(&emitted) {
                if let Ok(full) = tokenizer.decode(&completion.tokens) {
                    if let Some(rest) = full.strip_prefix(sent.as_str()).filter(|r| !r.is_empty()) {
                        let _ = job.events.send(JobEvent::Text(rest.to_string()));
                    }
                }
                let _ = job.events.send(JobEvent::Done { finish: completion.finish, completion_tokens: completion.tokens.len() });
            }
        }
        Err(e) => {
            tracing::error!("generation failed: {e:#}");
            // Clients get the cause, not the backtrace candle may have attached to it.
            let cause = format!("{e:#}");
            let cause = cause.lines().next().unwrap_or("unknown error");
            for job in batch {
                let _ = job.events.send(JobEvent::Failed(format!("generation failed: {cause}")));
            }
        }
    }
}
