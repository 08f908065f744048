//! Small checkpoints of the second tier's safetensors architectures for tests: the model
//! candle-transformers builds for a tiny config, its weights as candle initialises them, saved
//! as a real `config.json` + `model.safetensors` folder (the loader then reads it as any other).

use std::path::Path;

use candle_core::{DType, Device};
use candle_nn::{VarBuilder, VarMap};
use engine::{Error, Result};

/// The config.json of a tiny `arch` (`phi3` or `gemma`): 2 layers 64 wide, 4 query heads over
/// 2 key/value heads (1 for Gemma, as Gemma-2B has), a 256-token vocabulary.
pub fn config(arch: &str) -> Option<serde_json::Value> {
    match arch {
        "phi3" => Some(serde_json::json!({
            "model_type": "phi3", "architectures": ["Phi3ForCausalLM"], "vocab_size": 256, "hidden_act": "silu",
            "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "bos_token_id": 1, "eos_token_id": 2,
            "rope_scaling": null, "max_position_embeddings": 128, "tie_word_embeddings": false
        })),
        "gemma" => Some(serde_json::json!({
            "model_type": "gemma", "architectures": ["GemmaForCausalLM"], "attention_bias": false, "head_dim": 16,
            "hidden_act": "gelu_pytorch_tanh", "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
            "num_hidden_layers": 2, "num_key_value_heads": 1, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
            "vocab_size": 256, "max_position_embeddings": 128
        })),
        _ => None,
    }
}

/// Writes a tiny `arch` checkpoint into `dir` (created if missing).
pub fn write(dir: &Path, arch: &str) -> Result<()> {
    let cfg = config(arch)
        .ok_or_else(|| Error::Input(format!("no tiny {arch}: there are phi3 and gemma")))?;
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let varmap = VarMap::new();
    let vb = VarBuilder::from_varmap(&varmap, DType::F32, &Device::Cpu);
    let bad = |e: serde_json::Error| Error::Input(e.to_string());
    match arch {
        "phi3" => drop(candle_transformers::models::phi3::Model::new(
            &serde_json::from_value(cfg.clone()).map_err(bad)?,
            vb,
        )?),
        _ => drop(candle_transformers::models::gemma::Model::new(
            false,
            &serde_json::from_value(cfg.clone()).map_err(bad)?,
            vb,
        )?),
    }
    let weights = dir.join("model.safetensors");
    varmap.save(&weights).map_err(|e| Error::Weights {
        path: weights.clone(),
        message: e.to_string(),
    })?;
    let config = dir.join("config.json");
    std::fs::write(&config, cfg.to_string()).map_err(|e| Error::io(&config, e))
}
