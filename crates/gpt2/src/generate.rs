//! Batched text generation with a KV cache.
//!
//! A [`Batch`] holds the sequences decoding together. Requests [`Batch::admit`] it in groups:
//! a group's prompts are left-padded to a common length and prefilled together into a cache
//! of their own, in one forward pass or, a chunk of columns at a time, in several
//! ([`Batch::prefill`]: the caller bounds each pass, so a long prompt cannot hold up the
//! sequences already decoding for longer than one chunk). The pass that reaches the end of
//! the prompts samples each one's first token; at the next [`Batch::step`] the group's cache
//! rows are merged into the running batch's ([`Cache::merge`]), which decodes one token for
//! every row per forward pass. A finished row leaves the batch at once: its cache row is
//! dropped at the next step. Chunking, joining and leaving change no row's keys, values or
//! position ids, and padding is masked out exactly, so each sequence computes what it would
//! decoding alone; the serve tests check, token for token, that requests joining mid-flight
//! (prompts longer than a chunk included) get their solo tokens. (The kernels a batch shape
//! picks may group floating-point sums differently, so a near-tie between two logits could
//! in principle break the other way; no case has been seen.)
//!
//! [`generate`] is the simplest use: one group, prefilled whole, stepped until every row is
//! done. The server's scheduler (`serve::engine`) lets new groups join while others decode.
//!
//! Sampling (greedy, or seeded temperature / top-k / top-p) is [`crate::sampler::Sampler`],
//! one per sequence. A callback sees every token as it is produced: a
//! server streams it, a benchmark times it.

use candle_core::IndexOp;

use crate::error::{Error, Result};
use crate::cache::Cache;
use crate::model::{Logits, Model};
use crate::sampler::Sampler;

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
        Self { temperature: 0.0, top_k: None, top_p: None, seed: 0 }
    }

    fn sampler(&self) -> Result<Sampler> {
        let temperature = self.temperature;
        if !(temperature.is_finite() && temperature >= 0.0) {
            return Err(Error::Input(format!("temperature must be a finite number ≥ 0, not {temperature}")));
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
pub fn generate(model: &Model, requests: &[Request], on_token: &mut dyn FnMut(TokenEvent) -> Flow) -> Result<Vec<Completion>> {
    let mut out: Vec<Option<Completion>> = vec![None; requests.len()];
    let mut batch = Batch::new();
    let mut done = batch.admit(model, requests.iter().cloned().enumerate().collect())?;
    while batch.is_prefilling() {
        done.extend(batch.prefill(model, None, on_token)?.done);
    }
    while !batch.is_empty() {
        done.extend(batch.step(model, on_token)?);
    }
    for (id, completion) in done {
        out[id] = Some(completion);
    }
    Ok(out.into_iter().map(|c| c.unwrap_or(Completion { tokens: Vec::new(), finish: FinishReason::Length })).collect())
}

/// Decodes `prompts` as one batch for exactly `max_tokens` tokens each, greedily and with
/// end-of-text ignored, so that every call does the same work: the generation a benchmark
/// times (`bench::inprocess::run` takes it as its closure). `on_token(row)` is called for every
/// token of every row as it is produced.
pub fn generate_fixed(model: &Model, prompts: &[Vec<u32>], max_tokens: usize, on_token: &mut dyn FnMut(usize)) -> Result<()> {
    let requests: Vec<Request> = prompts
        .iter()
        .map(|prompt| Request { prompt: prompt.clone(), max_tokens, sampling: Sampling::greedy(), stop_at_eos: false })
        .collect();
    generate(model, &requests, &mut |event| {
        on_token(event.row);
        Flow::Continue
    })?;
    Ok(())
}

/// One sequence being decoded: its request, its sampler and what it has produced.
struct Sequence {
    id: usize,
    request: Request,
    sampler: Sampler,
    tokens: Vec<u32>,
}

impl Sequence {
    /// Samples this sequence's next token from its logits, reports it, and says whether the
    /// sequence is finished.
    fn sample(&mut self, logits: &candle_core::Tensor, eos: u32, on_token: &mut dyn FnMut(TokenEvent) -> Flow) -> Result<Option<FinishReason>> {
        let token = self.sampler.next(logits)?;
        self.tokens.push(token);
        let flow = on_token(TokenEvent { row: self.id, token, index: self.tokens.len() - 1 });
        Ok(if flow == Flow::Stop {
            Some(FinishReason::Stopped)
        } else if self.request.stop_at_eos && token == eos {
            Some(FinishReason::Eos)
        } else if self.tokens.len() >= self.request.max_tokens {
            Some(FinishReason::Length)
        } else {
            None
        })
    }

    fn remaining(&self) -> usize {
        self.request.max_tokens.saturating_sub(self.tokens.len())
    }

    fn finish(self, finish: FinishReason) -> (usize, Completion) {
        (self.id, Completion { tokens: self.tokens, finish })
    }
}

/// Rows of a cache, each a sequence still decoding or `None` once it has left. The rows of
/// sequences that left are dropped from the cache at the next step.
struct Part {
    cache: Cache,
    rows: Vec<Option<Sequence>>,
}

impl Part {
    fn live(&self) -> impl Iterator<Item = &Sequence> {
        self.rows.iter().flatten()
    }
}

/// A group whose prompts are being prefilled, some columns at a time: `cache.len()` columns
/// of `padded` are in the cache already.
struct Prefill {
    cache: Cache,
    /// The prompts, left-padded to one width.
    padded: Vec<Vec<u32>>,
    /// `None` once the row's client has gone: its columns are still computed (the rows of a
    /// pass share one shape), and it is dropped when the group joins.
    rows: Vec<Option<Sequence>>,
}

impl Prefill {
    fn width(&self) -> usize {
        self.padded.first().map_or(0, Vec::len)
    }

    fn live(&self) -> impl Iterator<Item = &Sequence> {
        self.rows.iter().flatten()
    }
}

/// What one [`Batch::prefill`] pass did.
#[derive(Debug, Default)]
pub struct Prefilled {
    /// Sequences that finished at their first token.
    pub done: Vec<(usize, Completion)>,
    /// Ids of the sequences whose prompt this pass finished and that now decode with the batch.
    pub joined: Vec<usize>,
    /// Prompt columns × rows computed, padding included.
    pub tokens: usize,
}

/// Sequences decoding together; they may join and leave between steps (continuous batching).
/// Every sequence is named by the `id` its caller gave it, which is also the `row` of its
/// [`TokenEvent`]s.
#[derive(Default)]
pub struct Batch {
    running: Option<Part>,
    /// Groups prefilled since the last step, merged into `running` at the next one.
    joining: Vec<Part>,
    /// Groups admitted whose prompts are not wholly prefilled yet, in arrival order.
    prefilling: std::collections::VecDeque<Prefill>,
}

impl Batch {
    pub fn new() -> Batch {
        Batch::default()
    }

    fn parts(&self) -> impl Iterator<Item = &Part> {
        self.running.iter().chain(&self.joining)
    }

    /// Sequences admitted and not finished: decoding, or still being prefilled.
    pub fn len(&self) -> usize {
        self.decoding_ids().len() + self.prefilling_ids().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a [`Batch::step`] has a sequence to decode.
    pub fn is_decoding(&self) -> bool {
        self.parts().any(|p| p.live().next().is_some())
    }

    /// Whether a group's prompts are waiting for more [`Batch::prefill`] passes.
    pub fn is_prefilling(&self) -> bool {
        !self.prefilling.is_empty()
    }

    /// The ids of the sequences decoding, in the row order of the next step.
    pub fn decoding_ids(&self) -> Vec<usize> {
        self.parts().flat_map(|p| p.live().map(|s| s.id)).collect()
    }

    /// The ids of the sequences still being prefilled, the group of the next pass first.
    pub fn prefilling_ids(&self) -> Vec<usize> {
        self.prefilling.iter().flat_map(|p| p.live().map(|s| s.id)).collect()
    }

    /// Every sequence admitted and not finished.
    pub fn ids(&self) -> Vec<usize> {
        [self.decoding_ids(), self.prefilling_ids()].concat()
    }

    /// Admits `requests` (each with its caller's id) as one group, to be prefilled together
    /// by [`Batch::prefill`] after the groups admitted before it. Requests for no tokens are
    /// returned finished at once. Nothing is admitted when a request is invalid (the error
    /// names it).
    pub fn admit(&mut self, model: &Model, requests: Vec<(usize, Request)>) -> Result<Vec<(usize, Completion)>> {
        let cfg = model.config();
        let mut sequences = Vec::with_capacity(requests.len());
        for (id, request) in requests {
            if request.prompt.is_empty() {
                return Err(Error::Input(format!("request {id} has an empty prompt: give at least one token")));
            }
            let end = request.prompt.len() + request.max_tokens;
            if end > cfg.n_positions {
                return Err(Error::Input(format!(
                    "request {id}: prompt of {} tokens + max_tokens {} = {end} is longer than the model's context of {}",
                    request.prompt.len(),
                    request.max_tokens,
                    cfg.n_positions
                )));
            }
            let sampler = request.sampling.sampler()?;
            sequences.push(Sequence { id, request, sampler, tokens: Vec::new() });
        }
        // A request for no tokens is done before it starts.
        let (sequences, mut done): (Vec<Sequence>, Vec<Sequence>) = sequences.into_iter().partition(|s| s.request.max_tokens > 0);
        let done: Vec<(usize, Completion)> = done.drain(..).map(|s| s.finish(FinishReason::Length)).collect();
        if sequences.is_empty() {
            return Ok(done);
        }
        let eos = cfg.eos_token_id;
        let width = sequences.iter().map(|s| s.request.prompt.len()).max().unwrap_or(0);
        let pads: Vec<usize> = sequences.iter().map(|s| width - s.request.prompt.len()).collect();
        // Padding ids are never attended to; any valid id will do.
        let padded: Vec<Vec<u32>> = sequences.iter().zip(&pads).map(|(s, &pad)| [vec![eos; pad], s.request.prompt.clone()].concat()).collect();
        let room = sequences.iter().map(|s| s.request.max_tokens).max().unwrap_or(0);
        let cache = Cache::new(cfg, pads, width + room);
        self.prefilling.push_back(Prefill { cache, padded, rows: sequences.into_iter().map(Some).collect() });
        Ok(done)
    }

    /// Runs one forward pass over the next columns of the oldest group still prefilling:
    /// all that is left of its prompts when `max_tokens` is `None`, else as many columns as
    /// keep rows × columns within `max_tokens` (at least one), the rest split evenly over the
    /// passes still needed. The pass that reaches the prompts' end samples each sequence's
    /// first token; those that do not finish there decode with the batch from the next
    /// [`Batch::step`]. A failed pass drops the group (its ids were
    /// [`Batch::next_prefill_ids`]).
    pub fn prefill(&mut self, model: &Model, max_tokens: Option<usize>, on_token: &mut dyn FnMut(TokenEvent) -> Flow) -> Result<Prefilled> {
        // Groups whose every client has gone cost nothing more.
        while self.prefilling.front().is_some_and(|g| g.live().next().is_none()) {
            self.prefilling.pop_front();
        }
        let Some(mut group) = self.prefilling.pop_front() else { return Ok(Prefilled::default()) };
        let (width, rows, from) = (group.width(), group.rows.len(), group.cache.len());
        let left = width - from;
        let columns = match max_tokens {
            None => left,
            Some(budget) => {
                let most = (budget / rows).max(1);
                let passes = left.div_ceil(most);
                left.div_ceil(passes)
            }
        };
        let chunk: Vec<Vec<u32>> = group.padded.iter().map(|row| row[from..from + columns].to_vec()).collect();
        let logits = model.forward(&chunk, &mut group.cache, Logits::LastPosition)?;
        let mut out = Prefilled { tokens: rows * columns, ..Prefilled::default() };
        if group.cache.len() < width {
            // Only the last pass's logits (the prompts' last positions) are used.
            self.prefilling.push_front(group);
            return Ok(out);
        }
        let eos = model.config().eos_token_id;
        for (r, slot) in group.rows.iter_mut().enumerate() {
            let Some(sequence) = slot.as_mut() else { continue };
            match sequence.sample(&logits.i(r)?, eos, on_token)? {
                Some(finish) => out.done.push(slot.take().expect("checked above").finish(finish)),
                None => out.joined.push(sequence.id),
            }
        }
        if group.live().next().is_some() {
            self.joining.push(Part { cache: group.cache, rows: group.rows });
        }
        Ok(out)
    }

    /// The ids of the group the next [`Batch::prefill`] pass works on.
    pub fn next_prefill_ids(&self) -> Vec<usize> {
        self.prefilling.iter().find(|g| g.live().next().is_some()).map_or(Vec::new(), |g| g.live().map(|s| s.id).collect())
    }

    /// Stops sequence `id` now (its client went away): it leaves the batch with what it has.
    pub fn cancel(&mut self, id: usize) -> Option<Completion> {
        let decoding = self.running.iter_mut().chain(self.joining.iter_mut()).map(|p| &mut p.rows);
        for rows in decoding.chain(self.prefilling.iter_mut().map(|g| &mut g.rows)) {
            if let Some(slot) = rows.iter_mut().find(|s| s.as_ref().is_some_and(|s| s.id == id)) {
                return slot.take().map(|s| s.finish(FinishReason::Stopped).1);
            }
        }
        None
    }

    /// Decodes one more token for every sequence that has its first token, in one forward
    /// pass, after merging the groups that joined and dropping the rows that left. Returns the
    /// sequences that finished. Groups still prefilling wait.
    pub fn step(&mut self, model: &Model, on_token: &mut dyn FnMut(TokenEvent) -> Flow) -> Result<Vec<(usize, Completion)>> {
        self.regroup()?;
        let Some(part) = self.running.as_mut() else { return Ok(Vec::new()) };
        let column: Vec<Vec<u32>> = part.live().map(|s| vec![*s.tokens.last().expect("a joined sequence has its first token")]).collect();
        let logits = model.forward(&column, &mut part.cache, Logits::LastPosition)?;
        let eos = model.config().eos_token_id;
        let mut done = Vec::new();
        for (r, slot) in part.rows.iter_mut().enumerate() {
            let Some(sequence) = slot.as_mut() else { continue };
            if let Some(finish) = sequence.sample(&logits.i(r)?, eos, on_token)? {
                done.push(slot.take().expect("checked above").finish(finish));
            }
        }
        if part.live().next().is_none() {
            self.running = None;
        }
        Ok(done)
    }

    /// Makes `running` one part whose every row is live: a single copy of the cache
    /// ([`Cache::merge`]) when sequences joined or left since the last step, none otherwise.
    fn regroup(&mut self) -> Result<()> {
        let settled = self.joining.is_empty() && self.running.as_ref().is_none_or(|p| p.rows.iter().all(Option::is_some));
        if settled {
            return Ok(());
        }
        let parts: Vec<Part> = self.running.take().into_iter().chain(self.joining.drain(..)).collect();
        let kept: Vec<Vec<usize>> = parts.iter().map(|p| (0..p.rows.len()).filter(|&r| p.rows[r].is_some()).collect()).collect();
        let room = parts.iter().flat_map(|p| p.live().map(Sequence::remaining)).max().unwrap_or(0);
        if kept.iter().all(Vec::is_empty) {
            return Ok(());
        }
        let sources: Vec<(&Cache, &[usize])> = parts.iter().zip(&kept).map(|(p, k)| (&p.cache, k.as_slice())).collect();
        let cache = Cache::merge(&sources, room)?;
        let rows = parts.into_iter().flat_map(|p| p.rows.into_iter().flatten().map(Some)).collect();
        self.running = Some(Part { cache, rows });
        Ok(())
    }
}
