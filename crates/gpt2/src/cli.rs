//! Flags shared by every command that loads the model.

pub use engine::run_args::{Kernels, RunArgs};

use crate::model::Model;
use crate::tokenizer::Tokenizer;
use crate::weights::{self, Checkpoint, WeightSource};
use engine::error::Result;

#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// Checkpoint: `gpt2` (openai-community/gpt2 from the Hugging Face hub or its cache;
    /// offline it falls back to `synthetic`), `synthetic` (GPT-2 small's shapes, seeded
    /// random weights), a directory with config.json and model.safetensors, or a GGUF file
    /// of architecture gpt2 (its matrices kept in their stored types, its tokenizer from its
    /// metadata; --dtype does not apply).
    #[arg(
        long,
        default_value = "gpt2",
        value_name = "gpt2|synthetic|DIR|FILE.gguf"
    )]
    pub model: String,

    #[command(flatten)]
    pub run: RunArgs,
}

/// A model ready to run, with the tokenizer its checkpoint ships (if any).
pub struct Loaded {
    pub model: Model,
    pub tokenizer: Option<Tokenizer>,
    pub checkpoint: Checkpoint,
    /// The quantized types its matrices are held in, as reports name the weights' dtype: a GGUF
    /// file's as stored (`q4_0+q8_0`), `--dtype q8_0`'s; `None` for dense weights.
    pub quantized_as: Option<String>,
}

impl ModelArgs {
    /// Resolves, fetches and loads the checkpoint, printing the fallback notice (if any) to
    /// standard error.
    pub fn load(&self) -> Result<Loaded> {
        let source = WeightSource::parse(&self.model)?;
        let device = self.run.open_device()?;
        let kernels = self.run.kernel_path()?;
        let checkpoint = weights::resolve(&source, &mut |notice| eprintln!("{notice}"))?;
        let model = weights::load(&checkpoint, &device, self.run.dtype, kernels)?;
        let tokenizer = weights::load_tokenizer(&checkpoint)?;
        let quantized_as = match (&checkpoint.gguf, self.run.dtype.quantized()) {
            (Some(file), _) => Some(crate::gguf::stored_types(file)?),
            (None, Some(ty)) => Some(ty.name().to_string()),
            (None, None) => None,
        };
        Ok(Loaded {
            model,
            tokenizer,
            checkpoint,
            quantized_as,
        })
    }
}
