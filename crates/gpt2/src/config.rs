//! The model's hyper-parameters, read from a Hugging Face `config.json`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use engine::error::{Error, Result};

pub use engine::ops::Activation;

/// GPT-2's configuration. Field names are those of `transformers.GPT2Config`, so a checkpoint's
/// `config.json` deserialises directly; unknown fields are ignored, options this model does not
/// implement are rejected by [`Config::validate`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Config {
    pub vocab_size: usize,
    pub n_positions: usize,
    pub n_embd: usize,
    pub n_layer: usize,
    pub n_head: usize,
    /// Width of the MLP's hidden layer; `null` in `config.json` means 4 × `n_embd`.
    #[serde(default)]
    pub n_inner: Option<usize>,
    #[serde(
        default = "default_activation",
        deserialize_with = "activation_or_error"
    )]
    pub activation_function: Activation,
    #[serde(default = "default_eps")]
    pub layer_norm_epsilon: f64,
    #[serde(default = "default_true")]
    pub scale_attn_weights: bool,
    #[serde(default)]
    pub scale_attn_by_inverse_layer_idx: bool,
    #[serde(default)]
    pub reorder_and_upcast_attn: bool,
    #[serde(default = "default_true")]
    pub tie_word_embeddings: bool,
    #[serde(default)]
    pub add_cross_attention: bool,
    #[serde(default = "default_eos")]
    pub eos_token_id: u32,
    #[serde(default = "default_eos")]
    pub bos_token_id: u32,
}

fn default_activation() -> Activation {
    Activation::GeluTanh
}
fn default_eps() -> f64 {
    1e-5
}
fn default_true() -> bool {
    true
}
fn default_eos() -> u32 {
    50256
}

/// Accept the activations listed in [`Activation`]; name the others in the error.
fn activation_or_error<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<Activation, D::Error> {
    let name = String::deserialize(d)?;
    serde_json::from_value(serde_json::Value::String(name.clone())).map_err(|_| {
        serde::de::Error::custom(format!(
            "unsupported activation_function \"{name}\": this GPT-2 implements gelu_new, gelu_pytorch_tanh, gelu and relu"
        ))
    })
}

impl Config {
    /// GPT-2 small (`openai-community/gpt2`): 12 layers, 12 heads, 768 wide, 124M parameters.
    pub fn gpt2_small() -> Self {
        Self {
            vocab_size: 50257,
            n_positions: 1024,
            n_embd: 768,
            n_layer: 12,
            n_head: 12,
            n_inner: None,
            activation_function: Activation::GeluTanh,
            layer_norm_epsilon: 1e-5,
            scale_attn_weights: true,
            scale_attn_by_inverse_layer_idx: false,
            reorder_and_upcast_attn: false,
            tie_word_embeddings: true,
            add_cross_attention: false,
            eos_token_id: 50256,
            bos_token_id: 50256,
        }
    }

    /// A tiny configuration for tests: same architecture, a few thousand parameters.
    pub fn tiny() -> Self {
        Self {
            vocab_size: 512,
            n_positions: 64,
            n_embd: 64,
            n_layer: 2,
            n_head: 4,
            eos_token_id: 511,
            bos_token_id: 511,
            ..Self::gpt2_small()
        }
    }

    pub fn from_file(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let cfg: Config = serde_json::from_str(&text).map_err(|e| Error::Config {
            path: path.to_owned(),
            message: format!("line {}, column {}: {e}", e.line(), e.column()),
        })?;
        cfg.validate().map_err(|message| Error::Config {
            path: path.to_owned(),
            message,
        })?;
        Ok(cfg)
    }

    pub fn inner_dim(&self) -> usize {
        self.n_inner.unwrap_or(4 * self.n_embd)
    }

    pub fn head_dim(&self) -> usize {
        self.n_embd / self.n_head
    }

    /// Rejects what this implementation does not compute, so a checkpoint never runs as a
    /// silently different model.
    pub fn validate(&self) -> std::result::Result<(), String> {
        let positive = [
            ("vocab_size", self.vocab_size),
            ("n_positions", self.n_positions),
            ("n_embd", self.n_embd),
            ("n_layer", self.n_layer),
            ("n_head", self.n_head),
            ("n_inner", self.inner_dim()),
        ];
        if let Some((name, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{name} must be positive"));
        }
        if !self.n_embd.is_multiple_of(self.n_head) {
            return Err(format!(
                "n_embd ({}) must be a multiple of n_head ({})",
                self.n_embd, self.n_head
            ));
        }
        let unsupported = [
            ("scale_attn_weights = false", !self.scale_attn_weights),
            (
                "scale_attn_by_inverse_layer_idx = true",
                self.scale_attn_by_inverse_layer_idx,
            ),
            (
                "reorder_and_upcast_attn = true",
                self.reorder_and_upcast_attn,
            ),
            ("tie_word_embeddings = false", !self.tie_word_embeddings),
            ("add_cross_attention = true", self.add_cross_attention),
        ];
        if let Some((name, _)) = unsupported.iter().find(|(_, on)| *on) {
            return Err(format!("unsupported option {name}: this GPT-2 implements the standard GPT2LMHeadModel only"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_transformers_config() {
        let json = r#"{"activation_function": "gelu_new", "n_embd": 64, "n_head": 4, "n_inner": null,
            "n_layer": 2, "n_positions": 64, "vocab_size": 512, "layer_norm_epsilon": 1e-05,
            "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]}"#;
        let cfg: Config = serde_json::from_str(json).unwrap();
        assert_eq!(cfg.inner_dim(), 256);
        assert_eq!(cfg.head_dim(), 16);
        assert_eq!(cfg.activation_function, Activation::GeluTanh);
        assert!(cfg.validate().is_ok());
    }

    #[test]
    fn names_an_unsupported_activation() {
        let json = r#"{"activation_function": "swish", "n_embd": 64, "n_head": 4, "n_layer": 2, "n_positions": 64, "vocab_size": 512}"#;
        let err = serde_json::from_str::<Config>(json)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("unsupported activation_function \"swish\""),
            "{err}"
        );
    }

    #[test]
    fn rejects_options_it_does_not_compute() {
        let cfg = Config {
            reorder_and_upcast_attn: true,
            ..Config::tiny()
        };
        assert!(cfg
            .validate()
            .unwrap_err()
            .contains("reorder_and_upcast_attn"));
        let cfg = Config {
            n_head: 5,
            ..Config::tiny()
        };
        assert!(cfg.validate().unwrap_err().contains("multiple of n_head"));
    }
}
