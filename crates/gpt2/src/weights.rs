//! Where a checkpoint comes from: the Hugging Face hub, a local directory, a synthetic
//! checkpoint with GPT-2 small's exact shapes and seeded random weights, or a GGUF file.
//!
//! The first three end as a directory holding `config.json` + `model.safetensors` (+ an optional
//! `tokenizer.json`); a GGUF file (`--model FILE.gguf`, told apart by the engine loader's rule,
//! [`engine::loader::Source::parse_path_or_repo`], as the Llama family's are) carries its
//! config, weights and tokenizer in one file, read by [`crate::gguf`]. Finding and fetching them is the engine's one loader
//! ([`engine::loader`]), which the Llama family uses too: when the hub cannot be reached and
//! nothing is cached, it says so in one line and the synthetic checkpoint stands in: every
//! timing stays real, generated text does not.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use rand::{Rng, SeedableRng};

use crate::config::Config;
use crate::model::{Layers, Model};
use crate::tokenizer::{self, Tokenizer};
use engine::cpu::KernelPath;
pub use engine::device_flags::WeightType;
use engine::error::{Error, Result};
use engine::gguf::GgmlType;
use engine::linear::Linear;
use engine::ops::list;
use engine::quant::QMatrix;

/// The hub repository of GPT-2 small, and the commit this project was checked against.
pub const HUB_REPO: &str = "openai-community/gpt2";
pub const HUB_REVISION: &str = "607a30d783dfa663caf39e06633721c8d4cfcd7e";

/// Seed of the synthetic checkpoint: the same weights on every machine.
const SYNTHETIC_SEED: u64 = 2019;
/// Bump when the synthetic checkpoint's contents change, so stale caches are not reused.
const SYNTHETIC_VERSION: u32 = 1;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WeightSource {
    Hub {
        repo: String,
        revision: String,
    },
    Dir(PathBuf),
    /// Seeded random weights with the shapes of `config` (GPT-2 small unless a test says
    /// otherwise), written once under the cache directory.
    Synthetic {
        small: bool,
    },
    /// A GGUF file of architecture `gpt2`, its matrices kept in their stored types.
    Gguf(PathBuf),
}

impl WeightSource {
    /// Reads `--model`: `gpt2` (the hub checkpoint), `synthetic`, `synthetic-tiny`, a
    /// directory, or a `.gguf` file.
    pub fn parse(arg: &str) -> Result<Self> {
        if let Some(engine::loader::Source::Gguf(path)) =
            engine::loader::Source::parse_path_or_repo(arg)
        {
            return match path.is_file() {
                true => Ok(Self::Gguf(path)),
                false => Err(Error::Input(format!("--model {arg}: no such file"))),
            };
        }
        match arg {
            "gpt2" | HUB_REPO => Ok(Self::Hub {
                repo: HUB_REPO.into(),
                revision: HUB_REVISION.into(),
            }),
            "synthetic" => Ok(Self::Synthetic { small: true }),
            "synthetic-tiny" => Ok(Self::Synthetic { small: false }),
            path => {
                let dir = PathBuf::from(path);
                if dir.is_dir() {
                    Ok(Self::Dir(dir))
                } else {
                    Err(Error::Input(format!(
                        "--model {path}: no such directory; give `gpt2`, `synthetic`, a directory holding config.json and model.safetensors, or a GGUF file"
                    )))
                }
            }
        }
    }
}

/// A checkpoint on disk, ready for [`load`].
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The checkpoint's folder (a GGUF file's: the folder it is in).
    pub dir: PathBuf,
    /// True when the weights are the synthetic ones (real timings, meaningless text).
    pub synthetic: bool,
    /// The GGUF file that holds the whole checkpoint, when it is one.
    pub gguf: Option<PathBuf>,
}

impl Checkpoint {
    /// A checkpoint folder (`config.json`, `model.safetensors`, maybe `tokenizer.json`).
    pub fn folder(dir: PathBuf, synthetic: bool) -> Self {
        Self {
            dir,
            synthetic,
            gguf: None,
        }
    }

    /// What the checkpoint is read from, for messages: the GGUF file, else the folder.
    pub fn path(&self) -> &Path {
        self.gguf.as_deref().unwrap_or(&self.dir)
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.join("config.json")
    }
    pub fn weights_path(&self) -> PathBuf {
        self.dir.join("model.safetensors")
    }
    pub fn tokenizer_path(&self) -> PathBuf {
        self.dir.join("tokenizer.json")
    }
}

/// Finds or fetches the checkpoint of `source` with the engine's loader
/// ([`engine::loader::resolve_hub`]). `notice` receives the one-line message printed when the
/// hub is out of reach and the synthetic checkpoint stands in.
pub fn resolve(source: &WeightSource, notice: &mut dyn FnMut(&str)) -> Result<Checkpoint> {
    match source {
        WeightSource::Dir(dir) => Ok(Checkpoint::folder(dir.clone(), false)),
        WeightSource::Gguf(file) => Ok(Checkpoint {
            dir: file
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| PathBuf::from(".")),
            synthetic: false,
            gguf: Some(file.clone()),
        }),
        WeightSource::Synthetic { small } => synthetic(if *small {
            Config::gpt2_small()
        } else {
            Config::tiny()
        }),
        WeightSource::Hub { repo, revision } => {
            let stand_in = || {
                synthetic(Config::gpt2_small()).map(|c| engine::loader::Checkpoint {
                    dir: c.dir,
                    name: "synthetic".into(),
                    synthetic: true,
                })
            };
            let family = engine::loader::Family {
                default_repo: HUB_REPO,
                stand_in: "the synthetic GPT-2 small (its shapes, seeded random weights)",
                synthetic: &stand_in,
                check_config: &|_| Ok(()),
            };
            let ckpt = engine::loader::resolve_hub(repo, Some(revision), &family, notice)?;
            Ok(Checkpoint::folder(ckpt.dir, ckpt.synthetic))
        }
    }
}

pub use engine::cache_dir;

/// The synthetic checkpoint of `cfg`, written on first use.
fn synthetic(cfg: Config) -> Result<Checkpoint> {
    let name = format!(
        "synthetic-v{SYNTHETIC_VERSION}-l{}-e{}-v{}",
        cfg.n_layer, cfg.n_embd, cfg.vocab_size
    );
    let dir = engine::loader::synthetic_dir(&name, |tmp| fill_synthetic(tmp, &cfg))?;
    Ok(Checkpoint::folder(dir, true))
}

/// Writes a complete checkpoint directory (config.json, model.safetensors, tokenizer.json)
/// for `cfg` with seeded random weights, in one step (`output::write_dir`).
pub fn write_synthetic(dir: &Path, cfg: &Config) -> Result<()> {
    Ok(output::write_dir(dir, |tmp| fill_synthetic(tmp, cfg))?)
}

/// The synthetic checkpoint's files, written into the empty folder `tmp`.
fn fill_synthetic(tmp: &Path, cfg: &Config) -> Result<()> {
    let config_path = tmp.join("config.json");
    let json = serde_json::to_string_pretty(cfg).map_err(|e| Error::Input(e.to_string()))?;
    std::fs::write(&config_path, json).map_err(|e| Error::io(&config_path, e))?;
    let weights_path = tmp.join("model.safetensors");
    candle_core::safetensors::save(&random_weights(cfg)?, &weights_path).map_err(|e| {
        Error::Weights {
            path: weights_path.clone(),
            message: e.to_string(),
        }
    })?;
    tokenizer::write_synthetic(&tmp.join("tokenizer.json"), cfg.vocab_size, SYNTHETIC_SEED)
}

/// GPT-2's initialisation, seeded: weights uniform with standard deviation 0.02 (the
/// checkpoint's scale), LayerNorm gains 1 and biases 0; Conv1D weights stored (in, out).
fn random_weights(cfg: &Config) -> Result<HashMap<String, Tensor>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(SYNTHETIC_SEED);
    let half_width = 0.02 * 3f32.sqrt();
    let mut random = |dims: &[usize]| -> Result<Tensor> {
        let n: usize = dims.iter().product();
        let data: Vec<f32> = (0..n)
            .map(|_| rng.random_range(-half_width..half_width))
            .collect();
        Ok(Tensor::from_vec(data, dims, &Device::Cpu)?)
    };
    let (e, inner) = (cfg.n_embd, cfg.inner_dim());
    let mut w = HashMap::new();
    w.insert("wte.weight".to_string(), random(&[cfg.vocab_size, e])?);
    w.insert("wpe.weight".to_string(), random(&[cfg.n_positions, e])?);
    let ones = |n: usize| Tensor::ones(n, DType::F32, &Device::Cpu);
    let zeros = |n: usize| Tensor::zeros(n, DType::F32, &Device::Cpu);
    for i in 0..cfg.n_layer {
        let p = |s: &str| format!("h.{i}.{s}");
        for ln in ["ln_1", "ln_2"] {
            w.insert(p(&format!("{ln}.weight")), ones(e)?);
            w.insert(p(&format!("{ln}.bias")), zeros(e)?);
        }
        for (name, (din, dout)) in [
            ("attn.c_attn", (e, 3 * e)),
            ("attn.c_proj", (e, e)),
            ("mlp.c_fc", (e, inner)),
            ("mlp.c_proj", (inner, e)),
        ] {
            w.insert(p(&format!("{name}.weight")), random(&[din, dout])?);
            w.insert(p(&format!("{name}.bias")), zeros(dout)?);
        }
    }
    w.insert("ln_f.weight".into(), ones(e)?);
    w.insert("ln_f.bias".into(), zeros(e)?);
    Ok(w)
}

/// A model with `cfg`'s shapes and the synthetic checkpoint's seeded weights, built in
/// memory without touching the disk (tests, benchmarks, servers under test).
pub fn synthetic_model(
    cfg: &Config,
    device: &Device,
    dtype: DType,
    kernels: KernelPath,
) -> Result<Model> {
    engine::device_flags::check_dtype(dtype)?;
    let vb = VarBuilder::from_tensors(random_weights(cfg)?, dtype, device);
    Model::load(vb, cfg, kernels)
}

/// Reads the checkpoint's config and weights onto `device` as `dtype`, laid out for the CPU
/// kernel path `kernels`. Every failure names the file it came from. `dtype` is a candle type
/// (`DType::BF16`) or `--dtype`'s [`WeightType`]: `q8_0` and `q4_0` quantize the dense layers'
/// and the head's matrices at load ([`QuantizeAtLoad`]). A GGUF file's matrices keep their
/// stored types whatever `dtype` says ([`crate::gguf::load_quantized`]), as the Llama family's
/// do.
pub fn load(
    ckpt: &Checkpoint,
    device: &Device,
    dtype: impl Into<WeightType>,
    kernels: KernelPath,
) -> Result<Model> {
    let weights = dtype.into();
    let dtype = weights.dense();
    engine::device_flags::check_dtype(dtype)?;
    if let Some(file) = &ckpt.gguf {
        return crate::gguf::load_quantized(file, device, kernels);
    }
    let config_path = ckpt.config_path();
    if !config_path.is_file() {
        return Err(Error::Weights {
            path: config_path,
            message: "missing: a checkpoint directory needs config.json".into(),
        });
    }
    let cfg = Config::from_file(&config_path)?;
    let weights_path = ckpt.weights_path();
    if !weights_path.is_file() {
        return Err(Error::Weights {
            path: weights_path,
            message: "missing: a checkpoint directory needs model.safetensors (pytorch_model.bin is not read; save with safe_serialization=True)".into(),
        });
    }
    let bad = |e: candle_core::Error| Error::Weights {
        path: weights_path.clone(),
        message: engine::error::weights_message(&e, "GPT-2"),
    };
    // SAFETY: the file is mapped read-only; like every safetensors loader we assume no one
    // truncates it while the model is being built (the tensors are copied out of the map).
    let root = unsafe { VarBuilder::from_mmaped_safetensors(&[&weights_path], dtype, device) }
        .map_err(bad)?;
    let vb = if root.contains_tensor("transformer.wte.weight") {
        root.pp("transformer")
    } else {
        root.clone()
    };
    let model = match weights.quantized() {
        None => Model::load(vb, &cfg, kernels),
        Some(ty) => {
            let layers = QuantizeAtLoad {
                root,
                top: vb.clone(),
                ty,
            };
            Model::load_with(vb, &cfg, kernels, Some(&layers))
        }
    };
    model.map_err(|e| match e {
        Error::Candle(e) => bad(e),
        Error::Input(message) => Error::Weights {
            path: weights_path.clone(),
            message,
        },
        other => other,
    })
}

/// `--dtype q8_0` / `q4_0` on a dense checkpoint: each `Conv1D` weight (stored (in, out)) and the
/// tied head (`wte`, (vocab, n_embd)) read in f32, laid out (out, in) as llama.cpp stores them,
/// quantized into its blocks ([`engine::quant::quantize`], the bytes `llama-quantize` writes)
/// and kept as a [`QMatrix`], multiplied by the quantized kernels in the same rows a GGUF
/// file's are. LayerNorms, biases and the embeddings' lookup stay f32, as in a GGUF file.
struct QuantizeAtLoad {
    /// The safetensors file's root: a layer's prefix is the full name (`transformer.h.0.attn.c_attn`).
    root: VarBuilder<'static>,
    /// Where `wte` lives.
    top: VarBuilder<'static>,
    ty: GgmlType,
}

impl QuantizeAtLoad {
    /// `w` ((out, in), f32) as a quantized matrix; an error names `name` and the rows' width
    /// where they are not whole blocks.
    fn matrix(&self, name: &str, w: &Tensor, path: KernelPath) -> Result<QMatrix> {
        let (out, in_dim) = w.dims2()?;
        let values: Vec<f32> = w
            .to_device(&Device::Cpu)?
            .to_dtype(DType::F32)?
            .flatten_all()?
            .to_vec1()?;
        let bytes = engine::quant::quantize(self.ty, &values).map_err(|e| {
            Error::Input(format!(
                "{name} ({out}×{in_dim}) cannot be quantized to {}: {e}; use --dtype f32, f16 or bf16 for this model",
                self.ty
            ))
        })?;
        QMatrix::new(self.ty, out, in_dim, bytes, path, self.top.device())
    }
}

impl Layers for QuantizeAtLoad {
    fn linear(
        &self,
        prefix: &str,
        in_dim: usize,
        out_dim: usize,
        path: KernelPath,
    ) -> Result<Option<Linear>> {
        let vb = self.root.pp(prefix);
        // The checkpoint's Conv1D is (in, out); the blocks run along a row of (out, in).
        let w = vb.get((in_dim, out_dim), "weight")?.t()?.contiguous()?;
        let q = self.matrix(&format!("{prefix}.weight"), &w, path)?;
        let bias = vb.get(out_dim, "bias")?;
        Ok(Some(Linear::quantized(q, Some(bias), list::MATMUL, path)))
    }

    fn head(&self, cfg: &Config, path: KernelPath) -> Result<Option<Linear>> {
        let w = self.top.get((cfg.vocab_size, cfg.n_embd), "wte.weight")?;
        let q = self.matrix("wte.weight (the tied head)", &w, path)?;
        Ok(Some(Linear::quantized(q, None, list::LM_HEAD, path)))
    }
}

/// The tokenizer of a checkpoint, when it has one (`save_pretrained` directories of a bare
/// model do not): its folder's `tokenizer.json`, or a GGUF file's `tokenizer.ggml.*` metadata.
pub fn load_tokenizer(ckpt: &Checkpoint) -> Result<Option<Tokenizer>> {
    match &ckpt.gguf {
        Some(file) => engine::gguf::tokenizer::tokenizer(&engine::gguf::GgufFile::open(file)?),
        None => Tokenizer::from_dir(&ckpt.dir),
    }
}

/// The chat template of a checkpoint, when it has one: its folder's `tokenizer_config.json`'s,
/// or a GGUF file's `tokenizer.chat_template` (GPT-2's have neither).
pub fn load_chat_template(ckpt: &Checkpoint) -> Result<Option<engine::loader::ChatTemplate>> {
    match &ckpt.gguf {
        Some(file) => engine::gguf::tokenizer::chat_template(&engine::gguf::GgufFile::open(file)?),
        None => engine::loader::chat_template(&ckpt.dir),
    }
}
