//! Reads a Llama-family checkpoint directory as the Hub stores it: `config.json` and either
//! `model.safetensors` or shards listed by `model.safetensors.index.json`.

use std::path::Path;

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use engine::cpu::KernelPath;
use engine::{Error, Result};

use crate::config::Config;
use crate::model::Model;

/// Reads the checkpoint in `dir` onto `device` as `dtype`, laid out for the CPU kernel path
/// `kernels`. Every failure names the file it came from.
pub fn load(dir: &Path, device: &Device, dtype: DType, kernels: KernelPath) -> Result<Model> {
    let config_path = dir.join("config.json");
    if !config_path.is_file() {
        return Err(Error::Weights {
            path: config_path,
            message: "missing: a checkpoint directory needs config.json".into(),
        });
    }
    let cfg = Config::from_file(&config_path)?;
    let files = engine::checkpoint::safetensors_files(dir)?;
    let shown = files[0].clone();
    let bad = |e: candle_core::Error| Error::Weights {
        path: shown.clone(),
        message: engine::error::weights_message(&e, "Llama-family"),
    };
    // SAFETY: the files are mapped read-only; like every safetensors loader we assume no one
    // truncates them while the model is being built (the tensors are copied out of the map).
    let vb = unsafe { VarBuilder::from_mmaped_safetensors(&files, dtype, device) }.map_err(bad)?;
    Model::load(vb, &cfg, kernels).map_err(|e| match e {
        Error::Candle(e) => bad(e),
        other => other,
    })
}
