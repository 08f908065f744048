//! Batched text generation with a KV cache.
//!
//! Prompts of different lengths are left-padded to a common length and masked, so all rows
//! decode in lock-step: one forward pass per generated column. Sampling (greedy, or seeded
//! temperature / top-k / top-p) is candle-transformers' `LogitsProcessor`, one per row.
//! A callback sees every token as it is produced: a server streams it, a benchmark times it.

use candle_core::IndexOp;
use candle_transformers::generation::{LogitsProcessor, Sampling as Strategy};

use crate::error::{Error, Result};
use crate::cache::Cache;
use crate::model::{Logits, Model};

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

    fn processor(&self) -> Result<LogitsProcessor> {
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
        let strategy = if temperature < 1e-7 {
            Strategy::ArgMax
        } else {
            match (self.top_k, self.top_p) {
                (None, None) => Strategy::All { temperature },
                (Some(k), None) => Strategy::TopK { k, temperature },
                (None, Some(p)) => Strategy::TopP { p, temperature },
                (Some(k), Some(p)) => Strategy::TopKThenTopP { k, p, temperature },
            }
        };
        Ok(LogitsProcessor::from_sampling(self.seed, strategy))
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
    let cfg = model.config();
    let eos = cfg.eos_token_id;
    for (r, req) in requests.iter().enumerate() {
        if req.prompt.is_empty() {
            return Err(Error::Input(format!("request {r} has an empty prompt: give at least one token")));
        }
        let end = req.prompt.len() + req.max_tokens;
        if end > cfg.n_positions {
            return Err(Error::Input(format!(
                "request {r}: prompt of {} tokens + max_tokens {} = {end} is longer than the model's context of {}",
                req.prompt.len(),
                req.max_tokens,
                cfg.n_positions
            )));
        }
    }
    let mut processors = requests.iter().map(|r| r.sampling.processor()).collect::<Result<Vec<_>>>()?;
    let mut out: Vec<Completion> = requests.iter().map(|_| Completion { tokens: Vec::new(), finish: FinishReason::Length }).collect();
    let mut live: Vec<bool> = requests.iter().map(|r| r.max_tokens > 0).collect();
    if requests.is_empty() || !live.iter().any(|&l| l) {
        return Ok(out);
    }

    let width = requests.iter().map(|r| r.prompt.len()).max().unwrap_or(0);
    let steps = requests.iter().map(|r| r.max_tokens).max().unwrap_or(0);
    let pads: Vec<usize> = requests.iter().map(|r| width - r.prompt.len()).collect();
    // Padding ids are never attended to; any valid id will do.
    let padded: Vec<Vec<u32>> = requests.iter().zip(&pads).map(|(r, &pad)| [vec![eos; pad], r.prompt.clone()].concat()).collect();
    let mut cache = Cache::new(cfg, pads, width + steps);

    let mut logits = model.forward(&padded, &mut cache, Logits::LastPosition)?;
    loop {
        let mut next = vec![eos; requests.len()];
        for (r, req) in requests.iter().enumerate() {
            if !live[r] {
                continue;
            }
            let token = processors[r].sample(&logits.i(r)?)?;
            next[r] = token;
            out[r].tokens.push(token);
            let flow = on_token(TokenEvent { row: r, token, index: out[r].tokens.len() - 1 });
            let finish = if flow == Flow::Stop {
                Some(FinishReason::Stopped)
            } else if req.stop_at_eos && token == eos {
                Some(FinishReason::Eos)
            } else if out[r].tokens.len() >= req.max_tokens {
                Some(FinishReason::Length)
            } else {
                None
            };
            if let Some(finish) = finish {
                out[r].finish = finish;
                live[r] = false;
            }
        }
        if !live.iter().any(|&l| l) {
            return Ok(out);
        }
        // Finished rows ride along (static batching) with a dummy id; nothing reads them.
        let column: Vec<Vec<u32>> = next.into_iter().map(|t| vec![t]).collect();
        logits = model.forward(&column, &mut cache, Logits::LastPosition)?;
    }
}
