//! The load every run sends: the same prompts and output length, other arrivals.

use crate::args::Args;
use bench::load::{Bound, LoadConfig, Prompt, Traffic};

/// The same load for every run; only the arrivals (and the request count) change.
pub(crate) fn load_config(
    args: &Args,
    model: &str,
    traffic: Traffic,
    requests: usize,
) -> LoadConfig {
    LoadConfig {
        base_url: args.base_url.clone(),
        model: model.to_string(),
        traffic,
        bound: Bound::Requests(requests),
        prompt: Prompt::RandomWords {
            words: args.prompt_words,
            seed: args.seed,
        },
        max_tokens: args.max_tokens,
        ignore_eos: true,
        include_usage: true,
        temperature: 0.0,
        warmup: 2,
        timeout_s: args.timeout,
        api_key: None,
        progress: !args.no_progress,
    }
}
