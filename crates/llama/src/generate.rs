//! What generation needs of a Llama-family checkpoint besides its forward pass: its context
//! and the ids that end a sequence (`eos_token_id` of config.json and generation_config.json,
//! several for Llama 3's chat models). The generation itself is the engine's, for every model
//! ([`engine::generate`]).

use std::path::Path;

use engine::generate::Limits;
use engine::Result;

use crate::config::Config;

/// The limits of the checkpoint in `dir`, whose config is `cfg`.
pub fn limits(cfg: &Config, dir: &Path) -> Result<Limits> {
    Ok(Limits {
        context: cfg.max_positions,
        eos: engine::loader::eos_ids(dir)?,
    })
}

/// The bytes one position takes in a sequence's KV cache held in `dtype`: keys and values, in
/// every layer, the key/value heads' width each (grouped-query attention caches fewer heads
/// than it queries).
pub fn kv_bytes_per_token(cfg: &Config, dtype: candle_core::DType) -> u64 {
    (2 * cfg.num_hidden_layers * cfg.num_key_value_heads * cfg.head_dim * dtype.size_in_bytes())
        as u64
}
