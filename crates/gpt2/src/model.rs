//! GPT-2 (Radford et al., 2019), numerically the same model as Hugging Face's
//! `GPT2LMHeadModel`: token + position embeddings, pre-LayerNorm blocks of causal
//! self-attention and a GELU MLP, a final LayerNorm, and an output head tied to `wte`.
//!
//! Every step of the forward pass is one op of `engine::ops` (its own profiler row, with its
//! work count and the kernel that ran) or a module (`profiler::module` for `block`, `attn` and
//! `mlp`), so a profile accounts for all of it. Scopes cost a few nanoseconds when no profiler
//! is recording.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use crate::config::{Activation, Config};
use engine::cache::SeqCache;
use engine::cpu::KernelPath;
use engine::error::{Error, Result};
use engine::linear::{Linear, Projected};
use engine::ops;
pub use engine::ops::{BiasActivation, MlpActivation};
use engine::pass::{Group, Pass};
pub use engine::pass::{Logits, Segment};

struct LayerNorm {
    weight: Tensor,
    bias: Tensor,
    eps: f32,
    path: KernelPath,
}

impl LayerNorm {
    fn load(vb: VarBuilder, cfg: &Config, path: KernelPath) -> Result<Self> {
        let activations = path.activations(vb.device(), vb.dtype());
        Ok(Self {
            weight: vb.get(cfg.n_embd, "weight")?.to_dtype(activations)?,
            bias: vb.get(cfg.n_embd, "bias")?.to_dtype(activations)?,
            eps: cfg.layer_norm_epsilon as f32,
            path,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Tensor> {
        ops::layer_norm(x, &self.weight, &self.bias, self.eps, self.path)
    }
}

/// Where the dense layers come from when a checkpoint keeps them in a form `vb`'s tensors do
/// not: a GGUF's quantized matrices ([`crate::gguf`]), stored (out, in) and multiplied as stored.
pub trait Layers {
    /// The layer under `prefix` (`h.0.attn.c_attn`, a `Conv1D` from `in_dim` to `out_dim`) with
    /// its bias, for the kernel path `path`; `None` reads it from `vb`.
    fn linear(
        &self,
        prefix: &str,
        in_dim: usize,
        out_dim: usize,
        path: KernelPath,
    ) -> Result<Option<Linear>>;

    /// The output head (the token embeddings where tied), `None` from `vb`'s `wte`.
    fn head(&self, cfg: &Config, path: KernelPath) -> Result<Option<Linear>>;
}

/// What every module's `load` reads besides its own tensors.
struct Loader<'a> {
    cfg: &'a Config,
    path: KernelPath,
    layers: Option<&'a dyn Layers>,
}

impl Loader<'_> {
    /// The `Conv1D` under `vb` ((in, out) in a safetensors checkpoint), or `layers`' where it has it.
    fn linear(&self, vb: VarBuilder, in_dim: usize, out_dim: usize) -> Result<Linear> {
        if let Some(layers) = self.layers {
            if let Some(l) = layers.linear(&vb.prefix(), in_dim, out_dim, self.path)? {
                return Ok(l);
            }
        }
        Linear::load(vb, in_dim, out_dim, self.path)
    }
}

struct Attention {
    c_attn: Linear,
    c_proj: Linear,
    n_head: usize,
    head_dim: usize,
    /// Which layer's entry of each sequence's cache it reads and appends to.
    layer: usize,
    path: KernelPath,
}

impl Attention {
    fn load(vb: VarBuilder, ld: &Loader, layer: usize) -> Result<Self> {
        let (cfg, path) = (ld.cfg, ld.path);
        Ok(Self {
            c_attn: ld.linear(vb.pp("c_attn"), cfg.n_embd, 3 * cfg.n_embd)?,
            c_proj: ld.linear(vb.pp("c_proj"), cfg.n_embd, cfg.n_embd)?,
            n_head: cfg.n_head,
            head_dim: cfg.head_dim(),
            layer,
            path,
        })
    }

    /// Causal self-attention over `x`, the pass's new tokens (`[tokens, n_embd]`), each
    /// sequence against its own cache. The pass hands over its rows a group at a time: the
    /// decode steps together (one new query each, no mask: one kernel reads every cache in
    /// place), each prompt chunk on its own.
    fn forward(&self, x: &Tensor, pass: &mut Pass) -> Result<Projected<'_>> {
        let (module, p) = (profiler::module("attn"), self.path);
        let y = pass.attend(self.layer, &self.c_attn.forward(x)?, |qkv, group| {
            let (q, k, v) = ops::split_heads(
                qkv,
                group.sequences(),
                self.n_head,
                self.n_head,
                self.head_dim,
            )?;
            ops::merge_heads(&match group {
                Group::Decode(caches) => {
                    ops::attn_decode(&q, &ops::kv_cache_each(caches, &k, &v)?, p)?
                }
                Group::Chunk(cache, mask) => {
                    let (k, v) = ops::kv_cache(cache, &k, &v)?;
                    let att = ops::mask_apply(ops::attn_scores(&q, &k, p)?, mask, p)?; // q·kᵀ / √head_dim, causal
                    ops::attn_values(&ops::softmax(att, p)?, &v, p)?
                }
            })
        })?;
        self.c_proj.project(&y, module)
    }
}

struct Mlp {
    c_fc: Linear,
    c_proj: Linear,
    /// The checkpoint's activation function (`gelu_new`, …).
    activation: Activation,
    /// How its bias + activation run (the engine's fused kernel, candle's ops, or a caller's).
    how: MlpActivation,
    path: KernelPath,
}

impl Mlp {
    fn load(vb: VarBuilder, ld: &Loader) -> Result<Self> {
        let cfg = ld.cfg;
        Ok(Self {
            c_fc: ld.linear(vb.pp("c_fc"), cfg.n_embd, cfg.inner_dim())?,
            c_proj: ld.linear(vb.pp("c_proj"), cfg.inner_dim(), cfg.n_embd)?,
            activation: cfg.activation_function,
            how: MlpActivation::default(),
            path: ld.path,
        })
    }

    fn forward(&self, x: &Tensor) -> Result<Projected<'_>> {
        let module = profiler::module("mlp");
        let h = self.c_fc.matmul(x)?;
        // The bias is applied with the activation (fused on the CPU).
        let h = ops::bias_activation(h, self.c_fc.bias(), self.activation, &self.how, self.path)?;
        self.c_proj.project(&h, module)
    }
}

struct Block {
    ln_1: LayerNorm,
    attn: Attention,
    ln_2: LayerNorm,
    mlp: Mlp,
}

impl Block {
    fn load(vb: VarBuilder, ld: &Loader, layer: usize) -> Result<Self> {
        let (cfg, path) = (ld.cfg, ld.path);
        Ok(Self {
            ln_1: LayerNorm::load(vb.pp("ln_1"), cfg, path)?,
            attn: Attention::load(vb.pp("attn"), ld, layer)?,
            ln_2: LayerNorm::load(vb.pp("ln_2"), cfg, path)?,
            mlp: Mlp::load(vb.pp("mlp"), ld)?,
        })
    }

    /// Each output projection's bias is added together with its residual (`Projected`).
    fn forward(&self, x: &Tensor, pass: &mut Pass) -> Result<Tensor> {
        let _m = profiler::module("block");
        let x = (x + self.attn.forward(&self.ln_1.forward(x)?, pass)?)?;
        &x + self.mlp.forward(&self.ln_2.forward(&x)?)?
    }
}

/// GPT-2 with its language-model head.
pub struct Model {
    /// The embeddings, in the activations' type (a lookup reads a few rows).
    wte: Tensor,
    wpe: Tensor,
    blocks: Vec<Block>,
    ln_f: LayerNorm,
    lm_head: Linear,
    cfg: Config,
    path: KernelPath,
    /// The type the weights were loaded in (`--dtype`): the dense layers' and the head's.
    weights: DType,
}

impl Model {
    /// Builds the model from checkpoint tensors, its weights laid out for the CPU kernel path
    /// `path` (which it then runs every op on). `vb` is rooted where `wte`, `wpe`, `h.N` and
    /// `ln_f` live (the loader strips a `transformer.` prefix when there is one); its type is
    /// the weights' type, and [`KernelPath::activations`] gives the activations'.
    pub fn load(vb: VarBuilder, cfg: &Config, path: KernelPath) -> Result<Self> {
        Self::load_with(vb, cfg, path, None)
    }

    /// [`Model::load`] with the dense layers and the head from `layers` where it has them (a
    /// GGUF's quantized matrices), the rest (LayerNorms, embeddings) from `vb`.
    pub fn load_with(
        vb: VarBuilder,
        cfg: &Config,
        path: KernelPath,
        layers: Option<&dyn Layers>,
    ) -> Result<Self> {
        cfg.validate().map_err(Error::Input)?;
        let ld = Loader { cfg, path, layers };
        let activations = path.activations(vb.device(), vb.dtype());
        let wte = vb.get((cfg.vocab_size, cfg.n_embd), "wte.weight")?;
        let wpe = vb
            .get((cfg.n_positions, cfg.n_embd), "wpe.weight")?
            .to_dtype(activations)?;
        let blocks = (0..cfg.n_layer)
            .map(|i| Block::load(vb.pp(format!("h.{i}")), &ld, i))
            .collect::<Result<Vec<_>>>()?;
        let ln_f = LayerNorm::load(vb.pp("ln_f"), cfg, path)?;
        // The head is tied to the token embedding: the same (vocab, n_embd) matrix, in the weights'
        // type (a GGUF's as stored, from `layers`).
        let lm_head = match layers.map(|l| l.head(cfg, path)).transpose()?.flatten() {
            Some(head) => head,
            None => Linear::head(wte.clone(), path)?,
        };
        let wte = wte.to_dtype(activations)?;
        Ok(Self {
            wte,
            wpe,
            blocks,
            ln_f,
            lm_head,
            cfg: cfg.clone(),
            path,
            weights: vb.dtype(),
        })
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    pub fn device(&self) -> &Device {
        self.wte.device()
    }

    /// The type its weights are stored in (what `--dtype` asked for).
    pub fn dtype(&self) -> DType {
        self.weights
    }

    /// The type its activations, KV cache and element-wise ops run in: f32 on the CPU's packed
    /// paths whatever the weights' type, the weights' type elsewhere.
    pub fn activation_dtype(&self) -> DType {
        self.wte.dtype()
    }

    /// The CPU kernel path the model was built for.
    pub fn kernel_path(&self) -> KernelPath {
        self.path
    }

    /// Swaps the MLP's bias + activation: `Stock` for candle's separate ops, `Fused` (the
    /// default) for the engine's kernel, `Custom` for exercise 5's.
    pub fn set_mlp_activation(&mut self, activation: MlpActivation) {
        for block in &mut self.blocks {
            block.mlp.how = activation.clone();
        }
    }

    /// A cache for one sequence growing to `capacity` positions.
    pub fn new_cache(&self, capacity: usize) -> SeqCache {
        SeqCache::new(self.cfg.n_layer, capacity)
    }

    /// One forward pass over sequences of any lengths, each after what its own cache holds (a
    /// decode step's single tokens and prompt chunks together: continuous batching's pass).
    /// Appends every segment's keys and values to its cache and returns f32 logits for the
    /// positions each segment's `logits` asks for, in order: `[rows, vocab]` (no rows, and no
    /// output head, when none does).
    pub fn forward(&self, segments: &mut [Segment<'_>]) -> Result<Tensor> {
        engine::pass::check_input(segments, self.cfg.vocab_size, self.cfg.n_positions)?;
        let mut pass = Pass::new(segments, self.device())?;
        let mut x = ops::embedding(
            &self.wte,
            Some(&self.wpe),
            pass.ids(),
            pass.positions(),
            &pass.shape(),
        )?;
        for block in &self.blocks {
            x = block.forward(&x, &mut pass)?;
        }
        pass.logits(&x, self.cfg.vocab_size, |x| self.head(x))
    }

    /// The final LayerNorm and the tied output head: f32 logits for each row of `x`.
    fn head(&self, x: &Tensor) -> Result<Tensor> {
        let x = self.ln_f.forward(x)?;
        Ok(self.lm_head.matmul(&x)?.to_dtype(DType::F32)?)
    }
}

/// The tools' view of the model (`gpt2 profile`, `gpt2 bench`, exercise 3).
impl engine::CausalLm for Model {
    fn forward(&self, segments: &mut [Segment<'_>]) -> Result<Tensor> {
        Model::forward(self, segments)
    }
    fn new_cache(&self, capacity: usize) -> SeqCache {
        Model::new_cache(self, capacity)
    }
    fn device(&self) -> &Device {
        Model::device(self)
    }
    fn dtype(&self) -> DType {
        Model::dtype(self)
    }
    fn kernel_path(&self) -> KernelPath {
        self.path
    }
    fn vocab_size(&self) -> usize {
        self.cfg.vocab_size
    }
}
