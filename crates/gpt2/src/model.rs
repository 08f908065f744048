//! GPT-2 (Radford et al., 2019), numerically the same model as Hugging Face's
//! `GPT2LMHeadModel`: token + position embeddings, pre-LayerNorm blocks of causal
//! self-attention and a GELU MLP, a final LayerNorm, and an output head tied to `wte`.
//!
//! Every step of the forward pass is one op of `crate::ops` (its own profiler row, with its
//! work count and the kernel that ran) or a module (`profiler::module` for `block`, `attn` and
//! `mlp`), so a profile accounts for all of it. Scopes cost a few nanoseconds when no profiler
//! is recording.

use candle_core::{DType, Device, Tensor};
use candle_nn::kv_cache::KvCache;
use candle_nn::VarBuilder;

use crate::cache::Cache;
use crate::config::{Activation, Config};
use crate::error::{Error, Result};
use crate::linear::Linear;
use crate::ops;
pub use crate::ops::{BiasActivation, MlpActivation};

/// Which positions get logits: all of them (what `model(ids)` returns in PyTorch; the
/// profiling exercise), or only the last (generation: the other rows would be thrown away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    AllPositions,
    LastPosition,
}

struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f32,
}

impl LayerNorm {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        Ok(Self {
            weight: vb.get(cfg.n_embd, "weight")?,
            bias: vb.get(cfg.n_embd, "bias")?,
            eps: cfg.layer_norm_epsilon as f32,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::layer_norm(x, &self.weight, &self.bias, self.eps)
    }
}

struct Attention {
    c_attn: Linear,
    c_proj: Linear,
    n_head: usize,
    head_dim: usize,
}

impl Attention {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        Ok(Self {
            c_attn: Linear::load(vb.pp("c_attn"), cfg.n_embd, 3 * cfg.n_embd)?,
            c_proj: Linear::load(vb.pp("c_proj"), cfg.n_embd, cfg.n_embd)?,
            n_head: cfg.n_head,
            head_dim: cfg.head_dim(),
        })
    }

    /// `x` is `[batch * seq, n_embd]`; `mask`, when present, is `[batch, 1, seq, cached + seq]`
    /// with `true` where a query may not look.
    /// Returns `residual + attention(x)`: the output projection's bias and the residual
    /// add are applied together.
    fn forward(&self, x: &Tensor, residual: &Tensor, batch: usize, cache: &mut KvCache, mask: Option<&Tensor>) -> Result<Tensor> {
        let _m = profiler::module("attn");
        let qkv = self.c_attn.forward(x)?;
        let (q, k, v) = ops::split_heads(&qkv, batch, self.n_head, self.head_dim)?;
        let (k, v) = ops::kv_cache(cache, &k, &v)?;
        let att = ops::attn_scores(&q, &k)?; // q·kᵀ / √head_dim
        let att = ops::mask_apply(att, mask)?;
        let att = ops::softmax(att)?;
        let y = ops::attn_values(&att, &v)?;
        let y = ops::merge_heads(&y)?;
        let out = self.c_proj.matmul(&y)?;
        self.c_proj.add_bias_and_residual(out, residual)
    }
}

struct Mlp {
    c_fc: Linear,
    c_proj: Linear,
    activation: Activation,
}

impl Mlp {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        Ok(Self {
            c_fc: Linear::load(vb.pp("c_fc"), cfg.n_embd, cfg.inner_dim())?,
            c_proj: Linear::load(vb.pp("c_proj"), cfg.inner_dim(), cfg.n_embd)?,
            activation: cfg.activation_function,
        })
    }

    /// Returns `residual + mlp(x)`.
    fn forward(&self, x: &Tensor, residual: &Tensor, act: &MlpActivation) -> Result<Tensor> {
        let _m = profiler::module("mlp");
        let h = self.c_fc.matmul(x)?;
        // The bias is applied with the activation (fused on the CPU).
        let h = ops::bias_activation(h, self.c_fc.bias(), self.activation, act)?;
        let out = self.c_proj.matmul(&h)?;
        self.c_proj.add_bias_and_residual(out, residual)
    }
}

struct Block {
    ln_1: LayerNorm,
    attn: Attention,
    ln_2: LayerNorm,
    mlp: Mlp,
}

impl Block {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        Ok(Self {
            ln_1: LayerNorm::load(vb.pp("ln_1"), cfg)?,
            attn: Attention::load(vb.pp("attn"), cfg)?,
            ln_2: LayerNorm::load(vb.pp("ln_2"), cfg)?,
            mlp: Mlp::load(vb.pp("mlp"), cfg)?,
        })
    }

    fn forward(&self, x: &Tensor, batch: usize, cache: &mut KvCache, mask: Option<&Tensor>, act: &MlpActivation) -> Result<Tensor> {
        let _m = profiler::module("block");
        let x = self.attn.forward(&self.ln_1.forward(x)?, x, batch, cache, mask)?;
        self.mlp.forward(&self.ln_2.forward(&x)?, &x, act)
    }
}

/// GPT-2 with its language-model head.
pub struct Model {
    wte: Tensor,
    wpe: Tensor,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    lm_head: Linear,
    cfg: Config,
    activation: MlpActivation,
}

impl Model {
    /// Builds the model from checkpoint tensors. `vb` is rooted where `wte`, `wpe`, `h.N`
    /// and `ln_f` live (the loader strips a `transformer.` prefix when there is one).
    pub fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        cfg.validate().map_err(Error::Input)?;
        let wte = vb.get((cfg.vocab_size, cfg.n_embd), "wte.weight")?;
        let wpe = vb.get((cfg.n_positions, cfg.n_embd), "wpe.weight")?;
        let blocks = (0..cfg.n_layer).map(|i| Block::load(vb.pp(format!("h.{i}")), cfg)).collect::<Result<Vec<_>>>()?;
        let ln_f = LayerNorm::load(vb.pp("ln_f"), cfg)?;
        // The head is tied to the token embedding: the same (vocab, n_embd) matrix.
        let lm_head = Linear::tied(wte.clone())?;
        Ok(Self { wte, wpe, blocks, ln_f, lm_head, cfg: cfg.clone(), activation: MlpActivation::default() })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn device(&self) -> &Device {
        self.wte.device()
    }

    pub fn dtype(&self) -> DType {
        self.wte.dtype()
    }

    /// Swaps the MLP's bias + activation: `Stock` for candle's separate ops, `Fused` (the
    /// default) for the engine's kernel, `Custom` for exercise 5's.
    pub fn set_mlp_activation(&mut self, activation: MlpActivation) {
        self.activation = activation;
    }

    /// A cache sized for `batch` unpadded rows growing to `capacity` positions.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> Cache {
        Cache::unpadded(&self.cfg, batch, capacity)
    }

    /// Runs `ids` (one row per sequence, all rows the same length) after whatever `cache`
    /// holds, appends their keys and values to it, and returns f32 logits shaped
    /// `[batch, seq, vocab]` (`AllPositions`) or `[batch, vocab]` (`LastPosition`).
    pub fn forward(&self, ids: &[Vec<u32>], cache: &mut Cache, logits: Logits) -> Result<Tensor> {
        let (batch, seq) = self.check_input(ids, cache)?;
        let past = cache.len;
        let mut x = ops::embedding(&self.wte, &self.wpe, ids, position_ids(&cache.pads, past, seq))?;
        let mask = ops::mask_build(&cache.pads, past, seq, self.device())?;
        for (block, layer_cache) in self.blocks.iter().zip(cache.layers.iter_mut()) {
            x = block.forward(&x, batch, layer_cache, mask.as_ref(), &self.activation)?;
        }
        cache.len += seq;
        let x = match logits {
            Logits::AllPositions => x,
            Logits::LastPosition => ops::last_position(&x, batch)?,
        };
        let x = self.ln_f.forward(&x)?;
        let out = self.lm_head.matmul(&x)?.to_dtype(DType::F32)?;
        Ok(match logits {
            Logits::AllPositions => out.reshape((batch, seq, self.cfg.vocab_size))?,
            Logits::LastPosition => out,
        })
    }

    /// Rejects what would otherwise fail deep inside a kernel: ragged rows, ids outside the
    /// vocabulary, sequences past the context window, a batch that does not match the cache.
    fn check_input(&self, ids: &[Vec<u32>], cache: &Cache) -> Result<(usize, usize)> {
        let batch = ids.len();
        let seq = ids.first().map_or(0, Vec::len);
        if batch == 0 || seq == 0 {
            return Err(Error::Input("empty input: give at least one token id in at least one row".into()));
        }
        if let Some(r) = ids.iter().position(|row| row.len() != seq) {
            return Err(Error::Input(format!("row {r} has {} ids, row 0 has {seq}: rows of one batch must be the same length (pad them)", ids[r].len())));
        }
        if batch != cache.batch() {
            return Err(Error::Input(format!("the batch has {batch} rows but its cache was made for {}", cache.batch())));
        }
        let vocab = self.cfg.vocab_size;
        for (r, row) in ids.iter().enumerate() {
            if let Some((c, id)) = row.iter().enumerate().find(|(_, id)| **id as usize >= vocab) {
                return Err(Error::Input(format!("token id {id} (row {r}, position {c}) is out of range: the vocabulary has {vocab} ids (0..={})", vocab - 1)));
            }
        }
        // Positions count from each row's first real token, so a padded row reaches the
        // context limit later than its column index suggests.
        let end = cache.len + seq - cache.pads.iter().min().copied().unwrap_or(0);
        if end > self.cfg.n_positions {
            return Err(Error::Input(format!(
                "sequence of {end} positions ({} cached + {seq} new) is longer than the model's context of {} (n_positions)",
                cache.len, self.cfg.n_positions
            )));
        }
        Ok((batch, seq))
    }
}

/// Position ids of the new columns `past..past + seq`, row-major: row `r` counts from its
/// first real token, so its pads (which nothing attends to) get position 0.
fn position_ids(pads: &[usize], past: usize, seq: usize) -> Vec<u32> {
    pads.iter().flat_map(|&pad| (past..past + seq).map(move |col| col.saturating_sub(pad) as u32)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_start_at_each_rows_first_token() {
        assert_eq!(position_ids(&[0, 2], 0, 4), vec![0, 1, 2, 3, 0, 0, 0, 1]);
        assert_eq!(position_ids(&[0, 2], 4, 1), vec![4, 2]);
    }
}
