//! A Llama-family checkpoint's hyper-parameters, read from its Hugging Face `config.json`.
//!
//! One struct for the whole family: the variants differ in a few switches (biases on the query,
//! key and value projections, norms on each head's queries and keys, a tied output head, the
//! rotary scaling), which [`Config::from_json`] reads from the fields each variant's
//! `transformers` config class writes. Options the engine does not implement are refused with
//! their name and value, never ignored.

use std::path::Path;

use engine::{Error, Result};
use serde::Deserialize;

/// The decoder variants the engine implements, as `config.json`'s `model_type` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Family {
    /// Llama 2, 3, 3.1 and 3.2, SmolLM and SmolLM2, TinyLlama.
    Llama,
    Mistral,
    /// Qwen2 and Qwen2.5: biases on the query, key and value projections.
    Qwen2,
    /// Qwen3: RMSNorm on each head's queries and keys; its own `head_dim`.
    Qwen3,
}

impl Family {
    /// Every variant, with the `model_type` that selects it.
    pub const ALL: [(Family, &'static str); 4] = [
        (Family::Llama, "llama"),
        (Family::Mistral, "mistral"),
        (Family::Qwen2, "qwen2"),
        (Family::Qwen3, "qwen3"),
    ];

    pub fn model_type(self) -> &'static str {
        Family::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map(|(_, name)| *name)
            .unwrap_or("llama")
    }

    fn from_model_type(name: &str) -> Option<Family> {
        Family::ALL
            .iter()
            .find(|(_, n)| *n == name)
            .map(|(f, _)| *f)
    }

    /// From a transformers class name: `LlamaForCausalLM`, `Qwen2ForCausalLM`, ...
    fn from_architecture(arch: &str) -> Option<Family> {
        let prefix = [
            ("Llama", Family::Llama),
            ("Mistral", Family::Mistral),
            ("Qwen2", Family::Qwen2),
            ("Qwen3", Family::Qwen3),
        ];
        prefix
            .iter()
            .find(|(p, _)| {
                arch.strip_prefix(p)
                    .is_some_and(|rest| rest == "ForCausalLM")
            })
            .map(|(_, f)| *f)
    }
}

/// How the rotary angles are stretched for long contexts (`rope_scaling`, or `rope_parameters`
/// in configs written by transformers 5).
#[derive(Debug, Clone, PartialEq)]
pub enum RopeScaling {
    None,
    /// Every position divided by `factor`.
    Linear {
        factor: f64,
    },
    /// Llama 3.1's: long wavelengths slowed by `factor`, short ones kept, the band between
    /// blended.
    Llama3 {
        factor: f64,
        low_freq_factor: f64,
        high_freq_factor: f64,
        original_max_position_embeddings: f64,
    },
    /// One divisor per frequency, as a GGUF file stores a scaling (`rope_freqs.weight`: the
    /// converter writes Llama 3.1's as the divisor its rule gives each frequency).
    Divisors(Vec<f64>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub family: Family,
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    /// Fewer than `num_attention_heads` for grouped-query attention.
    pub num_key_value_heads: usize,
    pub head_dim: usize,
    /// The longest sequence: `max_position_embeddings`, or a sliding window when shorter (this
    /// engine attends to every cached key, so it stops where a window would start to slide).
    pub max_positions: usize,
    pub rms_norm_eps: f64,
    pub rope_theta: f64,
    pub rope_scaling: RopeScaling,
    pub tie_word_embeddings: bool,
    /// Biases on the query, key and value projections (Qwen2, or Llama's `attention_bias`).
    pub qkv_bias: bool,
    /// RMSNorm on each head's queries and keys before the rotation (Qwen3).
    pub qk_norm: bool,
}

/// `config.json` as the family's config classes write it; every field the variants use.
#[derive(Deserialize)]
struct Raw {
    model_type: Option<String>,
    #[serde(default)]
    architectures: Vec<String>,
    vocab_size: usize,
    hidden_size: usize,
    intermediate_size: usize,
    num_hidden_layers: usize,
    num_attention_heads: usize,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    max_position_embeddings: usize,
    #[serde(default = "default_eps")]
    rms_norm_eps: f64,
    rope_theta: Option<f64>,
    rope_scaling: Option<serde_json::Value>,
    rope_parameters: Option<serde_json::Value>,
    #[serde(default)]
    tie_word_embeddings: bool,
    #[serde(default)]
    attention_bias: bool,
    #[serde(default)]
    mlp_bias: bool,
    hidden_act: Option<String>,
    sliding_window: Option<usize>,
    use_sliding_window: Option<bool>,
}

fn default_eps() -> f64 {
    1e-6
}

/// The Llama-family variant a checkpoint's config.json names (`model_type`, else its
/// architecture), or `None` when it names another model: for a caller that runs other models
/// some other way (exercise 8's second tier).
pub fn family_of_file(path: &Path) -> Result<Option<Family>> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let raw: serde_json::Value = serde_json::from_str(&text).map_err(|e| Error::Config {
        path: path.to_owned(),
        message: e.to_string(),
    })?;
    if let Some(name) = raw.get("model_type").and_then(|v| v.as_str()) {
        return Ok(Family::from_model_type(name));
    }
    let arch = raw
        .get("architectures")
        .and_then(|a| a.get(0))
        .and_then(|a| a.as_str())
        .unwrap_or("");
    Ok(Family::from_architecture(arch))
}

impl Config {
    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        Self::from_json(&text).map_err(|message| Error::Config {
            path: path.to_owned(),
            message,
        })
    }

    /// The config of a `config.json`'s text; an error says which field is missing or which
    /// option this engine does not implement.
    pub fn from_json(text: &str) -> std::result::Result<Self, String> {
        let raw: Raw = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let family = family_of(&raw)?;
        if let Some(act) = raw.hidden_act.as_deref().filter(|a| *a != "silu") {
            return Err(format!(
                "hidden_act \"{act}\" is not supported: the Llama family's MLP is gated by silu"
            ));
        }
        if raw.mlp_bias {
            return Err(
                "mlp_bias: true is not supported (no Llama-family checkpoint on the Hub uses it)"
                    .into(),
            );
        }
        let heads = raw.num_attention_heads;
        let kv_heads = raw.num_key_value_heads.unwrap_or(heads);
        if heads == 0 || kv_heads == 0 || !heads.is_multiple_of(kv_heads) {
            return Err(format!(
                "num_attention_heads {heads} must be a multiple of num_key_value_heads {kv_heads}"
            ));
        }
        let head_dim = match raw.head_dim {
            Some(d) => d,
            None if raw.hidden_size.is_multiple_of(heads) => raw.hidden_size / heads,
            None => return Err(format!("hidden_size {} is not a multiple of num_attention_heads {heads}, and no head_dim is given", raw.hidden_size)),
        };
        if head_dim % 2 != 0 {
            return Err(format!(
                "head_dim {head_dim} is odd: rotary embeddings rotate pairs of values"
            ));
        }
        // Qwen2 and Qwen3 write a sliding_window they only use with use_sliding_window.
        let window = match family {
            Family::Qwen2 | Family::Qwen3 if raw.use_sliding_window != Some(true) => None,
            _ => raw.sliding_window,
        };
        let (rope_theta, rope_scaling) = rope_of(&raw)?;
        Ok(Config {
            family,
            vocab_size: raw.vocab_size,
            hidden_size: raw.hidden_size,
            intermediate_size: raw.intermediate_size,
            num_hidden_layers: raw.num_hidden_layers,
            num_attention_heads: heads,
            num_key_value_heads: kv_heads,
            head_dim,
            max_positions: window.map_or(raw.max_position_embeddings, |w| {
                w.min(raw.max_position_embeddings)
            }),
            rms_norm_eps: raw.rms_norm_eps,
            rope_theta,
            rope_scaling,
            tie_word_embeddings: raw.tie_word_embeddings,
            qkv_bias: family == Family::Qwen2 || raw.attention_bias,
            qk_norm: family == Family::Qwen3,
        })
    }

    /// Query heads per key/value head.
    pub fn n_rep(&self) -> usize {
        self.num_attention_heads / self.num_key_value_heads
    }

    /// Width of the fused query, key and value projection.
    pub fn qkv_width(&self) -> usize {
        (self.num_attention_heads + 2 * self.num_key_value_heads) * self.head_dim
    }

    /// Parameters, counting a tied head once.
    pub fn parameters(&self) -> usize {
        let (h, d) = (self.hidden_size, self.head_dim);
        let attention = h * self.qkv_width()
            + self.num_attention_heads * d * h
            + if self.qkv_bias { self.qkv_width() } else { 0 }
            + if self.qk_norm { 2 * d } else { 0 };
        let mlp = 3 * h * self.intermediate_size;
        let head = if self.tie_word_embeddings {
            0
        } else {
            self.vocab_size * h
        };
        self.vocab_size * h + self.num_hidden_layers * (attention + mlp + 2 * h) + h + head
    }
}

/// The variant: `model_type`, else the architecture's name (`LlamaForCausalLM`, …).
fn family_of(raw: &Raw) -> std::result::Result<Family, String> {
    let supported = Family::ALL
        .iter()
        .map(|(_, n)| *n)
        .collect::<Vec<_>>()
        .join(", ");
    if let Some(name) = &raw.model_type {
        return Family::from_model_type(name).ok_or_else(|| {
            format!(
                "model_type \"{name}\" is not in the Llama family this engine runs ({supported})"
            )
        });
    }
    let arch = raw.architectures.first().map(String::as_str).unwrap_or("");
    Family::from_architecture(arch).ok_or_else(|| {
        format!(
            "no model_type, and architectures {:?} names none of the Llama family ({supported})",
            raw.architectures
        )
    })
}

/// The rotary base and scaling, from `rope_parameters` (transformers 5) or `rope_theta` and
/// `rope_scaling` (the Hub's older configs).
fn rope_of(raw: &Raw) -> std::result::Result<(f64, RopeScaling), String> {
    let params = raw
        .rope_parameters
        .as_ref()
        .or(raw.rope_scaling.as_ref())
        .filter(|v| !v.is_null());
    let number = |key: &str| params.and_then(|p| p.get(key)).and_then(|v| v.as_f64());
    let theta = raw
        .rope_theta
        .or_else(|| number("rope_theta"))
        .unwrap_or(10_000.0);
    let kind = params
        .and_then(|p| p.get("rope_type").or_else(|| p.get("type")))
        .and_then(|v| v.as_str())
        .unwrap_or("default");
    let need =
        |key: &str| number(key).ok_or_else(|| format!("rope scaling \"{kind}\" needs {key}"));
    let scaling = match kind {
        "default" => RopeScaling::None,
        "linear" => RopeScaling::Linear { factor: need("factor")? },
        "llama3" => RopeScaling::Llama3 {
            factor: need("factor")?,
            low_freq_factor: need("low_freq_factor")?,
            high_freq_factor: need("high_freq_factor")?,
            original_max_position_embeddings: need("original_max_position_embeddings")?,
        },
        other => return Err(format!("rope scaling \"{other}\" is not supported (this engine implements default, linear and llama3)")),
    };
    Ok((theta, scaling))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shape of Llama-3.2-1B's config.json on the Hub (the older rope fields).
    const LLAMA_32_1B: &str = r#"{"architectures":["LlamaForCausalLM"],"attention_bias":false,"bos_token_id":128000,
        "eos_token_id":128001,"head_dim":64,"hidden_act":"silu","hidden_size":2048,"intermediate_size":8192,
        "max_position_embeddings":131072,"mlp_bias":false,"model_type":"llama","num_attention_heads":32,
        "num_hidden_layers":16,"num_key_value_heads":8,"rms_norm_eps":1e-05,"rope_scaling":{"factor":32.0,
        "high_freq_factor":4.0,"low_freq_factor":1.0,"original_max_position_embeddings":8192,"rope_type":"llama3"},
        "rope_theta":500000.0,"tie_word_embeddings":true,"torch_dtype":"bfloat16","vocab_size":128256}"#;

    #[test]
    fn reads_the_hubs_older_rope_fields() {
        let c = Config::from_json(LLAMA_32_1B).unwrap();
        assert_eq!(
            (c.family, c.n_rep(), c.head_dim, c.rope_theta),
            (Family::Llama, 4, 64, 500000.0)
        );
        assert_eq!(
            c.rope_scaling,
            RopeScaling::Llama3 {
                factor: 32.0,
                low_freq_factor: 1.0,
                high_freq_factor: 4.0,
                original_max_position_embeddings: 8192.0
            }
        );
        // 1.24 billion parameters, as its model card says.
        assert_eq!(c.parameters() / 10_000_000, 123);
    }

    #[test]
    fn refuses_what_it_does_not_implement_by_name() {
        let with =
            |from: &str, to: &str| Config::from_json(&LLAMA_32_1B.replace(from, to)).unwrap_err();
        assert!(with("\"model_type\":\"llama\"", "\"model_type\":\"gemma\"")
            .contains("model_type \"gemma\" is not in the Llama family"));
        assert!(with("\"rope_type\":\"llama3\"", "\"rope_type\":\"yarn\"")
            .contains("rope scaling \"yarn\" is not supported"));
        assert!(with("\"hidden_act\":\"silu\"", "\"hidden_act\":\"gelu\"")
            .contains("hidden_act \"gelu\""));
        assert!(
            with("\"num_key_value_heads\":8", "\"num_key_value_heads\":5")
                .contains("multiple of num_key_value_heads 5")
        );
    }

    #[test]
    fn an_architecture_name_stands_in_for_a_missing_model_type() {
        let c = Config::from_json(
            &LLAMA_32_1B
                .replace("\"model_type\":\"llama\",", "")
                .replace("LlamaForCausalLM", "Qwen2ForCausalLM"),
        )
        .unwrap();
        assert_eq!((c.family, c.qkv_bias), (Family::Qwen2, true));
    }
}
