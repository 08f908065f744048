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

use crate::cache::{Cache, SeqCache};
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

    /// `x` is `[tokens, n_embd]`: the new tokens of each sequence of `spans`, one sequence after
    /// another, each attending to its own `caches` entry (which gets its keys and values),
    /// with its causal mask from `masks` (none for a single new token).
    /// Returns `residual + attention(x)`: the output projection's bias and the residual add
    /// are applied together.
    ///
    /// Sequences with one new token (decode steps) are split into heads together and attended
    /// together by [`ops::attn_decode`]; every other sequence (a prompt or a chunk of one) takes
    /// the general path, causal-masked within its new tokens.
    fn forward(&self, x: &Tensor, residual: &Tensor, spans: &[Span], masks: &[Option<Tensor>], caches: &mut [&mut KvCache]) -> Result<Tensor> {
        let _m = profiler::module("attn");
        let qkv = self.c_attn.forward(x)?;
        let decoding: Vec<usize> = (0..spans.len()).filter(|&s| spans[s].new == 1).collect();
        let mut outputs: Vec<Option<Tensor>> = vec![None; spans.len()];
        if !decoding.is_empty() {
            // The decoding sequences' single rows are split into heads together.
            let part = if decoding.len() == spans.len() {
                qkv.clone()
            } else {
                let rows: Vec<u32> = decoding.iter().map(|&s| spans[s].start as u32).collect();
                qkv.index_select(&Tensor::new(rows, qkv.device())?, 0)?
            };
            let (q, k, v) = ops::split_heads(&part, decoding.len(), self.n_head, self.head_dim)?;
            let mut kv = Vec::with_capacity(decoding.len());
            for (i, &s) in decoding.iter().enumerate() {
                kv.push(ops::kv_cache(caches[s], &k.narrow(0, i, 1)?, &v.narrow(0, i, 1)?)?);
            }
            let y = ops::merge_heads(&ops::attn_decode(&q, &kv)?)?;
            for (i, &s) in decoding.iter().enumerate() {
                outputs[s] = Some(y.narrow(0, i, 1)?);
            }
        }
        for (s, span) in spans.iter().enumerate() {
            if outputs[s].is_some() {
                continue;
            }
            let (q, k, v) = ops::split_heads(&qkv.narrow(0, span.start, span.new)?, 1, self.n_head, self.head_dim)?;
            let (k, v) = ops::kv_cache(caches[s], &k, &v)?;
            let att = ops::attn_scores(&q, &k)?; // q·kᵀ / √head_dim
            let att = ops::mask_apply(att, masks[s].as_ref())?;
            let att = ops::softmax(att)?;
            outputs[s] = Some(ops::merge_heads(&ops::attn_values(&att, &v)?)?);
        }
        let outputs: Vec<Tensor> = outputs.into_iter().map(|y| y.expect("every sequence was attended")).collect();
        let y = if outputs.len() == 1 { outputs[0].clone() } else { Tensor::cat(&outputs, 0)? };
        let out = self.c_proj.matmul(&y)?;
        self.c_proj.add_bias_and_residual(out, residual)
    }
}

/// Where one sequence's new tokens sit in a forward pass: rows `start..start + new` of the
/// activations, after the `past` positions its cache holds.
#[derive(Debug, Clone, Copy)]
struct Span {
    start: usize,
    new: usize,
    past: usize,
}

struct Mlp {
    c_fc: Linear,
    c_proj: Linear,
    /// The checkpoint's activation function (`gelu_new`, …).
    activation: Activation,
    /// How its bias + activation run (the engine's fused kernel, candle's ops, or a caller's).
    how: MlpActivation,
}

impl Mlp {
    fn load(vb: VarBuilder, cfg: &Config) -> Result<Self> {
        Ok(Self {
            c_fc: Linear::load(vb.pp("c_fc"), cfg.n_embd, cfg.inner_dim())?,
            c_proj: Linear::load(vb.pp("c_proj"), cfg.inner_dim(), cfg.n_embd)?,
            activation: cfg.activation_function,
            how: MlpActivation::default(),
        })
    }

    /// Returns `residual + mlp(x)`.
    fn forward(&self, x: &Tensor, residual: &Tensor) -> Result<Tensor> {
        let _m = profiler::module("mlp");
        let h = self.c_fc.matmul(x)?;
        // The bias is applied with the activation (fused on the CPU).
        let h = ops::bias_activation(h, self.c_fc.bias(), self.activation, &self.how)?;
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

    fn forward(&self, x: &Tensor, spans: &[Span], masks: &[Option<Tensor>], caches: &mut [&mut KvCache]) -> Result<Tensor> {
        let _m = profiler::module("block");
        let x = self.attn.forward(&self.ln_1.forward(x)?, x, spans, masks, caches)?;
        self.mlp.forward(&self.ln_2.forward(&x)?, &x)
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
        Ok(Self { wte, wpe, blocks, ln_f, lm_head, cfg: cfg.clone() })
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
        for block in &mut self.blocks {
            block.mlp.how = activation.clone();
        }
    }

    /// A cache for `batch` rows, each growing to `capacity` positions.
    pub fn new_cache(&self, batch: usize, capacity: usize) -> Cache {
        Cache::new(&self.cfg, batch, capacity)
    }

    /// A cache for one sequence growing to `capacity` positions (a [`Segment`]'s).
    pub fn new_seq_cache(&self, capacity: usize) -> SeqCache {
        SeqCache::new(&self.cfg, capacity)
    }

    /// Runs `ids` (one row per sequence, all rows the same length) after whatever `cache`
    /// holds, appends their keys and values to it, and returns f32 logits shaped
    /// `[batch, seq, vocab]` (`AllPositions`) or `[batch, vocab]` (`LastPosition`).
    pub fn forward(&self, ids: &[Vec<u32>], cache: &mut Cache, logits: Logits) -> Result<Tensor> {
        let (batch, seq) = (ids.len(), ids.first().map_or(0, Vec::len));
        if let Some(r) = ids.iter().position(|row| row.len() != seq) {
            return Err(Error::Input(format!("row {r} has {} ids, row 0 has {seq}: rows of one batch must be the same length (pad them)", ids[r].len())));
        }
        if batch != cache.batch() {
            return Err(Error::Input(format!("the batch has {batch} rows but its cache was made for {}", cache.batch())));
        }
        let want = logits == Logits::LastPosition;
        let mut segments: Vec<Segment> = ids.iter().zip(cache.rows.iter_mut()).map(|(ids, cache)| Segment { ids, cache, logits: want }).collect();
        match logits {
            Logits::LastPosition => self.forward_segments(&mut segments),
            Logits::AllPositions => {
                let x = self.hidden(&mut segments)?;
                Ok(self.head(&x)?.reshape((batch, seq, self.cfg.vocab_size))?)
            }
        }
    }

    /// One forward pass over sequences of any lengths, each after what its own cache holds (a
    /// decode step's single tokens and prompt chunks together: continuous batching's pass).
    /// Appends every segment's keys and values to its cache and returns f32 logits for the last
    /// position of each segment whose `logits` is set, in order: `[those segments, vocab]`
    /// (no rows, and no output head, when none is).
    pub fn forward_segments(&self, segments: &mut [Segment<'_>]) -> Result<Tensor> {
        let x = self.hidden(segments)?;
        let mut last = Vec::new();
        let mut end = 0;
        for s in segments.iter() {
            end += s.ids.len();
            if s.logits {
                last.push(end - 1);
            }
        }
        if last.is_empty() {
            return Ok(Tensor::zeros((0, self.cfg.vocab_size), DType::F32, self.device())?);
        }
        self.head(&ops::last_position(&x, &last)?)
    }

    /// The blocks over every segment's new tokens: the last block's output, `[tokens, n_embd]`.
    fn hidden(&self, segments: &mut [Segment<'_>]) -> Result<Tensor> {
        self.check_input(segments)?;
        let mut spans = Vec::with_capacity(segments.len());
        let (mut ids, mut positions) = (Vec::new(), Vec::new());
        for s in segments.iter() {
            let past = s.cache.len;
            spans.push(Span { start: ids.len(), new: s.ids.len(), past });
            ids.extend_from_slice(s.ids);
            positions.extend((past..past + s.ids.len()).map(|p| p as u32));
        }
        let seq = segments[0].ids.len();
        let shape: Vec<usize> = if segments.iter().all(|s| s.ids.len() == seq) { vec![segments.len(), seq] } else { vec![ids.len()] };
        let mut x = ops::embedding(&self.wte, &self.wpe, ids, positions, &shape)?;
        // Each sequence's mask, built once for every layer.
        let masks = spans.iter().map(|s| ops::mask_build(s.past, s.new, self.device())).collect::<Result<Vec<_>>>()?;
        for (l, block) in self.blocks.iter().enumerate() {
            let mut caches: Vec<&mut KvCache> = segments.iter_mut().map(|s| &mut s.cache.layers[l]).collect();
            x = block.forward(&x, &spans, &masks, &mut caches)?;
        }
        for s in segments.iter_mut() {
            s.cache.len += s.ids.len();
        }
        Ok(x)
    }

    /// The final LayerNorm and the tied output head: f32 logits for each row of `x`.
    fn head(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.ln_f.forward(x)?;
        Ok(self.lm_head.matmul(&x)?.to_dtype(DType::F32)?)
    }

    /// Rejects what would otherwise fail deep inside a kernel: no tokens, ids outside the
    /// vocabulary, sequences past the context window.
    fn check_input(&self, segments: &[Segment<'_>]) -> Result<()> {
        if segments.is_empty() || segments.iter().any(|s| s.ids.is_empty()) {
            return Err(Error::Input("empty input: give at least one token id in at least one row".into()));
        }
        let vocab = self.cfg.vocab_size;
        for (r, s) in segments.iter().enumerate() {
            if let Some((c, id)) = s.ids.iter().enumerate().find(|(_, id)| **id as usize >= vocab) {
                return Err(Error::Input(format!("token id {id} (row {r}, position {c}) is out of range: the vocabulary has {vocab} ids (0..={})", vocab - 1)));
            }
            let end = s.cache.len + s.ids.len();
            if end > self.cfg.n_positions {
                return Err(Error::Input(format!(
                    "sequence of {end} positions ({} cached + {} new) is longer than the model's context of {} (n_positions)",
                    s.cache.len,
                    s.ids.len(),
                    self.cfg.n_positions
                )));
            }
        }
        Ok(())
    }
}

/// One sequence's share of a [`Model::forward_segments`] pass: `ids` continue what `cache`
/// holds; `logits` asks for its last position's logits (a prompt chunk that does not end the
/// prompt needs none).
pub struct Segment<'a> {
    pub ids: &'a [u32],
    pub cache: &'a mut SeqCache,
    pub logits: bool,
}
