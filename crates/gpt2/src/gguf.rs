//! GPT-2 from a GGUF file, as llama.cpp's `convert_hf_to_gguf.py` (architecture `gpt2`) and
//! `llama-quantize` write it, with its matrices kept in their stored types.
//!
//! - The hyper-parameters come from the `gpt2.*` metadata ([`config`]): `context_length`,
//!   `embedding_length`, `feed_forward_length`, `block_count`, `attention.head_count` and
//!   `attention.layer_norm_epsilon`; the vocabulary is the token embeddings' row count. The
//!   activation is GELU's tanh form (`gelu_new`), the only one llama.cpp's GPT-2 graph runs.
//! - The tensor names are llama.cpp's ([`gguf_name`]): `token_embd`, `position_embd`,
//!   `blk.N.attn_norm`, `blk.N.attn_qkv` (`c_attn`, queries, keys and values fused as in the
//!   checkpoint), `blk.N.attn_output`, `blk.N.ffn_norm`, `blk.N.ffn_up`, `blk.N.ffn_down`,
//!   `output_norm`, and `output` where the head is not tied (the converter writes none for
//!   GPT-2: the head is `token_embd`). The converter transposes each `Conv1D` weight from the
//!   checkpoint's (in, out) to (out, in), `nn.Linear`'s order, which is how the quantized
//!   kernels multiply it.
//! - Every matrix stored quantized (`Q8_0`, `Q4_0`, the K-quants, ...) stays so, multiplied by
//!   `engine::quant` in its own profiler row with its kernel's label; an F16 or BF16 matrix is a
//!   dense layer of that type where the packed kernels read it as stored, f32 elsewhere; F32 ones
//!   load exactly as a safetensors checkpoint's do. LayerNorms, biases and the position
//!   embeddings are f32 in every file; the token embeddings are dequantized for the lookup (a
//!   lookup reads a few rows) and kept as stored for the tied head.
//!
//! [`load`] gives the model with quantized layers ([`Weights::Quantized`]) or every weight
//! dequantized to f32 ([`Weights::Dequantized`]): the same values through dense products, the
//! reference the quantized products are held to in the parity tests.

use std::path::Path;
use std::sync::Arc;

use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;
use engine::cpu::KernelPath;
use engine::error::{Error, Result};
use engine::gguf::{GgmlType, GgufFile};
use engine::linear::Linear;
use engine::loader::ChatTemplate;
use engine::ops::list;
use engine::quant::QMatrix;

use crate::config::{Activation, Config};
use crate::model::{Layers, Model};
use crate::tokenizer::Tokenizer;

/// The architecture this module reads (`general.architecture`).
pub const ARCHITECTURE: &str = "gpt2";

/// How the file's quantized matrices are held (one definition, the engine's).
pub use engine::gguf::Weights;

/// A GGUF file's GPT-2 with what generation and serving need besides it, all from the one file.
pub struct Loaded {
    /// Its matrices kept in their stored types ([`Weights::Quantized`]).
    pub model: Model,
    /// From `tokenizer.ggml.*` (`engine::gguf::tokenizer`); `None` when the file carries none.
    pub tokenizer: Option<Tokenizer>,
    /// `tokenizer.chat_template`, when the file has one (GPT-2's have none).
    pub chat_template: Option<ChatTemplate>,
}

/// Whether the GGUF file `path` holds a GPT-2 (`general.architecture` is `gpt2`): what a command
/// that runs several families asks before choosing a loader.
pub fn is_gpt2(path: &Path) -> Result<bool> {
    let file = GgufFile::open(path)?;
    Ok(file
        .metadata()
        .get("general.architecture")
        .and_then(|v| v.as_str())
        == Some(ARCHITECTURE))
}

/// The GPT-2 in GGUF file `path`, quantized as stored, with its tokenizer and chat template;
/// refused first, from the header alone, when this machine's free memory cannot hold it.
pub fn load_for_generation(path: &Path, device: &Device, kernels: KernelPath) -> Result<Loaded> {
    let file = GgufFile::open(path)?;
    let tokenizer = engine::gguf::tokenizer::tokenizer(&file)?;
    let chat_template = engine::gguf::tokenizer::chat_template(&file)?;
    drop(file);
    Ok(Loaded {
        model: load_quantized(path, device, kernels)?,
        tokenizer,
        chat_template,
    })
}

/// The GPT-2 in GGUF file `path` with its matrices kept in their stored types, refused first,
/// from the header alone, when this machine's free memory cannot hold it ([`check_memory`]).
pub fn load_quantized(path: &Path, device: &Device, kernels: KernelPath) -> Result<Model> {
    let file = GgufFile::open(path)?;
    check_memory(&file, &config(&file)?)?;
    drop(file);
    load(path, device, kernels, Weights::Quantized)
}

/// The file's model against this machine's free memory: the weights as stored, the token
/// embeddings dequantized to f32 for the lookup, and the stored bytes once more while they are
/// laid out for the kernels (the sum the Llama family's GGUF loader makes).
pub fn check_memory(file: &GgufFile, cfg: &Config) -> Result<()> {
    let stored = file.tensor_bytes()?;
    let embeddings = (cfg.vocab_size * cfg.n_embd * 4) as u64;
    let detail = format!(
        "holds {} of weights as stored and {} of f32 token embeddings",
        engine::memory::gib(stored),
        engine::memory::gib(embeddings)
    );
    engine::memory::check_fits(
        &file.path().display().to_string(),
        2 * stored + embeddings,
        &detail,
    )
}

/// The matrices GPT-2's products read, by GGUF name: each block's four and the head (the token
/// embeddings where no `output.weight` is stored).
fn product_matrices(file: &GgufFile) -> Result<Vec<String>> {
    let cfg = config(file)?;
    let mut names: Vec<String> = (0..cfg.n_layer)
        .flat_map(|i| {
            ["attn_qkv", "attn_output", "ffn_up", "ffn_down"].map(|m| format!("blk.{i}.{m}.weight"))
        })
        .collect();
    names.push(match file.tensor_info("output.weight") {
        Some(_) => "output.weight".into(),
        None => "token_embd.weight".into(),
    });
    Ok(names)
}

/// The types the GGUF file `path` stores GPT-2's product matrices in (each block's four and the
/// head), as [`GgufFile::stored_types`] names them: `q8_0`, `q4_0+q6_k`.
pub fn stored_types(path: &Path) -> Result<String> {
    let file = GgufFile::open(path)?;
    let matrices = product_matrices(&file)?
        .into_iter()
        .map(|name| {
            file.tensor_info(&name)
                .ok_or_else(|| file.error(format!("no tensor {name}")))
        })
        .collect::<Result<Vec<_>>>()?;
    file.stored_types(matrices)
}

/// The bytes one forward pass reads of the GGUF file `path`'s weights as stored, scales
/// included: every tensor but the position embeddings (a lookup reads a few rows of them, as of
/// the token embeddings, which are counted once, for the head they are tied to). The numerator
/// of a decode step's memory floor.
pub fn weight_bytes(path: &Path) -> Result<u64> {
    GgufFile::open(path)?.tensor_bytes_except(&["position_embd.weight"])
}

/// Reads the GPT-2 in the GGUF file `path` onto `device`, for the CPU kernel path `kernels`.
/// Every failure names the file, and the tensor or key where there is one.
pub fn load(path: &Path, device: &Device, kernels: KernelPath, weights: Weights) -> Result<Model> {
    let file = Arc::new(GgufFile::open(path)?);
    let cfg = config(&file)?;
    let source = Source {
        file: file.clone(),
        device: device.clone(),
        weights,
    };
    let vb = VarBuilder::from_backend(Box::new(source.clone()), DType::F32, device.clone());
    Model::load_with(vb, &cfg, kernels, Some(&source)).map_err(|e| match e {
        Error::Candle(e) => file.error(e.to_string()),
        Error::Input(message) => file.error(message),
        other => other,
    })
}

/// The model's hyper-parameters from the file's `gpt2.*` metadata; a missing or mistyped key is
/// an error naming the file and the key.
pub fn config(file: &GgufFile) -> Result<Config> {
    let arch = file.get_str("general.architecture")?;
    if arch != ARCHITECTURE {
        return Err(file.error(format!(
            "general.architecture is {arch}; GPT-2 reads gpt2 GGUF files (the Llama family's run with `serve` and exercise 8)"
        )));
    }
    let key = |k: &str| format!("{ARCHITECTURE}.{k}");
    let usize_of = |k: &str| file.get_u64(&key(k)).map(|v| v as usize);
    let n_embd = usize_of("embedding_length")?;
    let n_head = usize_of("attention.head_count")?;
    if let Some(v) = file.metadata().get(&key("attention.head_count_kv")) {
        if v.as_u64() != Some(n_head as u64) {
            return Err(file.error(format!(
                "{} is {v:?}, not {n_head} (attention.head_count): GPT-2 has as many key and value heads as query heads",
                key("attention.head_count_kv")
            )));
        }
    }
    let embeddings = file
        .tensor_info("token_embd.weight")
        .ok_or_else(|| file.error("no tensor token_embd.weight (the token embeddings)"))?;
    let vocab_size = match embeddings.shape().as_slice() {
        [vocab, width] if *width == n_embd => *vocab,
        other => {
            return Err(file.error(format!(
                "token_embd.weight has shape {other:?}; {} is {n_embd}, so it must be [vocabulary, {n_embd}]",
                key("embedding_length")
            )))
        }
    };
    let token_id = |k: &str, default: usize| -> Result<u32> {
        let id = match file.metadata().get(k) {
            Some(_) => file.get_u64(k)?,
            None => default as u64,
        };
        u32::try_from(id).map_err(|_| file.error(format!("{k} is {id}, not a token id")))
    };
    // GPT-2's `<|endoftext|>` is its last id; a file without a tokenizer keeps that rule.
    let last = vocab_size.saturating_sub(1);
    let cfg = Config {
        vocab_size,
        n_positions: usize_of("context_length")?,
        n_embd,
        n_layer: usize_of("block_count")?,
        n_head,
        n_inner: Some(usize_of("feed_forward_length")?),
        activation_function: Activation::GeluTanh,
        layer_norm_epsilon: file.get_f64(&key("attention.layer_norm_epsilon"))?,
        eos_token_id: token_id("tokenizer.ggml.eos_token_id", last)?,
        bos_token_id: token_id("tokenizer.ggml.bos_token_id", last)?,
        // The rest as GPT2LMHeadModel's defaults, the only options llama.cpp's graph runs. A
        // file that stores `output.weight` has a head of its own, which `Source::head` reads.
        ..Config::gpt2_small()
    };
    cfg.validate()
        .map_err(|e| file.error(format!("its gpt2.* metadata: {e}")))?;
    Ok(cfg)
}

/// llama.cpp's name for the checkpoint tensor `hf` (rooted as [`Model::load`] asks: `wte.weight`,
/// `h.3.mlp.c_fc.weight`, `ln_f.bias`), and whether it is a `Conv1D` weight, which the converter
/// stores transposed; `None` for a name GPT-2 does not have.
pub fn gguf_name(hf: &str) -> Option<(String, bool)> {
    match hf {
        "wte.weight" => return Some(("token_embd.weight".into(), false)),
        "wpe.weight" => return Some(("position_embd.weight".into(), false)),
        "lm_head.weight" => return Some(("output.weight".into(), false)),
        _ => {}
    }
    if let Some(kind) = hf.strip_prefix("ln_f.") {
        return matches!(kind, "weight" | "bias").then(|| (format!("output_norm.{kind}"), false));
    }
    let rest = hf.strip_prefix("h.")?;
    let (layer, rest) = rest.split_once('.')?;
    layer.parse::<usize>().ok()?;
    let (module, kind) = rest.rsplit_once('.')?;
    if !matches!(kind, "weight" | "bias") {
        return None;
    }
    let (short, conv1d) = match module {
        "ln_1" => ("attn_norm", false),
        "attn.c_attn" => ("attn_qkv", true),
        "attn.c_proj" => ("attn_output", true),
        "ln_2" => ("ffn_norm", false),
        "mlp.c_fc" => ("ffn_up", true),
        "mlp.c_proj" => ("ffn_down", true),
        _ => return None,
    };
    Some((
        format!("blk.{layer}.{short}.{kind}"),
        conv1d && kind == "weight",
    ))
}

/// The file's tensors under the checkpoint's names: dense ones for `VarBuilder` (each `Conv1D`
/// weight transposed back to (in, out)), quantized layers for the model ([`Layers`]).
#[derive(Clone)]
struct Source {
    file: Arc<GgufFile>,
    device: Device,
    /// Quantized matrices as stored, or every matrix dense f32 (through `vb`, the head here).
    weights: Weights,
}

impl Source {
    /// `gguf` as an f32 tensor of its stored shape (outermost first), dequantized where stored
    /// quantized; the message of an error names the tensor (the caller adds the file).
    fn dense(&self, gguf: &str) -> std::result::Result<Tensor, String> {
        let info = self
            .file
            .tensor_info(gguf)
            .ok_or_else(|| format!("no tensor {gguf}"))?;
        let ty = info.ggml_type()?;
        let (_, _, bytes) = self.file.tensor(gguf).map_err(|e| e.to_string())?;
        let n = info.elements() as usize;
        let values =
            engine::quant::dequantize(ty, bytes, n).map_err(|e| format!("tensor {gguf}: {e}"))?;
        Tensor::from_vec(values, info.shape(), &self.device).map_err(|e| e.to_string())
    }

    /// The matrix `gguf`, which must be (out, in) = `[out, in_dim]`: its type and its bytes as
    /// stored.
    fn matrix(&self, gguf: &str, out: usize, in_dim: usize) -> Result<(GgmlType, Vec<u8>)> {
        let (info, ty, bytes) = self.file.tensor(gguf)?;
        let shape = info.shape();
        if shape != [out, in_dim] {
            return Err(self.file.error(format!(
                "{gguf} has shape {shape:?}; the gpt2.* metadata asks for [{out}, {in_dim}]"
            )));
        }
        Ok((ty, bytes.to_vec()))
    }

    /// The (out, in) matrix `gguf` as a layer with `bias`: quantized as stored; a half type
    /// kept where the packed kernels read it as stored, f32 otherwise.
    fn layer(
        &self,
        gguf: &str,
        out: usize,
        in_dim: usize,
        bias: Option<Tensor>,
        op: profiler::OpName,
        path: KernelPath,
    ) -> Result<Linear> {
        let (ty, bytes) = self.matrix(gguf, out, in_dim)?;
        if ty.is_quantized() {
            let q = QMatrix::new(ty, out, in_dim, bytes, path, &self.device)
                .map_err(|e| self.file.error(format!("{gguf}: {e}")))?;
            return Ok(Linear::quantized(q, bias, op, path));
        }
        let w = self.dense(gguf).map_err(|e| self.file.error(e))?;
        let keep = path.activations(&self.device, DType::BF16) == DType::F32;
        let w = match ty {
            GgmlType::F16 if keep => w.to_dtype(DType::F16)?,
            GgmlType::BF16 if keep => w.to_dtype(DType::BF16)?,
            _ => w,
        };
        match op == list::LM_HEAD {
            true => Linear::head(w, path),
            false => Linear::from_out_in(w, bias, path),
        }
    }
}

impl Layers for Source {
    fn linear(
        &self,
        prefix: &str,
        in_dim: usize,
        out_dim: usize,
        path: KernelPath,
    ) -> Result<Option<Linear>> {
        let name = |kind: &str| {
            gguf_name(&format!("{prefix}.{kind}"))
                .map(|(g, _)| g)
                .ok_or_else(|| self.file.error(format!("no GGUF name for {prefix}.{kind}")))
        };
        if self.weights == Weights::Dequantized {
            return Ok(None);
        }
        let (weight, bias) = (name("weight")?, name("bias")?);
        let info = self
            .file
            .tensor_info(&weight)
            .ok_or_else(|| self.file.error(format!("no tensor {weight}")))?;
        // An f32 matrix loads through `vb`, exactly as a safetensors checkpoint's.
        if info.ggml_type().map_err(|e| self.file.error(e))? == GgmlType::F32 {
            return Ok(None);
        }
        let b = self.dense(&bias).map_err(|e| self.file.error(e))?;
        if b.dims() != [out_dim] {
            return Err(self.file.error(format!(
                "{bias} has shape {:?}; the gpt2.* metadata asks for [{out_dim}]",
                b.dims()
            )));
        }
        let layer = self.layer(&weight, out_dim, in_dim, Some(b), list::MATMUL, path)?;
        Ok(Some(layer))
    }

    fn head(&self, cfg: &Config, path: KernelPath) -> Result<Option<Linear>> {
        let name = match self.file.tensor_info("output.weight") {
            Some(_) => "output.weight",
            None => "token_embd.weight",
        };
        let (vocab, e) = (cfg.vocab_size, cfg.n_embd);
        if self.weights == Weights::Dequantized {
            self.matrix(name, vocab, e)?;
            let w = self.dense(name).map_err(|e| self.file.error(e))?;
            return Ok(Some(Linear::head(w, path)?));
        }
        Ok(Some(self.layer(
            name,
            vocab,
            e,
            None,
            list::LM_HEAD,
            path,
        )?))
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
        let (gguf, conv1d) = gguf_name(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("GPT-2 has no tensor {name}")))?;
        let t = self.dense(&gguf).map_err(candle_core::Error::Msg)?;
        // The converter stored the `Conv1D` weight (out, in); the model reads the checkpoint's (in, out).
        let t = if conv1d { t.t()?.contiguous()? } else { t };
        if t.dims() != s.dims() {
            let stored = self.file.tensor_info(&gguf).map(|i| i.shape());
            return Err(candle_core::Error::Msg(format!(
                "{gguf} has shape {:?}; the gpt2.* metadata asks for {:?}{}",
                stored.unwrap_or_default(),
                s.dims(),
                if conv1d { " transposed" } else { "" }
            )));
        }
        t.to_dtype(dtype)?.to_device(dev)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let (gguf, conv1d) = gguf_name(name)
            .ok_or_else(|| candle_core::Error::Msg(format!("GPT-2 has no tensor {name}")))?;
        let mut shape = self
            .file
            .tensor_info(&gguf)
            .map(|t| t.shape())
            .ok_or_else(|| candle_core::Error::Msg(format!("no tensor {gguf}")))?;
        if conv1d {
            shape.reverse();
        }
        self.get(shape.into(), name, candle_nn::Init::Const(0.0), dtype, dev)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        gguf_name(name).is_some_and(|(g, _)| self.file.tensor_info(&g).is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_llama_cpps() {
        for (hf, g, transposed) in [
            ("wte.weight", "token_embd.weight", false),
            ("wpe.weight", "position_embd.weight", false),
            ("h.0.ln_1.bias", "blk.0.attn_norm.bias", false),
            ("h.11.attn.c_attn.weight", "blk.11.attn_qkv.weight", true),
            ("h.11.attn.c_attn.bias", "blk.11.attn_qkv.bias", false),
            ("h.2.attn.c_proj.weight", "blk.2.attn_output.weight", true),
            ("h.2.ln_2.weight", "blk.2.ffn_norm.weight", false),
            ("h.1.mlp.c_fc.weight", "blk.1.ffn_up.weight", true),
            ("h.1.mlp.c_proj.bias", "blk.1.ffn_down.bias", false),
            ("ln_f.weight", "output_norm.weight", false),
            ("lm_head.weight", "output.weight", false),
        ] {
            assert_eq!(gguf_name(hf), Some((g.to_string(), transposed)), "{hf}");
        }
        for not_gpt2 in [
            "h.0.attn.bias",
            "h.x.ln_1.weight",
            "h.0.mlp.c_gate.weight",
            "ln_f.scale",
            "model.embed_tokens.weight",
        ] {
            assert_eq!(gguf_name(not_gpt2), None, "{not_gpt2}");
        }
    }
}
