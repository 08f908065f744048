//! A Llama-family model from a GGUF file, as llama.cpp's `convert_hf_to_gguf.py` and
//! `llama-quantize` write it, with its matrices kept in their stored types.
//!
//! - The hyper-parameters come from the `llama.*`, `qwen2.*` or `qwen3.*` metadata
//!   ([`config`]); the tensor names are llama.cpp's (`blk.N.attn_q.weight` for
//!   `model.layers.N.self_attn.q_proj.weight`, [`gguf_name`]).
//! - Every dense layer whose matrix is quantized (`Q8_0`, `Q4_0`, `Q1_0`, `Q4_K`, `Q6_K`) stays
//!   so, multiplied by `engine::quant` in its own profiler row; an F32, F16 or BF16 matrix is a
//!   dense layer of that type (f32 on the portable path and CUDA, whose products do not mix
//!   types). Norms, biases and the token embeddings are read as f32 (the embeddings dequantized:
//!   a lookup reads a few rows); the head is kept quantized, the embeddings' blocks where tied.
//! - For the `llama` architecture the converter reorders each head's query and key rows from
//!   Hugging Face's rotate-half order to interleaved pairs (`LlamaModel.permute`: row
//!   `j·d/2 + i` of a head goes to `2i + j`) for llama.cpp's rotation; the engine rotates in
//!   Hugging Face's order, so those rows are put back at load. Rows are whole blocks, so a
//!   quantized matrix is reordered without touching a value. `qwen2` and `qwen3` are written
//!   unpermuted.
//! - Llama 3.1's scaled rotation is stored as `rope_freqs.weight`, one divisor per frequency
//!   (the converter evaluates the `llama3` rule for each; llama.cpp's rotation divides by it):
//!   read as [`RopeScaling::Divisors`], the same angles as the checkpoint's `rope_scaling`.
//!
//! [`load`] gives the model with quantized layers ([`Weights::Quantized`]) or every weight
//! dequantized to f32 ([`Weights::Dequantized`]), the reference the quantized products are held
//! to in the parity tests.

use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;
use engine::cpu::KernelPath;
use engine::generate::Limits;
use engine::gguf::{GgmlType, GgufFile};
use engine::linear::Linear;
use engine::ops::list;
use engine::quant::QMatrix;
use engine::{Error, Result};

use crate::config::{Config, Family, RopeScaling};
use crate::model::{Fused, Layers, Model};

/// How the file's quantized matrices are held (one definition, the engine's).
pub use engine::gguf::Weights;

/// A GGUF file's model with what generation and serving need besides it, all from the one file.
pub struct Loaded {
    /// Its matrices kept in their stored types ([`Weights::Quantized`]).
    pub model: Model,
    /// From `tokenizer.ggml.*` (`engine::gguf::tokenizer`); `None` when the file carries none.
    pub tokenizer: Option<engine::tokenizer::Tokenizer>,
    /// `tokenizer.chat_template`, when the file has one.
    pub chat_template: Option<engine::loader::ChatTemplate>,
    pub limits: Limits,
}

/// The model in GGUF file `path`, quantized as stored, with its tokenizer, chat template and
/// limits; refused, from the header alone, when this machine's free memory cannot hold it
/// ([`load_quantized`]).
/// What `serve --model FILE.gguf` runs, and what a profiler of the engine's own rows (exercise
/// 8's first tier) can call for a GGUF file.
pub fn load_for_generation(path: &Path, device: &Device, kernels: KernelPath) -> Result<Loaded> {
    let file = GgufFile::open(path)?;
    let cfg = config(&file)?;
    let tokenizer = engine::gguf::tokenizer::tokenizer(&file)?;
    let chat_template = engine::gguf::tokenizer::chat_template(&file)?;
    let limits = limits(&cfg, &file);
    drop(file);
    Ok(Loaded {
        model: load_quantized(path, device, kernels)?,
        tokenizer,
        chat_template,
        limits,
    })
}

/// The model in GGUF file `path` with its matrices kept in their stored types
/// ([`Weights::Quantized`]), refused first, from the header alone, when this machine's free
/// memory cannot hold it ([`check_memory`]). Exercise 8's first tier loads a GGUF file with it.
pub fn load_quantized(path: &Path, device: &Device, kernels: KernelPath) -> Result<Model> {
    let file = GgufFile::open(path)?;
    check_memory(&file, &config(&file)?)?;
    drop(file);
    load(path, device, kernels, Weights::Quantized)
}

/// The types the GGUF file `path` stores its matrices in (its tensors of two dimensions; norms
/// and biases are f32 in every file), as [`GgufFile::stored_types`] names them: `q8_0`, or
/// `q8_0+q4_0+f16+bf16` for a mixed file.
pub fn stored_types(path: &Path) -> Result<String> {
    let file = GgufFile::open(path)?;
    file.stored_types(file.tensors().iter().filter(|t| t.dims.len() >= 2))
}

/// Whether the engine's Llama model runs the GGUF file `path`: its architecture is llama, qwen2
/// or qwen3, [`config`] reads its metadata, and every tensor is of a type the engine reads
/// ([`GgmlType`]). Exercise 8 runs such a file on the first tier (every op in its row) and
/// another (gemma3, phi3, a Q5_K or Q4_1 llama, ...) through candle-transformers.
pub fn runs_on_engine(path: &Path) -> Result<bool> {
    let file = GgufFile::open(path)?;
    Ok(config(&file).is_ok() && file.tensors().iter().all(|t| t.ggml_type().is_ok()))
}

/// The bytes one decode step reads of the GGUF file `path`'s weights as stored, scales
/// included: every tensor, but the token embeddings where the file has a head of its own
/// (`output.weight`: a lookup reads one row of them); tied to the head, they are read whole,
/// once. The numerator of a decode step's memory floor.
pub fn weight_bytes(path: &Path) -> Result<u64> {
    let file = GgufFile::open(path)?;
    let lookups: &[&str] = match file.tensor_info("output.weight") {
        Some(_) => &["token_embd.weight"],
        None => &[],
    };
    file.tensor_bytes_except(lookups)
}

/// The context and the end ids (`tokenizer.ggml.eos_token_id`, and the end-of-turn ids where
/// the file names them) of a GGUF model of config `cfg`.
pub fn limits(cfg: &Config, file: &GgufFile) -> Limits {
    Limits {
        context: cfg.max_positions,
        eos: engine::gguf::tokenizer::eos_ids(file),
    }
}

/// The file's model against this machine's free memory, from its tensor table: the weights as
/// stored, the token embeddings dequantized to f32 for the lookup, and the stored bytes once
/// more while they are laid out for the kernels.
pub fn check_memory(file: &GgufFile, cfg: &Config) -> Result<()> {
    let (needed, detail) = memory_need(file.tensor_bytes()?, cfg.vocab_size, cfg.hidden_size);
    engine::memory::check_fits(&file.path().display().to_string(), needed, &detail)
}

/// The bytes a GGUF model needs while loading, from `stored` (its tensors' bytes as the table
/// gives them) and the embeddings' shape, and what that figure is: [`check_memory`]'s sum, also
/// made from a plan before a synthetic file is written.
pub fn memory_need(stored: u64, vocab_size: usize, hidden_size: usize) -> (u64, String) {
    let embeddings = (vocab_size * hidden_size * 4) as u64;
    (
        2 * stored + embeddings,
        format!(
            "holds {} of weights as stored and {} of f32 token embeddings",
            engine::memory::gib(stored),
            engine::memory::gib(embeddings)
        ),
    )
}

/// Reads the model in the GGUF file `path` onto `device`, for the CPU kernel path `kernels`.
pub fn load(path: &Path, device: &Device, kernels: KernelPath, weights: Weights) -> Result<Model> {
    let file = Arc::new(GgufFile::open(path)?);
    let cfg = config(&file)?;
    let source = Source {
        file: file.clone(),
        permute: (cfg.family != Family::Qwen2 && cfg.family != Family::Qwen3)
            .then_some((cfg.num_attention_heads, cfg.num_key_value_heads)),
        device: device.clone(),
    };
    let vb = VarBuilder::from_backend(Box::new(source.clone()), DType::F32, device.clone());
    let layers: Option<&dyn Layers> = match weights {
        Weights::Quantized => Some(&source),
        Weights::Dequantized => None,
    };
    Model::load_with(vb, &cfg, kernels, layers).map_err(|e| match e {
        Error::Candle(e) => file.error(e.to_string()),
        other => other,
    })
}

/// The model's hyper-parameters from the file's metadata (`{arch}.*` keys, `arch` being
/// `general.architecture`) and which tensors it has (a separate head, biases, per-head norms).
pub fn config(file: &GgufFile) -> Result<Config> {
    let arch = file.get_str("general.architecture")?;
    let family = match arch {
        "llama" => Family::Llama,
        "qwen2" => Family::Qwen2,
        "qwen3" => Family::Qwen3,
        other => {
            return Err(file.error(format!(
                "general.architecture is {other}; the engine's Llama family reads llama (Llama, SmolLM, Mistral), qwen2 and qwen3 GGUF files"
            )))
        }
    };
    let key = |k: &str| format!("{arch}.{k}");
    let usize_of = |k: &str| file.get_u64(&key(k)).map(|v| v as usize);
    let hidden = usize_of("embedding_length")?;
    let heads = usize_of("attention.head_count")?;
    let kv_heads = match file.metadata().get(&key("attention.head_count_kv")) {
        Some(_) => usize_of("attention.head_count_kv")?,
        None => heads,
    };
    let head_dim = match file.metadata().get(&key("attention.key_length")) {
        Some(_) => usize_of("attention.key_length")?,
        None => hidden / heads.max(1),
    };
    let vocab = match file.metadata().get(&key("vocab_size")) {
        Some(_) => usize_of("vocab_size")?,
        None => file
            .tensor_info("token_embd.weight")
            .and_then(|t| t.dims.get(1).copied())
            .ok_or_else(|| file.error("no token_embd.weight, and no vocab_size key"))?
            as usize,
    };
    let rope_scaling = match file.metadata().get(&key("rope.scaling.type")) {
        None => RopeScaling::None,
        Some(v) => match v.as_str() {
            Some("none") => RopeScaling::None,
            Some("linear") => RopeScaling::Linear {
                factor: file.get_f64(&key("rope.scaling.factor"))?,
            },
            _ => {
                return Err(file.error(format!(
                    "{} is {v:?}; the engine reads none and linear from a GGUF",
                    key("rope.scaling.type")
                )))
            }
        },
    };
    // Llama 3.1's scaling, as the converter writes it: a divisor per frequency.
    let rope_scaling = match file.tensor_info("rope_freqs.weight") {
        None => rope_scaling,
        Some(_) if rope_scaling != RopeScaling::None => {
            return Err(file.error(format!(
                "has rope_freqs.weight and {} too; the engine reads one scaling, not both",
                key("rope.scaling.type")
            )))
        }
        Some(_) => {
            let (_, divisors) = file.dequantize("rope_freqs.weight")?;
            if divisors.len() != head_dim / 2 {
                return Err(file.error(format!(
                    "rope_freqs.weight has {} values; a head of {head_dim} rotates {} frequencies",
                    divisors.len(),
                    head_dim / 2
                )));
            }
            RopeScaling::Divisors(divisors.into_iter().map(f64::from).collect())
        }
    };
    let number_or = |k: &str, default: f64| match file.metadata().get(&key(k)) {
        Some(_) => file.get_f64(&key(k)),
        None => Ok(default),
    };
    Ok(Config {
        family,
        vocab_size: vocab,
        hidden_size: hidden,
        intermediate_size: usize_of("feed_forward_length")?,
        num_hidden_layers: usize_of("block_count")?,
        num_attention_heads: heads,
        num_key_value_heads: kv_heads,
        head_dim,
        max_positions: usize_of("context_length")?,
        rms_norm_eps: file.get_f64(&key("attention.layer_norm_rms_epsilon"))?,
        rope_theta: number_or("rope.freq_base", 10000.0)?,
        rope_scaling,
        tie_word_embeddings: file.tensor_info("output.weight").is_none(),
        qkv_bias: file.tensor_info("blk.0.attn_q.bias").is_some(),
        qk_norm: file.tensor_info("blk.0.attn_q_norm.weight").is_some(),
    })
}

/// llama.cpp's name for the Hugging Face tensor `hf` (`model.layers.3.mlp.up_proj.weight` →
/// `blk.3.ffn_up.weight`), or `None` for a name the family does not have.
pub fn gguf_name(hf: &str) -> Option<String> {
    match hf {
        "model.embed_tokens.weight" => return Some("token_embd.weight".into()),
        "model.norm.weight" => return Some("output_norm.weight".into()),
        "lm_head.weight" => return Some("output.weight".into()),
        _ => {}
    }
    let rest = hf.strip_prefix("model.layers.")?;
    let (layer, rest) = rest.split_once('.')?;
    let (module, kind) = rest.rsplit_once('.')?;
    let short = match module {
        "self_attn.q_proj" => "attn_q",
        "self_attn.k_proj" => "attn_k",
        "self_attn.v_proj" => "attn_v",
        "self_attn.o_proj" => "attn_output",
        "self_attn.q_norm" => "attn_q_norm",
        "self_attn.k_norm" => "attn_k_norm",
        "mlp.gate_proj" => "ffn_gate",
        "mlp.up_proj" => "ffn_up",
        "mlp.down_proj" => "ffn_down",
        "input_layernorm" => "attn_norm",
        "post_attention_layernorm" => "ffn_norm",
        _ => return None,
    };
    Some(format!("blk.{layer}.{short}.{kind}"))
}

/// The file's tensors under Hugging Face's names: dense ones for `VarBuilder`, quantized layers
/// for the model ([`Layers`]).
#[derive(Clone)]
struct Source {
    file: Arc<GgufFile>,
    /// The `llama` architecture's query and key heads, whose rows the converter permuted.
    permute: Option<(usize, usize)>,
    device: Device,
}

impl Source {
    /// The heads of `gguf`'s rows where the converter permuted them (queries and keys of the
    /// `llama` architecture).
    fn permuted_heads(&self, gguf: &str) -> Option<usize> {
        let (q, kv) = self.permute?;
        if gguf.contains(".attn_q.") {
            Some(q)
        } else if gguf.contains(".attn_k.") {
            Some(kv)
        } else {
            None
        }
    }

    /// The tensor `gguf` as stored, its rows back in Hugging Face's order, with its type and
    /// shape (outermost first).
    fn rows(&self, gguf: &str) -> Result<(GgmlType, Vec<usize>, Vec<u8>)> {
        let (info, ty, bytes) = self.file.tensor(gguf)?;
        let shape = info.shape();
        let bytes = match self.permuted_heads(gguf) {
            Some(heads) => {
                let rows = shape.first().copied().unwrap_or(1);
                unpermute_rows(bytes, rows, heads)
                    .map_err(|e| self.file.error(format!("{gguf}: {e}")))?
            }
            None => bytes.to_vec(),
        };
        Ok((ty, shape, bytes))
    }

    /// `gguf` as an f32 tensor of `shape` (rows in Hugging Face's order).
    fn dense(&self, gguf: &str, shape: &[usize]) -> Result<Tensor> {
        let (ty, stored, bytes) = self.rows(gguf)?;
        let n: usize = stored.iter().product();
        if n != shape.iter().product::<usize>() {
            return Err(self.file.error(format!(
                "{gguf} has shape {stored:?}, the config asks for {shape:?}"
            )));
        }
        let values = engine::quant::dequantize(ty, &bytes, n)
            .map_err(|e| self.file.error(format!("{gguf}: {e}")))?;
        Ok(Tensor::from_vec(values, shape, &self.device)?)
    }

    /// One `nn.Linear` (out, in) as a layer: quantized as stored, or dense.
    fn part(&self, gguf: &str, out: usize, in_dim: usize, path: KernelPath) -> Result<Part> {
        let (ty, shape, bytes) = self.rows(gguf)?;
        if shape != [out, in_dim] {
            return Err(self.file.error(format!(
                "{gguf} has shape {shape:?}, the config asks for [{out}, {in_dim}]"
            )));
        }
        if ty.is_quantized() {
            return Ok(Part::Quantized(ty, bytes));
        }
        let w = self.dense(gguf, &[out, in_dim])?;
        // A half-type matrix stays so where the packed kernels read it as stored.
        let keep = path.activations(&self.device, DType::BF16) == DType::F32;
        let w = match ty {
            GgmlType::F16 if keep => w.to_dtype(DType::F16)?,
            GgmlType::BF16 if keep => w.to_dtype(DType::BF16)?,
            _ => w,
        };
        let _ = path;
        Ok(Part::Dense(w))
    }
}

/// A part of a fused layer.
enum Part {
    Quantized(GgmlType, Vec<u8>),
    Dense(Tensor),
}

/// Each head's rows from interleaved pairs (GGUF row `2i + j` of a head) back to rotate-half
/// order (row `j·d/2 + i`): whole rows of `bytes` moved.
fn unpermute_rows(bytes: &[u8], rows: usize, heads: usize) -> std::result::Result<Vec<u8>, String> {
    if heads == 0
        || !rows.is_multiple_of(heads)
        || !(rows / heads).is_multiple_of(2)
        || !bytes.len().is_multiple_of(rows.max(1))
    {
        return Err(format!(
            "{rows} rows cannot be {heads} heads of an even number of rows"
        ));
    }
    let (d, row) = (rows / heads, bytes.len() / rows);
    let half = d / 2;
    let mut out = vec![0u8; bytes.len()];
    for h in 0..heads {
        for i in 0..half {
            for j in 0..2 {
                let from = h * d + 2 * i + j;
                let to = h * d + j * half + i;
                out[to * row..(to + 1) * row].copy_from_slice(&bytes[from * row..(from + 1) * row]);
            }
        }
    }
    Ok(out)
}

impl Layers for Source {
    fn linear(&self, fused: Fused, path: KernelPath) -> Result<Option<Linear>> {
        let Fused {
            prefix,
            names,
            in_dim,
            bias,
        } = fused;
        let mut parts = Vec::new();
        for (name, out) in names {
            let hf = format!("{prefix}.{name}.weight");
            let gguf =
                gguf_name(&hf).ok_or_else(|| self.file.error(format!("no GGUF name for {hf}")))?;
            parts.push((*out, self.part(&gguf, *out, in_dim, path)?));
        }
        let bias = bias.map(|b| b.to_dtype(DType::F32)).transpose()?;
        let quantized_type = |p: &Part| match p {
            Part::Quantized(ty, _) => Some(*ty),
            Part::Dense(_) => None,
        };
        let first = quantized_type(&parts[0].1);
        // One type throughout: one matrix, one row.
        if first.is_some() && parts.iter().all(|(_, p)| quantized_type(p) == first) {
            let ty = first.unwrap_or(GgmlType::Q8_0);
            let rows: usize = parts.iter().map(|(out, _)| out).sum();
            let mut bytes = Vec::new();
            for (_, p) in parts {
                if let Part::Quantized(_, b) = p {
                    bytes.extend(b);
                }
            }
            let q = QMatrix::new(ty, rows, in_dim, bytes, path, &self.device)?;
            return Ok(Some(Linear::quantized(q, bias, list::MATMUL, path)));
        }
        if parts.iter().all(|(_, p)| matches!(p, Part::Dense(_))) {
            let ws = parts
                .into_iter()
                .map(|(_, p)| match p {
                    Part::Dense(w) => w.to_dtype(DType::F32),
                    Part::Quantized(..) => unreachable!("all dense"),
                })
                .collect::<candle_core::Result<Vec<_>>>()?;
            let w = match ws.len() {
                1 => ws
                    .into_iter()
                    .next()
                    .ok_or_else(|| self.file.error("no parts"))?,
                _ => Tensor::cat(&ws, 0)?,
            };
            return Ok(Some(Linear::from_out_in(w, bias, path)?));
        }
        // Several types: each part its own layer and row, outputs side by side.
        let layers = parts
            .into_iter()
            .map(|(out, p)| match p {
                Part::Quantized(ty, b) => Ok(Linear::quantized(
                    QMatrix::new(ty, out, in_dim, b, path, &self.device)?,
                    None,
                    list::MATMUL,
                    path,
                )),
                Part::Dense(w) => Linear::from_out_in(w, None, path),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Some(Linear::side_by_side(layers, bias, path)))
    }

    fn head(&self, cfg: &Config, path: KernelPath) -> Result<Option<Linear>> {
        let name = match cfg.tie_word_embeddings {
            true => "token_embd.weight",
            false => "output.weight",
        };
        let (vocab, h) = (cfg.vocab_size, cfg.hidden_size);
        Ok(Some(match self.part(name, vocab, h, path)? {
            Part::Quantized(ty, bytes) => Linear::quantized(
                QMatrix::new(ty, vocab, h, bytes, path, &self.device)?,
                None,
                list::LM_HEAD,
                path,
            ),
            Part::Dense(w) => Linear::head(w, path)?,
        }))
    }
}

impl SimpleBackend for Source {
    fn get(
        &self,
        s: Shape,
        name: &str,
        _: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let gguf = gguf_name(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("no GGUF tensor for {name}")))?;
        let t = self
            .dense(&gguf, s.dims())
            .map_err(|e| candle_core::Error::Msg(e.to_string()))?;
        t.to_dtype(dtype)?.to_device(dev)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let gguf = gguf_name(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("no GGUF tensor for {name}")))?;
        let shape = self
            .file
            .tensor_info(&gguf)
            .map(|t| t.shape())
            .ok_or_else(|| candle_core::Error::Msg(format!("no tensor {gguf}")))?;
        self.get(shape.into(), name, candle_nn::Init::Const(0.0), dtype, dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        gguf_name(name).is_some_and(|g| self.file.tensor_info(&g).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_llama_cpps() {
        for (hf, g) in [
            (
                "model.layers.0.self_attn.q_proj.weight",
                "blk.0.attn_q.weight",
            ),
            (
                "model.layers.11.self_attn.k_proj.bias",
                "blk.11.attn_k.bias",
            ),
            (
                "model.layers.2.self_attn.q_norm.weight",
                "blk.2.attn_q_norm.weight",
            ),
            (
                "model.layers.1.post_attention_layernorm.weight",
                "blk.1.ffn_norm.weight",
            ),
            (
                "model.layers.1.mlp.down_proj.weight",
                "blk.1.ffn_down.weight",
            ),
            ("model.embed_tokens.weight", "token_embd.weight"),
            ("lm_head.weight", "output.weight"),
        ] {
            assert_eq!(gguf_name(hf).as_deref(), Some(g), "{hf}");
        }
        assert_eq!(gguf_name("model.layers.0.mlp.experts.weight"), None);
    }

    #[test]
    fn stored_types_name_the_matrices_types_most_weights_first() {
        let fixture = |name: &str| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/fixtures/gguf")
                .join(name)
        };
        assert_eq!(
            stored_types(&fixture("tiny-llama-q8_0.gguf")).unwrap(),
            "q8_0"
        );
        // llama-quantize's Q4_0 preset asks Q6_K for the head; rows of 64 are too short for its
        // blocks of 256, so it falls back to Q8_0.
        assert_eq!(
            stored_types(&fixture("tiny-llama-q4_0.gguf")).unwrap(),
            "q4_0+q8_0"
        );
        assert_eq!(
            stored_types(&fixture("tiny-qwen3-q1_0.gguf")).unwrap(),
            "q1_0"
        );
        // The mixed file: Q8_0 holds three matrices of every block and the embeddings, the
        // most weights; the f32 norms are no matrix.
        let mixed = stored_types(&fixture("tiny-qwen3-mixed.gguf")).unwrap();
        let mut types: Vec<&str> = mixed.split('+').collect();
        assert_eq!(types[0], "q8_0", "{mixed}");
        types.sort_unstable();
        assert_eq!(types, ["bf16", "f16", "q4_0", "q8_0"], "{mixed}");
    }

    /// The converter's permutation (LlamaModel.permute), written here from its definition,
    /// undone: every row back where it was.
    #[test]
    fn unpermuting_undoes_the_converters_permutation() {
        let (heads, d, row) = (3, 8, 2);
        let hf: Vec<u8> = (0..(heads * d * row) as u8).collect();
        let mut gguf = vec![0u8; hf.len()];
        // reshape(heads, 2, d/2, row).swapaxes(1, 2): GGUF row h·d + 2i + j is HF row h·d + j·d/2 + i.
        for h in 0..heads {
            for i in 0..d / 2 {
                for j in 0..2 {
                    let (g, f) = (h * d + 2 * i + j, h * d + j * (d / 2) + i);
                    gguf[g * row..(g + 1) * row].copy_from_slice(&hf[f * row..(f + 1) * row]);
                }
            }
        }
        assert_ne!(gguf, hf);
        assert_eq!(unpermute_rows(&gguf, heads * d, heads).unwrap(), hf);
        assert!(unpermute_rows(&gguf, heads * d, 5).is_err());
    }
}
