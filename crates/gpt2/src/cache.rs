//! The key/value cache of a batch being decoded: one `KvCache` per layer, plus each row's
//! left padding, so rows of different prompt lengths share one set of columns, and
//! [`Cache::merge`], which lets rows join and leave a batch that is already decoding.

use candle_core::Tensor;
use candle_nn::kv_cache::KvCache;

use crate::config::Config;
use crate::error::{Error, Result};

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

    /// Each row's leading padding: row `r`'s real tokens are columns `pads[r]..len`.
    pub fn pads(&self) -> &[usize] {
        &self.pads
    }

    /// Row `r`'s real length: the positions it attends to.
    pub fn row_len(&self, r: usize) -> usize {
        self.len - self.pads[r]
    }

    /// A new cache holding the chosen rows of several caches, in order: `parts` pairs a cache
    /// with the rows taken from it. Rows are right-aligned on a common length, the longest
    /// real row, so a shorter side gets left padding and columns that would be padding in
    /// every chosen row are dropped. Each row keeps its keys, values and position ids (they
    /// count from its first real token). `room` is how many more columns the new cache is
    /// expected to grow by; it is allocated once.
    ///
    /// This one copy serves every change to a running batch: rows joining (`[(running,
    /// all), (joining, all)]`), rows leaving (`[(running, kept)]`), and both in one step.
    pub fn merge(parts: &[(&Cache, &[usize])], room: usize) -> Result<Cache> {
        let layers = parts.first().map_or(0, |(c, _)| c.layers.len());
        if parts.iter().any(|(c, _)| c.layers.len() != layers) {
            return Err(Error::Input("caches of different depths cannot be merged".into()));
        }
        for (c, rows) in parts {
            if let Some(&r) = rows.iter().find(|&&r| r >= c.batch()) {
                return Err(Error::Input(format!("row {r} is outside a cache of {} rows", c.batch())));
            }
        }
        let len = parts.iter().flat_map(|(c, rows)| rows.iter().map(|&r| c.row_len(r))).max().unwrap_or(0);
        let pads: Vec<usize> = parts.iter().flat_map(|(c, rows)| rows.iter().map(move |&r| len - c.row_len(r))).collect();
        let mut merged: Vec<KvCache> = (0..layers).map(|_| KvCache::new(2, (len + room).max(1))).collect();
        if len > 0 {
            for (l, layer) in merged.iter_mut().enumerate() {
                let mut ks = Vec::new();
                let mut vs = Vec::new();
                for (c, rows) in parts.iter().filter(|(_, rows)| !rows.is_empty()) {
                    let (Some(k), Some(v)) = (c.layers[l].k()?, c.layers[l].v()?) else {
                        return Err(Error::Input("a cache with rows to merge holds no keys".into()));
                    };
                    ks.push(aligned(&k, rows, c.len, len)?);
                    vs.push(aligned(&v, rows, c.len, len)?);
                }
                // The cache copies them in with `slice_set`, which takes contiguous tensors only.
                layer.append(&Tensor::cat(&ks, 0)?.contiguous()?, &Tensor::cat(&vs, 0)?.contiguous()?)?;
            }
        }
        Ok(Cache { layers: merged, pads, len })
    }
}

/// `rows` of a `[batch, heads, from, head_dim]` key or value tensor, right-aligned on `to`
/// columns: zeros on the left when `to > from`, leading columns dropped when `to < from` (the
/// caller has checked that they are padding in every row taken).
fn aligned(t: &Tensor, rows: &[usize], from: usize, to: usize) -> Result<Tensor> {
    let all: Vec<usize> = (0..t.dim(0)?).collect();
    let t = if rows == all.as_slice() {
        t.clone()
    } else {
        // Runs of consecutive rows are taken as one slice.
        let mut pieces = Vec::new();
        let mut i = 0;
        while i < rows.len() {
            let mut j = i + 1;
            while j < rows.len() && rows[j] == rows[j - 1] + 1 {
                j += 1;
            }
            pieces.push(t.narrow(0, rows[i], j - i)?);
            i = j;
        }
        Tensor::cat(&pieces, 0)?
    };
    Ok(match to.cmp(&from) {
        std::cmp::Ordering::Equal => t,
        std::cmp::Ordering::Less => t.narrow(2, from - to, to)?,
        std::cmp::Ordering::Greater => {
            let (b, h, _, d) = t.dims4()?;
            let zeros = Tensor::zeros((b, h, to - from, d), t.dtype(), t.device())?;
            Tensor::cat(&[&zeros, &t], 2)?
        }
    })
}
