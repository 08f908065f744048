//! Batched text generation with a KV cache per sequence.
//!
//! A [`Batch`] holds the sequences being generated: each has its own cache
//! ([`crate::cache::SeqCache`]), so they need no common length and no padding. It runs any
//! [`CausalLm`] (GPT-2, the Llama family) within that model's [`Limits`]. Requests
//! [`Batch::admit`] it and wait as prompts; every [`Batch::step`] is one forward pass
//! ([`CausalLm::forward`]) over one new token of every decoding sequence and the next
//! prompt tokens of the waiting ones, as many as the caller's budget allows (a long prompt is
//! split over several passes: chunked prefill). The pass that reaches a prompt's end samples
//! its first token; from the next pass it decodes with the others. A finished sequence
//! leaves at once, its cache with it. Joining, leaving and chunking change no sequence's keys,
//! values or positions, so each computes what it would alone; the serve tests check, token for
//! token, that requests joining mid-flight (prompts longer than a chunk included) get their
//! solo tokens. (The kernels a batch shape picks may group floating-point sums differently, so
//! a near-tie between two logits could in principle break the other way; no case has been seen.)
//!
//! [`generate`] is the simplest use: every prompt in the first pass, then steps until every
//! sequence is done. The server's scheduler (`serving::scheduler`) admits new requests between
//! passes and bounds each pass's prompt tokens.
//!
//! Sampling (greedy, or seeded temperature / top-k / top-p) is [`crate::sampler::Sampler`],
//! one per sequence. A callback sees every token as it is produced: a
//! server streams it, a benchmark times it.

use candle_core::IndexOp;

use crate::cache::SeqCache;
use crate::error::{Error, Result};
use crate::pass::{Logits, Segment};
use crate::sampler::Sampler;
use crate::CausalLm;

/// What a generation needs to know of its model besides the forward pass: how many positions
/// its cache may hold, and which tokens end a sequence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// The longest sequence, prompt and generated tokens together.
    pub context: usize,
    /// The end-of-sequence ids (several for Llama 3's chat models; may be empty).
    pub eos: Vec<u32>,
}

/// How the next token is chosen. `temperature` 0 is greedy (argmax).
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling {
    pub temperature: f64,
    pub top_k: Option<usize>,
    pub top_p: Option<f64>,
    pub seed: u64,
}

impl Sampling {
    pub fn greedy() -> Self {
        Self {
            temperature: 0.0,
            top_k: None,
            top_p: None,
            seed: 0,
        }
    }

    fn sampler(&self) -> Result<Sampler> {
        let temperature = self.temperature;
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(Error::Input(format!(
                "temperature must be a finite number ≥ 0, not {temperature}"
            )));
        }
        if let Some(p) = self.top_p {
            if !(p > 0.0 && p <= 1.0) {
                return Err(Error::Input(format!("top_p must be in (0, 1], not {p}")));
            }
        }
        if self.top_k == Some(0) {
            return Err(Error::Input("top_k must be at least 1".into()));
        }
        Ok(Sampler::new(temperature, self.top_k, self.top_p, self.seed))
    }
}

/// One sequence to continue.
#[derive(Debug, Clone)]
pub struct Request {
    pub prompt: Vec<u32>,
    pub max_tokens: usize,
    pub sampling: Sampling,
    /// Stop at the model's end-of-text token (benchmarks turn this off to fix the length).
    pub stop_at_eos: bool,
}

impl Request {
    /// A greedy request for exactly `max_tokens` tokens, end-of-text ignored: the same tokens and
    /// the same work on every call, as a benchmark times it and a test compares it.
    pub fn greedy(prompt: &[u32], max_tokens: usize) -> Request {
        Request {
            prompt: prompt.to_vec(),
            max_tokens,
            sampling: Sampling::greedy(),
            stop_at_eos: false,
        }
    }
}

/// A token as it is produced: `index` counts this row's generated tokens from 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenEvent {
    pub row: usize,
    pub token: u32,
    pub index: usize,
}

/// What the callback wants next for the row it was called about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Continue,
    /// Stop this row (its client went away); the others go on.
    Stop,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// `max_tokens` reached.
    Length,
    /// The end-of-text token was produced (it is included in `tokens`).
    Eos,
    /// The callback asked to stop.
    Stopped,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Completion {
    pub tokens: Vec<u32>,
    pub finish: FinishReason,
}

/// Generates a continuation for every request, decoding them together as one batch.
pub fn generate(
    model: &dyn CausalLm,
    limits: &Limits,
    requests: &[Request],
    on_token: &mut dyn FnMut(TokenEvent) -> Flow,
) -> Result<Vec<Completion>> {
    let mut out: Vec<Option<Completion>> = vec![None; requests.len()];
    let mut batch = Batch::new();
    let mut done = batch.admit(
        model,
        limits,
        requests.iter().cloned().enumerate().collect(),
    )?;
    while !batch.is_empty() {
        done.extend(batch.step(model, limits, None, on_token)?);
    }
    for (id, completion) in done {
        out[id] = Some(completion);
    }
    Ok(out
        .into_iter()
        .map(|c| {
            c.unwrap_or(Completion {
                tokens: Vec::new(),
                finish: FinishReason::Length,
            })
        })
        .collect())
}

/// Decodes `prompts` as one batch for exactly `max_tokens` tokens each, greedily and with
/// end-of-text ignored, so that every call does the same work: the generation a benchmark
/// times (`bench::inprocess::run` takes it as its closure). `on_token(row)` is called for every
/// token of every row as it is produced.
pub fn generate_fixed(
    model: &dyn CausalLm,
    limits: &Limits,
    prompts: &[Vec<u32>],
    max_tokens: usize,
    on_token: &mut dyn FnMut(usize),
) -> Result<()> {
    let requests: Vec<Request> = prompts
        .iter()
        .map(|prompt| Request::greedy(prompt, max_tokens))
        .collect();
    generate(model, limits, &requests, &mut |event| {
        on_token(event.row);
        Flow::Continue
    })?;
    Ok(())
}

/// One sequence: its request, its sampler, its cache and what it has produced. Its prompt
/// is wholly prefilled once the cache holds `prompt.len()` positions.
struct Sequence {
    id: usize,
    request: Request,
    sampler: Sampler,
    cache: SeqCache,
    tokens: Vec<u32>,
}

impl Sequence {
    /// Samples this sequence's next token from its logits, reports it, and says whether the
    /// sequence is finished.
    fn sample(
        &mut self,
        logits: &candle_core::Tensor,
        eos: &[u32],
        on_token: &mut dyn FnMut(TokenEvent) -> Flow,
    ) -> Result<Option<FinishReason>> {
        let token = self.sampler.next(logits)?;
        self.tokens.push(token);
        let flow = on_token(TokenEvent {
            row: self.id,
            token,
            index: self.tokens.len() - 1,
        });
        Ok(if flow == Flow::Stop {
            Some(FinishReason::Stopped)
        } else if self.request.stop_at_eos && eos.contains(&token) {
            Some(FinishReason::Eos)
        } else if self.tokens.len() >= self.request.max_tokens {
            Some(FinishReason::Length)
        } else {
            None
        })
    }

    /// Prompt tokens not yet in the cache.
    fn unprefilled(&self) -> usize {
        self.request.prompt.len() - self.cache.len().min(self.request.prompt.len())
    }

    fn finish(self, finish: FinishReason) -> (usize, Completion) {
        (
            self.id,
            Completion {
                tokens: self.tokens,
                finish,
            },
        )
    }
}

/// What the next [`Batch::step`] will run, as [`Batch::plan`] says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Ids of the sequences decoding one token each, in row order.
    pub decode: Vec<usize>,
    /// Ids of the sequences with prompt tokens in the pass, and how many each.
    pub prefill: Vec<(usize, usize)>,
    /// Those of `prefill` whose prompt ends in the pass (they get their first token from it).
    pub joining: Vec<usize>,
}

impl Plan {
    pub fn prefill_tokens(&self) -> usize {
        self.prefill.iter().map(|(_, n)| n).sum()
    }
}

/// Sequences generated together; they join and leave between passes (continuous batching).
/// Every sequence is named by the `id` its caller gave it, which is also the `row` of its
/// [`TokenEvent`]s.
#[derive(Default)]
pub struct Batch {
    /// Sequences that have their first token, in the order they got it.
    decoding: Vec<Sequence>,
    /// Sequences whose prompts are not wholly prefilled yet, in arrival order.
    prefilling: std::collections::VecDeque<Sequence>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    /// Sequences admitted and not finished: decoding, or still being prefilled.
    pub fn len(&self) -> usize {
        self.decoding.len() + self.prefilling.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a sequence has its first token and decodes at the next pass.
    pub fn is_decoding(&self) -> bool {
        !self.decoding.is_empty()
    }

    /// Prompt tokens admitted and not yet prefilled.
    pub fn unprefilled(&self) -> usize {
        self.prefilling.iter().map(Sequence::unprefilled).sum()
    }

    /// The ids of the sequences decoding, in the row order of the next pass.
    pub fn decoding_ids(&self) -> Vec<usize> {
        self.decoding.iter().map(|s| s.id).collect()
    }

    /// The ids of the sequences still being prefilled, oldest first.
    pub fn prefilling_ids(&self) -> Vec<usize> {
        self.prefilling.iter().map(|s| s.id).collect()
    }

    /// Every sequence admitted and not finished.
    pub fn ids(&self) -> Vec<usize> {
        [self.decoding_ids(), self.prefilling_ids()].concat()
    }

    /// Admits `requests` (each with its caller's id), to be prefilled by the next passes after
    /// the prompts admitted before them. Requests for no tokens are returned finished at once.
    /// Nothing is admitted when a request is invalid (the error names it).
    pub fn admit(
        &mut self,
        model: &dyn CausalLm,
        limits: &Limits,
        requests: Vec<(usize, Request)>,
    ) -> Result<Vec<(usize, Completion)>> {
        let mut sequences = Vec::with_capacity(requests.len());
        for (id, request) in requests {
            if request.prompt.is_empty() {
                return Err(Error::Input(format!(
                    "request {id} has an empty prompt: give at least one token"
                )));
            }
            let end = request.prompt.len() + request.max_tokens;
            if end > limits.context {
                return Err(Error::Input(format!(
                    "request {id}: prompt of {} tokens + max_tokens {} = {end} is longer than the model's context of {}",
                    request.prompt.len(),
                    request.max_tokens,
                    limits.context
                )));
            }
            let sampler = request.sampling.sampler()?;
            // The last token sampled is never fed back: the cache reaches end − 1 positions.
            let cache = model.new_cache(end - 1);
            sequences.push(Sequence {
                id,
                request,
                sampler,
                cache,
                tokens: Vec::new(),
            });
        }
        let mut done = Vec::new();
        for sequence in sequences {
            if sequence.request.max_tokens == 0 {
                // A request for no tokens is done before it starts.
                done.push(sequence.finish(FinishReason::Length));
            } else {
                self.prefilling.push_back(sequence);
            }
        }
        Ok(done)
    }

    /// What the next [`Batch::step`] with `prefill_budget` runs: a token of every decoding
    /// sequence, and prompt tokens of the waiting ones in arrival order, at most
    /// `prefill_budget` of them (all with `None`; a prompt that does not fit is split).
    pub fn plan(&self, prefill_budget: Option<usize>) -> Plan {
        let mut left = prefill_budget.unwrap_or(usize::MAX);
        let mut plan = Plan {
            decode: self.decoding_ids(),
            ..Plan::default()
        };
        for s in &self.prefilling {
            let n = s.unprefilled().min(left);
            if n == 0 {
                break;
            }
            left -= n;
            plan.prefill.push((s.id, n));
            if n == s.unprefilled() {
                plan.joining.push(s.id);
            }
        }
        plan
    }

    /// One forward pass, as [`Batch::plan`] says: each decoding sequence gets its next token,
    /// each prompt that the pass finishes its first (from then on it decodes with the others).
    /// Sequences that finish leave the batch and are returned. A failed pass leaves the caches
    /// of the sequences in it in an unknown state: the caller drops the batch.
    pub fn step(
        &mut self,
        model: &dyn CausalLm,
        limits: &Limits,
        prefill_budget: Option<usize>,
        on_token: &mut dyn FnMut(TokenEvent) -> Flow,
    ) -> Result<Vec<(usize, Completion)>> {
        let plan = self.plan(prefill_budget);
        if plan.decode.is_empty() && plan.prefill.is_empty() {
            return Ok(Vec::new());
        }
        let chunks = plan.prefill.len();
        let mut segments = Vec::with_capacity(self.decoding.len() + chunks);
        for s in &mut self.decoding {
            let last = s
                .tokens
                .last()
                .expect("a decoding sequence has its first token");
            segments.push(Segment {
                ids: std::slice::from_ref(last),
                cache: &mut s.cache,
                logits: Logits::LastPosition,
            });
        }
        for (s, &(_, n)) in self.prefilling.iter_mut().zip(&plan.prefill) {
            let from = s.cache.len();
            // A chunk that does not end its prompt needs no logits.
            let logits = if from + n == s.request.prompt.len() {
                Logits::LastPosition
            } else {
                Logits::None
            };
            segments.push(Segment {
                ids: &s.request.prompt[from..from + n],
                cache: &mut s.cache,
                logits,
            });
        }
        let logits = crate::cpu::on_pool(|| model.forward(&mut segments))?;
        drop(segments);

        let eos = limits.eos.as_slice();
        let mut done = Vec::new();
        let mut row = 0;
        let mut kept = Vec::with_capacity(self.decoding.len() + plan.joining.len());
        for mut s in self.decoding.drain(..) {
            match s.sample(&logits.i(row)?, eos, on_token)? {
                Some(finish) => done.push(s.finish(finish)),
                None => kept.push(s),
            }
            row += 1;
        }
        for _ in 0..plan.joining.len() {
            let mut s = self
                .prefilling
                .pop_front()
                .expect("a joining sequence is at the front");
            match s.sample(&logits.i(row)?, eos, on_token)? {
                Some(finish) => done.push(s.finish(finish)),
                None => kept.push(s),
            }
            row += 1;
        }
        self.decoding = kept;
        Ok(done)
    }

    /// Stops sequence `id` now (its client went away): it leaves the batch with what it has.
    pub fn cancel(&mut self, id: usize) -> Option<Completion> {
        if let Some(i) = self.decoding.iter().position(|s| s.id == id) {
            return Some(self.decoding.remove(i).finish(FinishReason::Stopped).1);
        }
        let i = self.prefilling.iter().position(|s| s.id == id)?;
        self.prefilling
            .remove(i)
            .map(|s| s.finish(FinishReason::Stopped).1)
    }
}
