//! The generation function the in-process benchmark times: GPT-2 decoding a whole batch
//! together, for a fixed number of tokens (end-of-text ignored, so every repeat does the same
//! work), reporting each token as it is produced.

use anyhow::Result;
use gpt2::{Flow, Model, Request, Sampling};

/// Decodes `prompts` as one batch for exactly `max_tokens` tokens, calling `on_token(row)` for
/// every token of every row.
pub fn generate_fixed(model: &Model, prompts: &[Vec<u32>], max_tokens: usize, on_token: &mut dyn FnMut(usize)) -> Result<()> {
    let requests: Vec<Request> = prompts
        .iter()
        .map(|prompt| Request { prompt: prompt.clone(), max_tokens, sampling: Sampling::greedy(), stop_at_eos: false })
        .collect();
    gpt2::generate(model, &requests, &mut |event| {
        on_token(event.row);
        Flow::Continue
    })?;
    Ok(())
}
