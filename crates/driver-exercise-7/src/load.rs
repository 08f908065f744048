//! The load every run sends: the same prompts and output length, other arrivals.

use crate::args::Args;
use bench::load::FixedLoad;

/// The same load for every run; only the arrivals (and the request count) change.
pub(crate) fn fixed_load(args: &Args, model: &str) -> FixedLoad {
    FixedLoad {
        base_url: args.base_url.clone(),
        model: model.to_string(),
        prompt_words: args.prompt_words,
        seed: args.seed,
        max_tokens: args.max_tokens,
        timeout_s: args.timeout,
        progress: !args.no_progress,
    }
}
