//! GPT-2 (Radford et al., 2019), numerically the same model as Hugging Face's
//! `GPT2LMHeadModel`: token + position embeddings, pre-LayerNorm blocks of causal
//! self-attention and a GELU MLP, a final LayerNorm, and an output head tied to `wte`.
//!
//! Every step of the forward pass runs inside a profiler scope (`profiler::op` for ops,
//! `profiler::module` for `block`, `attn` and `mlp`), so a profile accounts for all of it.
//! Scopes cost a few nanoseconds when no profiler is recording.

use candle_core::{DType, Device, IndexOp, Tensor};
use candle_nn::kv_cache::KvCache;
use candle_nn::VarBuilder;

use crate::cache::Cache;
use crate::config::{Activation, Config};
use crate::error::{Error, Result};
use crate::kernels;
use crate::linear::Linear;
use crate::packed_matmul::{self, Rhs};
use crate::work;

/// Which positions get logits: all of them (what `model(ids)` returns in PyTorch; the
/// profiling exercise), or only the last (generation: the other rows would be thrown away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Logits {
    AllPositions,
    LastPosition,
}

/// How the MLP applies its bias and activation.
#[derive(Clone, Default)]
pub enum MlpActivation {
    /// Candle's own ops, one after the other: a broadcast bias add, then GELU. The
    /// starting point of exercise 5.
    Stock,
    /// The engine's fused bias + GELU kernel (CPU, `gelu_new` models); elsewhere `Stock`.
    #[default]
    Fused,
    /// A caller's kernel (exercise 5 plugs the learner's fused op in here).
    Custom(std::sync::Arc<dyn BiasActivation>),
}

/// A replacement for the MLP's `bias_add` + activation pair: `x` is `[tokens, n_inner]`,
/// `bias` is `[n_inner]`.
pub trait BiasActivation: Send + Sync {
    /// The name its profiler row gets, e.g. `fused_bias_gelu`.
    fn name(&self) -> &'static str;
    fn forward(&self, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor>;
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
        // Mean, variance, normalise, scale and shift: about 8 FLOPs per value.
        let (flops, bytes) = work::elementwise(x.elem_count(), 8, 1, 2 * self.weight.elem_count(), x.dtype().size_in_bytes());
        let _s = profiler::op_shapes("layer_norm", &[x.dims()]).with_work(flops, bytes);
        if x.device().is_cpu() && x.dtype() == DType::F32 {
            Ok(kernels::layer_norm(x, &self.weight, &self.bias, self.eps)?)
        } else {
            Ok(candle_nn::ops::layer_norm(x, &self.weight, &self.bias, self.eps)?)
        }
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
        let (n, width) = x.dims2()?;
        let seq = n / batch;
        let qkv = self.c_attn.forward(x)?;
        let (q, k, v) = {
            let _s = profiler::op("split_heads");
            let qkv = qkv.reshape((batch, seq, 3, self.n_head, self.head_dim))?;
            let head = |i: usize| -> candle_core::Result<Tensor> { qkv.i((.., .., i))?.transpose(1, 2)?.contiguous() };
            (head(0)?, head(1)?, head(2)?)
        };
        let (k, v) = {
            let _s = profiler::op("kv_cache");
            cache.append(&k, &v)?
        };
        let scores = {
            let (b, h, t, d) = q.dims4()?;
            let (flops, bytes) = work::matmul(b * h, t, d, k.dim(2)?, q.dtype().size_in_bytes());
            let _s = profiler::op_shapes("attn_qk", &[q.dims(), k.dims()]).with_work(flops, bytes);
            let scale = 1.0 / (self.head_dim as f64).sqrt();
            // candle's batched gemm is slow at attention's small shapes; the packed kernel is not.
            if packed_matmul::runs_on(q.device(), q.dtype()) {
                packed_matmul::batched_matmul(&q, &k, Rhs::Transposed, scale as f32)?
            } else {
                (q * scale)?.matmul(&k.t()?)?
            }
        };
        let scores = match mask {
            Some(mask) => {
                let _s = profiler::op("mask");
                if scores.device().is_cpu() && scores.dtype() == DType::F32 {
                    // `scores` was just computed: nothing else holds it.
                    kernels::mask_fill_(&scores, mask, f32::MIN)?;
                    scores
                } else {
                    let blocked = Tensor::new(most_negative(scores.dtype()), scores.device())?.to_dtype(scores.dtype())?.broadcast_as(scores.shape())?;
                    mask.broadcast_as(scores.shape())?.where_cond(&blocked, &scores)?
                }
            }
            None => scores,
        };
        let probs = {
            // Max, subtract, exponential, sum, divide.
            let (flops, bytes) = work::elementwise(scores.elem_count(), 5, 1, 0, scores.dtype().size_in_bytes());
            let _s = profiler::op_shapes("softmax", &[scores.dims()]).with_work(flops, bytes);
            if scores.device().is_cpu() && scores.dtype() == DType::F32 {
                // `scores` was just computed: nothing else holds it.
                kernels::softmax_last_dim_(&scores)?;
                scores
            } else {
                candle_nn::ops::softmax_last_dim(&scores)?
            }
        };
        let y = {
            let (b, h, t, s) = probs.dims4()?;
            let (flops, bytes) = work::matmul(b * h, t, s, self.head_dim, probs.dtype().size_in_bytes());
            let _s = profiler::op_shapes("attn_v", &[probs.dims(), v.dims()]).with_work(flops, bytes);
            if packed_matmul::runs_on(probs.device(), probs.dtype()) {
                packed_matmul::batched_matmul(&probs, &v, Rhs::AsIs, 1.0)?
            } else {
                probs.matmul(&v)?
            }
        };
        let y = {
            let _s = profiler::op("merge_heads");
            y.transpose(1, 2)?.reshape((n, width))?
        };
        let out = self.c_proj.matmul(&y)?;
        self.c_proj.add_bias_and_residual(out, residual)
    }
}

/// FLOPs of one tanh-GELU value: x³, the polynomial, the tanh (counted as 4), the final
/// product; an estimate, as PyTorch's own counts for element-wise ops are.
const GELU_FLOPS: usize = 10;

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
        let fused_here = h.device().is_cpu() && self.activation == Activation::GeluTanh;
        let h = match act {
            MlpActivation::Fused if fused_here => {
                let (flops, bytes) = work::elementwise(h.elem_count(), GELU_FLOPS + 1, 1, h.dim(1)?, h.dtype().size_in_bytes());
                let _s = profiler::op_shapes("bias_gelu", &[h.dims()]).with_work(flops, bytes);
                crate::kernels::bias_gelu_(&h, self.c_fc.bias())?;
                h
            }
            MlpActivation::Stock | MlpActivation::Fused => {
                let h = self.c_fc.add_bias(h)?;
                let (flops, bytes) = work::elementwise(h.elem_count(), GELU_FLOPS, 1, 0, h.dtype().size_in_bytes());
                let _s = profiler::op_shapes("gelu", &[h.dims()]).with_work(flops, bytes);
                match self.activation {
                    Activation::GeluTanh => h.gelu()?,
                    Activation::GeluErf => h.gelu_erf()?,
                    Activation::Relu => h.relu()?,
                }
            }
            MlpActivation::Custom(op) => {
                let _s = profiler::op_shapes(op.name(), &[h.dims()]);
                op.forward(&h, self.c_fc.bias())?
            }
        };
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

/// The most negative finite value of `dtype`: masked scores are replaced by it (not set to
/// -inf) so that a row with nothing to attend to (a padding position) softmaxes to finite
/// values instead of NaN, which would leak into the padding's keys and values.
fn most_negative(dtype: DType) -> f32 {
    match dtype {
        DType::F16 => -65504.0,
        DType::BF16 => -3.38e38,
        _ => f32::MIN,
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
        let device = self.device();
        let past = cache.len;
        let x = {
            let _s = profiler::op_shapes("embedding", &[&[batch, seq]]);
            let flat: Vec<u32> = ids.iter().flatten().copied().collect();
            let positions = position_ids(&cache.pads, past, seq);
            let tok = self.wte.index_select(&Tensor::new(flat, device)?, 0)?;
            let pos = self.wpe.index_select(&Tensor::new(positions, device)?, 0)?;
            (tok + pos)?
        };
        let mask = {
            let _s = profiler::op("mask");
            attention_mask(&cache.pads, past, seq, device)?
        };
        let mut x = x;
        for (block, layer_cache) in self.blocks.iter().zip(cache.layers.iter_mut()) {
            x = block.forward(&x, batch, layer_cache, mask.as_ref(), &self.activation)?;
        }
        cache.len += seq;
        let x = match logits {
            Logits::AllPositions => x,
            Logits::LastPosition => {
                let _s = profiler::op("last_position");
                x.reshape((batch, seq, self.cfg.n_embd))?.i((.., seq - 1))?.contiguous()?
            }
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

/// `[batch, 1, seq, past + seq]`, true where query column `past + i` may not see key column
/// `j`: keys in its future or in its row's padding. `None` when nothing is masked (one new
/// column and no padding: the usual decode step), which skips the masking op entirely.
fn attention_mask(pads: &[usize], past: usize, seq: usize, device: &Device) -> Result<Option<Tensor>> {
    if seq == 1 && pads.iter().all(|&p| p == 0) {
        return Ok(None);
    }
    let total = past + seq;
    let mut mask = Vec::with_capacity(pads.len() * seq * total);
    for &pad in pads {
        for i in 0..seq {
            let query = past + i;
            mask.extend((0..total).map(|key| u8::from(key > query || key < pad)));
        }
    }
    Ok(Some(Tensor::from_vec(mask, (pads.len(), 1, seq, total), device)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_start_at_each_rows_first_token() {
        assert_eq!(position_ids(&[0, 2], 0, 4), vec![0, 1, 2, 3, 0, 0, 0, 1]);
        assert_eq!(position_ids(&[0, 2], 4, 1), vec![4, 2]);
    }

    #[test]
    fn mask_blocks_the_future_and_the_padding() {
        let m = attention_mask(&[1], 0, 3, &Device::Cpu).unwrap().unwrap();
        let m: Vec<Vec<u8>> = m.i((0, 0)).unwrap().to_vec2().unwrap();
        assert_eq!(m, vec![vec![1, 1, 1], vec![1, 0, 1], vec![1, 0, 0]]);
        assert!(attention_mask(&[0, 0], 5, 1, &Device::Cpu).unwrap().is_none());
    }
}
