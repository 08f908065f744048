//! GPT-2's text generation: the engine's batched generation ([`engine::generate`], which runs
//! any model) within GPT-2's limits (its context of `n_positions` and its `<|endoftext|>`).

pub use engine::generate::{
    Batch, Completion, FinishReason, Flow, Limits, Plan, Request, Sampling, TokenEvent,
};

use crate::config::Config;
use crate::model::Model;
use engine::error::Result;

/// GPT-2's context and end-of-text token, from its config.
pub fn limits(cfg: &Config) -> Limits {
    Limits {
        context: cfg.n_positions,
        eos: vec![cfg.eos_token_id],
    }
}

/// Generates a continuation for every request, decoding them together as one batch
/// ([`engine::generate::generate`]).
pub fn generate(
    model: &Model,
    requests: &[Request],
    on_token: &mut dyn FnMut(TokenEvent) -> Flow,
) -> Result<Vec<Completion>> {
    engine::generate::generate(model, &limits(model.config()), requests, on_token)
}

/// Decodes `prompts` as one batch for exactly `max_tokens` tokens each, greedily and with
/// end-of-text ignored ([`engine::generate::generate_fixed`]): the generation a benchmark times.
pub fn generate_fixed(
    model: &Model,
    prompts: &[Vec<u32>],
    max_tokens: usize,
    on_token: &mut dyn FnMut(usize),
) -> Result<()> {
    engine::generate::generate_fixed(
        model,
        &limits(model.config()),
        prompts,
        max_tokens,
        on_token,
    )
}
