//! Reads a Llama-family checkpoint directory as the Hub stores it: `config.json` and either
//! `model.safetensors` or shards listed by `model.safetensors.index.json`.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use candle_nn::VarBuilder;
use engine::cpu::KernelPath;
use engine::{Error, Result};

use crate::config::Config;
use crate::model::Model;

/// The safetensors files of the checkpoint in `dir`: the single file, or every shard its index
/// names (once each, in the index's order).
pub fn safetensors_files(dir: &Path) -> Result<Vec<PathBuf>> {
    let single = dir.join("model.safetensors");
    if single.is_file() {
        return Ok(vec![single]);
    }
    let index = dir.join("model.safetensors.index.json");
    if !index.is_file() {
        return Err(Error::Weights {
            path: single,
            message: "missing, and no model.safetensors.index.json beside it: a checkpoint directory needs its safetensors weights (pytorch_model.bin is not read)".into(),
        });
    }
    let mut files = Vec::new();
    for shard in crate::source::shard_names(&index)? {
        let path = dir.join(&shard);
        if !path.is_file() {
            return Err(Error::Weights { path: index, message: format!("names shard {shard}, which is not in {}", dir.display()) });
        }
        files.push(path);
    }
    Ok(files)
}

/// Reads the checkpoint in `dir` onto `device` as `dtype`, laid out for the CPU kernel path
/// `kernels`. Every failure names the file it came from.
pub fn load(dir: &Path, device: &Device, dtype: DType, kernels: KernelPath) -> Result<Model> {
    let config_path = dir.join("config.json");
    if !config_path.is_file() {
        return Err(Error::Weights { path: config_path, message: "missing: a checkpoint directory needs config.json".into() });
    }
    let cfg = Config::from_file(&config_path)?;
    let files = safetensors_files(dir)?;
    let shown = files[0].clone();
    let bad = |e: candle_core::Error| Error::Weights { path: shown.clone(), message: engine::error::weights_message(&e, "Llama-family") };
    // SAFETY: the files are mapped read-only; like every safetensors loader we assume no one
    // truncates them while the model is being built (the tensors are copied out of the map).
    let vb = unsafe { VarBuilder::from_mmaped_safetensors(&files, dtype, device) }.map_err(bad)?;
    Model::load(vb, &cfg, kernels).map_err(|e| match e {
        Error::Candle(e) => bad(e),
        other => other,
    })
}
