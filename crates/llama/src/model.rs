//! The Llama decoder (Touvron et al., 2023) and its close relatives, numerically the same model
//! as Hugging Face's `LlamaForCausalLM`, `MistralForCausalLM`, `Qwen2ForCausalLM` and
//! `Qwen3ForCausalLM`: token embeddings, pre-RMSNorm blocks of rotary grouped-query attention
//! and a SiLU-gated MLP, a final RMSNorm, and an output head (tied to the embeddings or not).
//!
//! Every step is one op of `engine::ops` (its own profiler row, with its work count and the
//! kernel that ran) or a module (`block`, `attn`, `mlp`), as in GPT-2's `model.rs`. Two products
//! are fused at load, as GPT-2's checkpoint already stores them: the query, key and value
//! projections into one `qkv` matrix, the gate and up projections into one `gate_up` matrix.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use engine::cpu::KernelPath;
use engine::linear::Linear;
use engine::ops;
use engine::pass::{Group, Pass};
use engine::{CausalLm, Result, Segment, SeqCache};

use crate::config::Config;
use crate::rope::Tables;

struct RmsNorm {
    weight: Tensor,
    eps: f32,
    path: KernelPath,
}

impl RmsNorm {
    fn load(vb: VarBuilder, width: usize, eps: f64, path: KernelPath) -> Result<Self> {
        let activations = path.activations(vb.device(), vb.dtype());
        Ok(Self {
            weight: vb.get(width, "weight")?.to_dtype(activations)?,
            eps: eps as f32,
            path,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::rms_norm(x, &self.weight, self.eps, self.path)
    }
}

/// One dense layer made of the `nn.Linear`s `names` (each with its number of outputs) under
/// `prefix`, all reading `in_dim` inputs: their outputs side by side, with `bias` added.
pub struct Fused<'a> {
    pub prefix: &'a str,
    pub names: &'a [(&'a str, usize)],
    pub in_dim: usize,
    pub bias: Option<Tensor>,
}

/// Where the dense layers come from when a checkpoint keeps them in a form `vb`'s tensors do not
/// (a GGUF's quantized matrices, [`crate::gguf`]): the layer `fused` for the kernel path `path`;
/// `None` reads it from `vb`.
pub trait Layers {
    fn linear(&self, fused: Fused, path: KernelPath) -> Result<Option<Linear>>;

    /// The output head (`lm_head`, or the token embeddings where tied), `None` from `vb`.
    fn head(&self, cfg: &Config, path: KernelPath) -> Result<Option<Linear>>;
}

/// What every module's `load` reads besides its own tensors: the model's config, the kernel path
/// its weights are laid out for, and where its dense layers come from.
struct Loader<'a> {
    cfg: &'a Config,
    path: KernelPath,
    layers: Option<&'a dyn Layers>,
}

impl Loader<'_> {
    /// `names` (each an `nn.Linear` under `vb`, with its outputs) as one dense layer of `in_dim`
    /// inputs, their outputs side by side.
    fn fused(
        &self,
        vb: &VarBuilder,
        names: &[(&str, usize)],
        in_dim: usize,
        bias: bool,
    ) -> Result<Linear> {
        let bias = match bias {
            true => Some(Tensor::cat(
                &names
                    .iter()
                    .map(|(n, out)| vb.get(*out, &format!("{n}.bias")))
                    .collect::<candle_core::Result<Vec<_>>>()?,
                0,
            )?),
            false => None,
        };
        if let Some(layers) = self.layers {
            let prefix = vb.prefix();
            let fused = Fused {
                prefix: &prefix,
                names,
                in_dim,
                bias: bias.clone(),
            };
            if let Some(l) = layers.linear(fused, self.path)? {
                return Ok(l);
            }
        }
        let weights = names
            .iter()
            .map(|(n, out)| vb.get((*out, in_dim), &format!("{n}.weight")))
            .collect::<candle_core::Result<Vec<_>>>()?;
        Linear::from_out_in(Tensor::cat(&weights, 0)?, bias, self.path)
    }
}

struct Attention {
    qkv: Linear,
    o_proj: Linear,
    /// Qwen3's per-head norms of the queries and the keys.
    qk_norm: Option<(RmsNorm, RmsNorm)>,
    n_head: usize,
    kv_heads: usize,
    head_dim: usize,
    /// Which layer's entry of each sequence's cache it reads and appends to.
    layer: usize,
    path: KernelPath,
}

impl Attention {
    fn load(vb: VarBuilder, loader: &Loader, layer: usize) -> Result<Self> {
        let (cfg, path) = (loader.cfg, loader.path);
        let (h, d, kv) = (
            cfg.num_attention_heads,
            cfg.head_dim,
            cfg.num_key_value_heads,
        );
        let qkv = loader.fused(
            &vb,
            &[("q_proj", h * d), ("k_proj", kv * d), ("v_proj", kv * d)],
            cfg.hidden_size,
            cfg.qkv_bias,
        )?;
        let o_proj = loader.fused(&vb, &[("o_proj", cfg.hidden_size)], h * d, false)?;
        let qk_norm = match cfg.qk_norm {
            true => Some((
                RmsNorm::load(vb.pp("q_norm"), d, cfg.rms_norm_eps, path)?,
                RmsNorm::load(vb.pp("k_norm"), d, cfg.rms_norm_eps, path)?,
            )),
            false => None,
        };
        Ok(Self {
            qkv,
            o_proj,
            qk_norm,
            n_head: h,
            kv_heads: kv,
            head_dim: d,
            layer,
            path,
        })
    }

    /// Causal self-attention over `x`, the pass's new tokens, each sequence against its own
    /// cache: the pass hands over the decode steps' rows together and each prompt chunk's alone.
    fn forward(&self, x: &Tensor, rope: &Tables, pass: &mut Pass) -> Result<Tensor> {
        let (_m, p) = (profiler::module("attn"), self.path);
        let y = pass.attend(self.layer, &self.qkv.forward(x)?, |qkv, group| {
            let (q, k, v) = ops::split_heads(
                qkv,
                group.sequences(),
                self.n_head,
                self.kv_heads,
                self.head_dim,
            )?;
            let (q, k) = match &self.qk_norm {
                Some((q_norm, k_norm)) => (q_norm.forward(&q)?, k_norm.forward(&k)?),
                None => (q, k),
            };
            let positions = positions(&group, q.dim(2)?);
            let (q, k) = (
                ops::rope(&q, &rope.cos, &rope.sin, &positions)?,
                ops::rope(&k, &rope.cos, &rope.sin, &positions)?,
            );
            ops::merge_heads(&match group {
                Group::Decode(caches) => {
                    ops::attn_decode(&q, &ops::kv_cache_each(caches, &k, &v)?, p)?
                }
                Group::Chunk(cache, mask) => {
                    let (k, v) = ops::kv_cache(cache, &k, &v)?;
                    let n_rep = self.n_head / self.kv_heads;
                    let (k, v) = (ops::repeat_kv(k, n_rep)?, ops::repeat_kv(v, n_rep)?);
                    let att = ops::mask_apply(ops::attn_scores(&q, &k, p)?, mask, p)?;
                    ops::attn_values(&ops::softmax(att, p)?, &v, p)?
                }
            })
        })?;
        self.o_proj.matmul(&y)
    }
}

/// The position of each of a group's new rows in its own sequence (`seq` rows a sequence):
/// what its cache held before them.
fn positions(group: &Group, seq: usize) -> Vec<u32> {
    match group {
        Group::Decode(caches) => caches.iter().map(|c| c.current_seq_len() as u32).collect(),
        Group::Chunk(cache, _) => (cache.current_seq_len()..cache.current_seq_len() + seq)
            .map(|p| p as u32)
            .collect(),
    }
}

struct Mlp {
    gate_up: Linear,
    down: Linear,
    path: KernelPath,
}

impl Mlp {
    fn load(vb: VarBuilder, loader: &Loader) -> Result<Self> {
        let (inner, hidden) = (loader.cfg.intermediate_size, loader.cfg.hidden_size);
        let gate_up = [("gate_proj", inner), ("up_proj", inner)];
        Ok(Self {
            gate_up: loader.fused(&vb, &gate_up, hidden, false)?,
            down: loader.fused(&vb, &[("down_proj", hidden)], inner, false)?,
            path: loader.path,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        let _m = profiler::module("mlp");
        self.down
            .matmul(&ops::silu_mul(&self.gate_up.matmul(x)?, self.path)?)
    }
}

struct Block {
    input_layernorm: RmsNorm,
    attn: Attention,
    post_attention_layernorm: RmsNorm,
    mlp: Mlp,
    path: KernelPath,
}

impl Block {
    fn load(vb: VarBuilder, loader: &Loader, layer: usize) -> Result<Self> {
        let (cfg, path) = (loader.cfg, loader.path);
        let norm = |name: &str| RmsNorm::load(vb.pp(name), cfg.hidden_size, cfg.rms_norm_eps, path);
        Ok(Self {
            input_layernorm: norm("input_layernorm")?,
            attn: Attention::load(vb.pp("self_attn"), loader, layer)?,
            post_attention_layernorm: norm("post_attention_layernorm")?,
            mlp: Mlp::load(vb.pp("mlp"), loader)?,
            path,
        })
    }

    fn forward(&self, x: &Tensor, rope: &Tables, pass: &mut Pass) -> Result<Tensor> {
        let _m = profiler::module("block");
        let x = ops::residual_add(
            self.attn
                .forward(&self.input_layernorm.forward(x)?, rope, pass)?,
            x,
            self.path,
        )?;
        ops::residual_add(
            self.mlp
                .forward(&self.post_attention_layernorm.forward(&x)?)?,
            &x,
            self.path,
        )
    }
}

/// A Llama-family decoder with its language-model head.
pub struct Model {
    /// The token embeddings, in the activations' type (a lookup reads a few rows).
    embed_tokens: Tensor,
    blocks: Vec<Block>,
    norm: RmsNorm,
    lm_head: Linear,
    rope: Tables,
    cfg: Config,
    path: KernelPath,
    /// The type the weights were loaded in: the dense layers' and the head's.
    weights: DType,
}

impl Model {
    /// Builds the model from checkpoint tensors (`vb` rooted where `model.` and `lm_head` live),
    /// its weights laid out for the CPU kernel path `path`, which it then runs every op on.
    /// `vb`'s type is the weights' type; [`KernelPath::activations`] gives the activations'.
    pub fn load(vb: VarBuilder, cfg: &Config, path: KernelPath) -> Result<Self> {
        Self::load_with(vb, cfg, path, None)
    }

    /// [`Model::load`] with the dense layers and the head from `layers` where it has them (a
    /// GGUF's quantized matrices), the rest (norms, embeddings, biases) from `vb`.
    pub fn load_with(
        vb: VarBuilder,
        cfg: &Config,
        path: KernelPath,
        layers: Option<&dyn Layers>,
    ) -> Result<Self> {
        let activations = path.activations(vb.device(), vb.dtype());
        let (h, vocab) = (cfg.hidden_size, cfg.vocab_size);
        let embed = vb.get((vocab, h), "model.embed_tokens.weight")?;
        let loader = Loader { cfg, path, layers };
        let blocks = (0..cfg.num_hidden_layers)
            .map(|i| Block::load(vb.pp(format!("model.layers.{i}")), &loader, i))
            .collect::<Result<Vec<_>>>()?;
        let norm = RmsNorm::load(vb.pp("model.norm"), h, cfg.rms_norm_eps, path)?;
        let lm_head = match layers.map(|l| l.head(cfg, path)).transpose()?.flatten() {
            Some(head) => head,
            None => Linear::head(
                match cfg.tie_word_embeddings {
                    true => embed.clone(),
                    false => vb.get((vocab, h), "lm_head.weight")?,
                },
                path,
            )?,
        };
        let rope = Tables::new(cfg, activations, vb.device())?;
        Ok(Self {
            embed_tokens: embed.to_dtype(activations)?,
            blocks,
            norm,
            lm_head,
            rope,
            cfg: cfg.clone(),
            path,
            weights: vb.dtype(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// One forward pass over `segments` (see [`CausalLm::forward`]).
    fn forward_pass(&self, segments: &mut [Segment<'_>]) -> Result<Tensor> {
        engine::pass::check_input(segments, self.cfg.vocab_size, self.cfg.max_positions)?;
        let mut pass = Pass::new(segments, self.device())?;
        let mut x = ops::embedding(
            &self.embed_tokens,
            None,
            pass.ids(),
            pass.positions(),
            &pass.shape(),
        )?;
        for block in &self.blocks {
            x = block.forward(&x, &self.rope, &mut pass)?;
        }
        pass.logits(&x, self.cfg.vocab_size, |x| self.head(x))
    }

    /// The final RMSNorm and the output head: f32 logits for each row of `x`.
    fn head(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.norm.forward(x)?;
        Ok(self.lm_head.matmul(&x)?.to_dtype(DType::F32)?)
    }
}

/// The tools' view of the model (the profile, the benchmark cases, exercise 8).
impl CausalLm for Model {
    /// On the CPU the pool's other threads spin for work through the pass
    /// ([`engine::cpu::awake::awake_through`]): a worker parked between two products comes
    /// back too late for the second.
    fn forward(&self, segments: &mut [Segment<'_>]) -> Result<Tensor> {
        match self.device().is_cpu() {
            true => engine::cpu::awake::awake_through(|| self.forward_pass(segments)),
            false => self.forward_pass(segments),
        }
    }
    fn new_cache(&self, capacity: usize) -> SeqCache {
        SeqCache::new(self.cfg.num_hidden_layers, capacity)
    }
    fn device(&self) -> &Device {
        self.embed_tokens.device()
    }
    fn dtype(&self) -> DType {
        self.weights
    }
    fn kernel_path(&self) -> KernelPath {
        self.path
    }
    fn vocab_size(&self) -> usize {
        self.cfg.vocab_size
    }
}
