//! Flags shared by every command that loads the model.

use candle_core::DType;

use crate::cpu::KernelPath;
use crate::device_flags::{parse_dtype, DeviceChoice};
use crate::error::Result;
use crate::model::Model;
use crate::tokenizer::Tokenizer;
use crate::weights::{self, Checkpoint, WeightSource};

#[derive(clap::Args, Debug, Clone)]
pub struct ModelArgs {
    /// Checkpoint: `gpt2` (openai-community/gpt2 from the Hugging Face hub or its cache;
    /// offline it falls back to `synthetic`), `synthetic` (GPT-2 small's shapes, seeded
    /// random weights), or a directory with config.json and model.safetensors.
    #[arg(long, default_value = "gpt2", value_name = "gpt2|synthetic|DIR")]
    pub model: String,

    /// Where to run: `cpu`, `cuda` (needs a build with `--features cuda`), or `auto`
    /// (CUDA when available, else CPU).
    #[arg(long, default_value = "auto", value_name = "cpu|cuda|auto")]
    pub device: DeviceChoice,

    /// Weight precision: f32, f16 or bf16. On CUDA the whole model runs in it; on the CPU's
    /// avx512 and avx2 paths the weights are stored in it (half the bytes) and widened to f32
    /// in the matmuls, activations staying f32; on the portable path candle's ops run in it.
    #[arg(long, default_value = "f32", value_parser = parse_dtype, value_name = "f32|f16|bf16")]
    pub dtype: DType,

    /// CPU kernels the model is built for: `avx512` (packed AVX-512 matmul), `avx2` (packed
    /// AVX2 matmul), `portable` (candle's own ops only, as on a CPU without AVX2), or `auto`
    /// (the widest this CPU supports) [default: $GPT2_CPU_KERNELS, else auto].
    #[arg(long, value_name = "auto|avx512|avx2|portable", value_parser = parse_kernels)]
    pub kernels: Option<Kernels>,
}

/// A `--kernels` value: `auto` or one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernels(pub Option<KernelPath>);

fn parse_kernels(s: &str) -> std::result::Result<Kernels, String> {
    KernelPath::parse(s).map(Kernels)
}

/// A model ready to run, with the tokenizer its checkpoint ships (if any).
pub struct Loaded {
    pub model: Model,
    pub tokenizer: Option<Tokenizer>,
    pub checkpoint: Checkpoint,
}

impl ModelArgs {
    /// Resolves, fetches and loads the checkpoint, printing the fallback notice (if any) to
    /// standard error.
    pub fn load(&self) -> Result<Loaded> {
        let source = WeightSource::parse(&self.model)?;
        let device = self.device.open()?;
        let kernels = match self.kernels {
            Some(Kernels(Some(path))) => KernelPath::resolve(Some(path))?,
            // `--kernels auto` is the widest path, whatever GPT2_CPU_KERNELS says.
            Some(Kernels(None)) => KernelPath::widest(),
            None => KernelPath::resolve(None)?,
        };
        let checkpoint = weights::resolve(&source, &mut |notice| eprintln!("{notice}"))?;
        let model = weights::load(&checkpoint, &device, self.dtype, kernels)?;
        let tokenizer = weights::load_tokenizer(&checkpoint)?;
        Ok(Loaded { model, tokenizer, checkpoint })
    }
}
