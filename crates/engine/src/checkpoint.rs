//! A checkpoint directory as the Hub stores it: its safetensors files (one, or the shards an
//! index names), and what they hold, read from their headers before any weight is.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

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
    for shard in shard_names(&index)? {
        let path = dir.join(&shard);
        if !path.is_file() {
            return Err(Error::Weights {
                path: index,
                message: format!("names shard {shard}, which is not in {}", dir.display()),
            });
        }
        files.push(path);
    }
    Ok(files)
}

/// The shard files a `model.safetensors.index.json` names, each once.
pub fn shard_names(index: &Path) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(index).map_err(|e| Error::io(index, e))?;
    let bad = |message: String| Error::Weights {
        path: index.to_owned(),
        message,
    };
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let map = json
        .get("weight_map")
        .and_then(|m| m.as_object())
        .ok_or_else(|| bad("no weight_map object".into()))?;
    let mut names: Vec<String> = Vec::new();
    for file in map.values().filter_map(|v| v.as_str()) {
        if !names.iter().any(|n| n == file) {
            names.push(file.to_string());
        }
    }
    Ok(names)
}

/// The number of values the safetensors `files` hold, from their headers (nothing else is read).
pub fn parameters(files: &[PathBuf]) -> Result<usize> {
    let mut total = 0;
    for file in files {
        // SAFETY: mapped read-only and only the header is read, while the map lives.
        let st =
            unsafe { candle_core::safetensors::MmapedSafetensors::new(file) }.map_err(|e| {
                Error::Weights {
                    path: file.clone(),
                    message: e.to_string(),
                }
            })?;
        total += st
            .tensors()
            .iter()
            .map(|(_, view)| view.shape().iter().product::<usize>())
            .sum::<usize>();
    }
    Ok(total)
}
