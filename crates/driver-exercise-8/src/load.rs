//! A first-tier model on the course's engine: a safetensors checkpoint, or a GGUF file the
//! engine's Llama model reads, with what the run says of it.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use engine::CausalLm;
use llama::source;

use crate::args::Args;

/// Where the first tier's model comes from: a safetensors checkpoint, or a GGUF file the
/// engine's Llama model reads (its name in the report, its path).
pub enum FirstTier {
    Checkpoint(source::Checkpoint),
    Gguf(String, PathBuf),
}

/// A model loaded on the first tier, with what the run says of it.
pub struct Loaded {
    pub model: llama::Model,
    /// What the learner asked for: a repository id, a folder, a file.
    pub name: String,
    /// The weights' types: `--dtype`'s for a checkpoint; for a GGUF file the types it stores
    /// its matrices in (`q8_0`, or `q8_0+q4_0+f16+bf16` for a mixed file).
    pub dtype: String,
    /// From a GGUF file, weights as stored: parameters × bytes per weight does not count
    /// quantized blocks (their scales are bytes too), so the memory prediction is not asked.
    pub gguf: bool,
}

/// What a GGUF file is called in the report: the path given, or the Hub repository and the
/// file picked from it (`owner/name/model-Q8_0.gguf`).
pub fn gguf_name(model: &str, path: &Path) -> String {
    match path.file_name() {
        Some(file) if !model.ends_with(".gguf") => format!("{model}/{}", file.to_string_lossy()),
        _ => model.to_string(),
    }
}

// ANCHOR: load
/// Your model, on the course's engine. One too large for this machine's free memory is refused
/// before its weights are read: a checkpoint from its config.json (before they are downloaded),
/// a GGUF file from its header.
pub fn load(from: FirstTier, device: &candle_core::Device, args: &Args) -> Result<Loaded> {
    let _weights = args
        .profile_memory
        .then(|| profiler::alloc::category(profiler::Category::Weights));
    let kernels = args.run.kernel_path()?;
    let (model, name, dtype, synthetic, gguf) = match from {
        FirstTier::Checkpoint(checkpoint) => (
            llama::weights::load(
                &checkpoint.dir,
                device,
                args.run.dtype.dense_only("Llama-family")?,
                kernels,
            )
            .with_context(|| format!("cannot load {}", checkpoint.name))?,
            checkpoint.name,
            args.run.dtype.name().to_string(),
            checkpoint.synthetic,
            false,
        ),
        // Each matrix stays in the type the file stores it in: a quantized one is multiplied
        // by the engine's kernel for that type, in its own row.
        FirstTier::Gguf(name, path) => (
            llama::gguf::load_quantized(&path, device, kernels)
                .with_context(|| format!("cannot load {name}"))?,
            name,
            llama::gguf::stored_types(&path)?,
            false,
            true,
        ),
    };
    drop(_weights);
    let cfg = model.config();
    println!(
        "{name}: {} ({:.1} M parameters, {} layers, {} query heads over {} key/value heads), {dtype} weights{}, kernels {}",
        cfg.family.model_type(),
        cfg.parameters() as f64 / 1e6,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        if gguf { " as stored" } else { "" },
        model.kernels()
    );
    if synthetic {
        println!("(synthetic weights: every timing is real, the model's outputs are not)");
    }
    Ok(Loaded {
        model,
        name,
        dtype,
        gguf,
    })
}
// ANCHOR_END: load
