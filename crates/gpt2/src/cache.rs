//! The key/value cache of a batch being decoded: one `KvCache` per layer, plus each row's
//! left padding, so rows of different prompt lengths share one set of columns.

use candle_nn::kv_cache::KvCache;

use crate::config::Config;

/// The per-layer key/value cache of a batch being decoded, plus each row's left padding.
///
/// Rows of different prompt lengths are left-padded to a common length, so every row's
/// next token lands at the same column; `pads[r]` leading positions of row `r` are never
/// attended to, and row `r`'s position ids start at 0 on its first real token.
#[derive(Clone)]
pub struct Cache {
    pub(crate) layers: Vec<KvCache>,
    pub(crate) pads: Vec<usize>,
    pub(crate) len: usize,
}

impl Cache {
    /// `capacity` is the number of columns the batch will reach (padded prompt + new
    /// tokens): the cache allocates that once instead of GPT-2's full context for every row.
    pub fn new(cfg: &Config, pads: Vec<usize>, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self { layers: (0..cfg.n_layer).map(|_| KvCache::new(2, capacity)).collect(), pads, len: 0 }
    }

    /// A cache for `batch` rows without padding.
    pub fn unpadded(cfg: &Config, batch: usize, capacity: usize) -> Self {
        Self::new(cfg, vec![0; batch], capacity)
    }

    /// Number of positions already cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn batch(&self) -> usize {
        self.pads.len()
    }
}
