//! Key/value caches. Every sequence has its own ([`SeqCache`]: one candle `KvCache` per layer,
//! `[1, n_head, positions, head_dim]`), so sequences of any lengths share a forward pass without
//! padding, and a sequence joins or leaves a running batch without copying anyone's keys.

use candle_nn::kv_cache::KvCache;

/// One sequence's keys and values, layer by layer.
#[derive(Clone)]
pub struct SeqCache {
    pub(crate) layers: Vec<KvCache>,
    pub(crate) len: usize,
}

impl SeqCache {
    /// `capacity` is the number of positions the sequence will reach (prompt + new tokens): the
    /// cache allocates that once (candle's cache grows by as much again if it is passed).
    pub fn new(layers: usize, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Self {
            layers: (0..layers).map(|_| KvCache::new(2, capacity)).collect(),
            len: 0,
        }
    }

    /// Positions already cached.
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}
