//! What a GGUF file says about itself before it is loaded, and small GGUF files for tests,
//! written by candle itself (no converter needed).

use std::collections::HashMap;
use std::path::Path;

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use engine::{Error, Result};

/// A GGUF file's architecture, parameter count and weight type, from its header alone.
pub struct Summary {
    pub architecture: Option<String>,
    pub parameters: usize,
    /// The type that holds the most values (`q8_0`, `q4_k`, `f16`, ...).
    pub weight_type: String,
}

impl Summary {
    pub fn of(content: &Content) -> Self {
        let architecture = content
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned();
        let mut by_type: HashMap<String, usize> = HashMap::new();
        let mut parameters = 0;
        for info in content.tensor_infos.values() {
            let n = info.shape.elem_count();
            parameters += n;
            *by_type
                .entry(format!("{:?}", info.ggml_dtype).to_ascii_lowercase())
                .or_default() += n;
        }
        let weight_type = by_type
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(t, _)| t)
            .unwrap_or_else(|| "unknown".into());
        Summary {
            architecture,
            parameters,
            weight_type,
        }
    }

    /// The bytes its tensors take as stored.
    pub fn read(path: &Path) -> Result<(Self, u64)> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let content = Content::read(&mut file).map_err(|e| Error::Weights {
            path: path.to_owned(),
            message: format!("not a readable GGUF file: {e}"),
        })?;
        let size = std::fs::metadata(path)
            .map_err(|e| Error::io(path, e))?
            .len();
        Ok((Summary::of(&content), size))
    }
}

/// Shapes of a small GGUF model for tests: Llama-style tensor names, `arch`'s metadata keys.
pub struct TinyShape {
    pub arch: &'static str,
    pub vocab: usize,
    pub hidden: usize,
    pub ffn: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
}

pub const TINY_LLAMA: TinyShape = TinyShape {
    arch: "llama",
    vocab: 256,
    hidden: 64,
    ffn: 128,
    layers: 2,
    heads: 4,
    kv_heads: 2,
};
pub const TINY_QWEN2: TinyShape = TinyShape {
    arch: "qwen2",
    ..TINY_LLAMA
};

/// Writes a GGUF of `shape` with seeded weights, its matrices quantized to `dtype` (their rows
/// must be multiples of its block: 32 values for q8_0) and its norms in f32.
pub fn write_tiny(path: &Path, shape: &TinyShape, dtype: GgmlDType) -> Result<()> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut random = |rows: usize, cols: usize| -> Result<Tensor> {
        let values: Vec<f32> = (0..rows * cols)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                ((state >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
            })
            .collect();
        Ok(Tensor::from_vec(values, (rows, cols), &Device::Cpu)?)
    };
    let (h, d) = (shape.hidden, shape.hidden / shape.heads);
    let mut tensors: Vec<(String, QTensor)> = Vec::new();
    let mut matrix = |name: String, rows: usize, cols: usize| -> Result<()> {
        tensors.push((name, QTensor::quantize(&random(rows, cols)?, dtype)?));
        Ok(())
    };
    matrix("token_embd.weight".into(), shape.vocab, h)?;
    matrix("output.weight".into(), shape.vocab, h)?;
    for i in 0..shape.layers {
        matrix(format!("blk.{i}.attn_q.weight"), shape.heads * d, h)?;
        matrix(format!("blk.{i}.attn_k.weight"), shape.kv_heads * d, h)?;
        matrix(format!("blk.{i}.attn_v.weight"), shape.kv_heads * d, h)?;
        matrix(format!("blk.{i}.attn_output.weight"), h, shape.heads * d)?;
        matrix(format!("blk.{i}.ffn_gate.weight"), shape.ffn, h)?;
        matrix(format!("blk.{i}.ffn_up.weight"), shape.ffn, h)?;
        matrix(format!("blk.{i}.ffn_down.weight"), h, shape.ffn)?;
    }
    let ones = |n: usize| -> Result<QTensor> {
        Ok(QTensor::quantize(
            &Tensor::ones(n, candle_core::DType::F32, &Device::Cpu)?,
            GgmlDType::F32,
        )?)
    };
    let zeros = |n: usize| -> Result<QTensor> {
        Ok(QTensor::quantize(
            &Tensor::zeros(n, candle_core::DType::F32, &Device::Cpu)?,
            GgmlDType::F32,
        )?)
    };
    tensors.push(("output_norm.weight".into(), ones(h)?));
    for i in 0..shape.layers {
        tensors.push((format!("blk.{i}.attn_norm.weight"), ones(h)?));
        tensors.push((format!("blk.{i}.ffn_norm.weight"), ones(h)?));
        if shape.arch == "qwen2" {
            tensors.push((format!("blk.{i}.attn_q.bias"), zeros(shape.heads * d)?));
            tensors.push((format!("blk.{i}.attn_k.bias"), zeros(shape.kv_heads * d)?));
            tensors.push((format!("blk.{i}.attn_v.bias"), zeros(shape.kv_heads * d)?));
        }
    }
    let a = shape.arch;
    let metadata: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(a.into())),
        (
            format!("{a}.attention.head_count"),
            Value::U32(shape.heads as u32),
        ),
        (
            format!("{a}.attention.head_count_kv"),
            Value::U32(shape.kv_heads as u32),
        ),
        (format!("{a}.block_count"), Value::U32(shape.layers as u32)),
        (format!("{a}.embedding_length"), Value::U32(h as u32)),
        (format!("{a}.context_length"), Value::U32(256)),
        (format!("{a}.rope.dimension_count"), Value::U32(d as u32)),
        (
            format!("{a}.attention.layer_norm_rms_epsilon"),
            Value::F32(1e-5),
        ),
        (format!("{a}.rope.freq_base"), Value::F32(10000.0)),
    ];
    let mut file = std::fs::File::create(path).map_err(|e| Error::io(path, e))?;
    let metadata: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let tensors: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, t)| (k.as_str(), t)).collect();
    gguf_file::write(&mut file, &metadata, &tensors).map_err(|e| Error::Weights {
        path: path.to_owned(),
        message: e.to_string(),
    })
}
