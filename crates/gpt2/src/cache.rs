//! Key/value caches. Every sequence has its own ([`SeqCache`]: one candle `KvCache` per layer,
//! `[1, n_head, positions, head_dim]`), so sequences of any lengths share a forward pass without
//! padding, and a sequence joins or leaves a running batch without copying anyone's keys.
//! [`Cache`] is a batch's rows of them, for [`crate::Model::forward`].

use candle_nn::kv_cache::KvCache;

use crate::config::Config;

/// One sequence's keys and values, layer by layer.
#[derive(Clone)]
pub struct SeqCache {
    pub(crate) layers: Vec<KvCache>,
    pub(crate) len: usize,
}

impl SeqCache {
    /// `capacity` is the number of positions the sequence will reach (prompt + new tokens): the
    /// cache allocates that once (candle's cache grows by as much again if it is passed).
    pub fn new(cfg: &Config, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self { layers: (0..cfg.n_layer).map(|_| KvCache::new(2, capacity)).collect(), len: 0 }
    }

    /// Positions already cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// The caches of a batch's rows, one [`SeqCache`] each.
#[derive(Clone)]
pub struct Cache {
    pub(crate) rows: Vec<SeqCache>,
}

impl Cache {
    /// `batch` empty rows, each growing to `capacity` positions.
    pub fn new(cfg: &Config, batch: usize, capacity: usize) -> Self {
        Self { rows: (0..batch).map(|_| SeqCache::new(cfg, capacity)).collect() }
    }

    /// Positions cached in row 0 ([`crate::Model::forward`] keeps every row the same length).
    pub fn len(&self) -> usize {
        self.rows.first().map_or(0, SeqCache::len)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn batch(&self) -> usize {
        self.rows.len()
    }
}
