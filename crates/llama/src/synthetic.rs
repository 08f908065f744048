//! Seeded random checkpoints with a real model's shapes: every timing is real, the outputs are
//! not. Written as a Hub-style directory (`config.json` in transformers' field names,
//! `model.safetensors` with the Hub's tensor names, and a `tokenizer.json` of the model's
//! vocabulary size whose last id is the end token), so the same loader reads them, a server can
//! turn text into their ids, and llama.cpp's converter turns them into a GGUF of the same
//! weights.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};
use engine::{Error, Result};
use rand::{Rng, SeedableRng};

/// The same weights on every machine.
const SEED: u64 = 2023;
/// Bump when the contents change, so stale caches are not reused (2: the tokenizer, and the
/// end token moved to the vocabulary's last id).
const VERSION: u32 = 2;

/// The synthetic tokenizer's one special token, the last id: beginning and end of text.
pub const END_TOKEN: &str = "<|endoftext|>";

/// A synthetic checkpoint's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Shape {
    pub name: &'static str,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub layers: usize,
    pub heads: usize,
    pub kv_heads: usize,
    pub max_positions: usize,
    pub rope_theta: f64,
}

/// `HuggingFaceTB/SmolLM2-135M`'s shapes: 30 layers 576 wide, 9 query heads over 3 key/value
/// heads, a 49152-token vocabulary and a tied head (134.5 million parameters).
pub const SMOLLM2_135M: Shape = Shape {
    name: "smollm2-135m",
    vocab_size: 49152,
    hidden_size: 576,
    intermediate_size: 1536,
    layers: 30,
    heads: 9,
    kv_heads: 3,
    max_positions: 8192,
    rope_theta: 100000.0,
};

/// A small one for tests: 2 layers 64 wide, grouped-query.
pub const TINY: Shape = Shape {
    name: "llama-tiny",
    vocab_size: 512,
    hidden_size: 64,
    intermediate_size: 160,
    layers: 2,
    heads: 4,
    kv_heads: 2,
    max_positions: 256,
    rope_theta: 10000.0,
};

/// The shapes `--model synthetic-NAME` names.
pub const SHAPES: [Shape; 2] = [SMOLLM2_135M, TINY];

impl Shape {
    /// `config.json` as transformers' `LlamaConfig` writes it.
    pub fn config_json(&self) -> serde_json::Value {
        serde_json::json!({
            "architectures": ["LlamaForCausalLM"],
            "model_type": "llama",
            "vocab_size": self.vocab_size,
            "hidden_size": self.hidden_size,
            "intermediate_size": self.intermediate_size,
            "num_hidden_layers": self.layers,
            "num_attention_heads": self.heads,
            "num_key_value_heads": self.kv_heads,
            "max_position_embeddings": self.max_positions,
            "rms_norm_eps": 1e-5,
            "rope_theta": self.rope_theta,
            "hidden_act": "silu",
            "tie_word_embeddings": true,
            "bos_token_id": self.vocab_size - 1,
            "eos_token_id": self.vocab_size - 1,
            "torch_dtype": "float32",
        })
    }

    /// Seeded weights: uniform with standard deviation 0.02, RMSNorm gains 1; `nn.Linear`
    /// weights (out, in), as the Hub stores them.
    fn weights(&self) -> Result<HashMap<String, Tensor>> {
        let mut rng = rand::rngs::StdRng::seed_from_u64(SEED);
        let half_width = 0.02 * 3f32.sqrt();
        let mut random = |dims: &[usize]| -> Result<Tensor> {
            let data: Vec<f32> = (0..dims.iter().product())
                .map(|_| rng.random_range(-half_width..half_width))
                .collect();
            Ok(Tensor::from_vec(data, dims, &Device::Cpu)?)
        };
        let ones = |n: usize| Tensor::ones(n, DType::F32, &Device::Cpu);
        let (h, d) = (self.hidden_size, self.hidden_size / self.heads);
        let mut w = HashMap::new();
        w.insert(
            "model.embed_tokens.weight".to_string(),
            random(&[self.vocab_size, h])?,
        );
        for i in 0..self.layers {
            let p = |s: &str| format!("model.layers.{i}.{s}");
            let projections = [
                ("self_attn.q_proj", self.heads * d, h),
                ("self_attn.k_proj", self.kv_heads * d, h),
                ("self_attn.v_proj", self.kv_heads * d, h),
                ("self_attn.o_proj", h, self.heads * d),
                ("mlp.gate_proj", self.intermediate_size, h),
                ("mlp.up_proj", self.intermediate_size, h),
                ("mlp.down_proj", h, self.intermediate_size),
            ];
            for (name, out, inp) in projections {
                w.insert(p(&format!("{name}.weight")), random(&[out, inp])?);
            }
            w.insert(p("input_layernorm.weight"), ones(h)?);
            w.insert(p("post_attention_layernorm.weight"), ones(h)?);
        }
        w.insert("model.norm.weight".into(), ones(h)?);
        Ok(w)
    }

    /// Writes the checkpoint into `dir` in one step (`output::write_dir`: a crash leaves nothing
    /// half-written, and a folder another process finished first is kept).
    pub fn write(&self, dir: &Path) -> Result<()> {
        Ok(output::write_dir(dir, |tmp| self.write_into(tmp))?)
    }

    /// The checkpoint's files, written into the empty folder `tmp`.
    fn write_into(&self, tmp: &Path) -> Result<()> {
        let config = tmp.join("config.json");
        let json = serde_json::to_string_pretty(&self.config_json())
            .map_err(|e| Error::Input(e.to_string()))?;
        std::fs::write(&config, json).map_err(|e| Error::io(&config, e))?;
        let weights = tmp.join("model.safetensors");
        candle_core::safetensors::save(&self.weights()?, &weights).map_err(|e| Error::Weights {
            path: weights.clone(),
            message: e.to_string(),
        })?;
        self.write_tokenizer(tmp)
    }

    /// A byte-level BPE `tokenizer.json` with exactly this shape's vocabulary, [`END_TOKEN`]
    /// last, and a `tokenizer_config.json` naming it (no chat template: a server says so and
    /// uses its built-in transcript).
    pub fn write_tokenizer(&self, dir: &Path) -> Result<()> {
        engine::tokenizer::write_synthetic(
            &dir.join("tokenizer.json"),
            self.vocab_size,
            SEED,
            END_TOKEN,
        )?;
        let config = dir.join("tokenizer_config.json");
        let json = serde_json::json!({ "bos_token": END_TOKEN, "eos_token": END_TOKEN });
        std::fs::write(&config, json.to_string()).map_err(|e| Error::io(&config, e))
    }

    /// The checkpoint in the course's cache, written on first use.
    pub fn cached(&self) -> Result<PathBuf> {
        let name = format!("synthetic-v{VERSION}-{}", self.name);
        engine::loader::synthetic_dir(&name, |tmp| self.write_into(tmp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smollm2_shapes_count_its_parameters() {
        let cfg = crate::Config::from_json(&SMOLLM2_135M.config_json().to_string()).unwrap();
        assert_eq!(cfg.parameters(), 134_515_008);
        assert_eq!((cfg.head_dim, cfg.n_rep()), (64, 3));
    }
}
