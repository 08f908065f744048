//! The flags of every command that runs a model, whichever family: where it runs, the type its
//! weights are stored in, and the CPU kernels it is built for.

use candle_core::{DType, Device};

use crate::cpu::KernelPath;
use crate::device_flags::{parse_dtype, DeviceChoice, WeightType};
use crate::error::Result;

#[derive(clap::Args, Debug, Clone)]
pub struct RunArgs {
    /// Where to run: `cpu`, `cuda` (needs a build with `--features cuda`), or `auto`
    /// (CUDA when available, else CPU).
    #[arg(long, default_value = "auto", value_name = "cpu|cuda|auto")]
    pub device: DeviceChoice,

    /// Weight precision: f32, f16 or bf16. On CUDA the whole model runs in it; on the CPU's
    /// avx512 and avx2 paths the weights are stored in it (half the bytes) and widened to f32
    /// in the matmuls, activations staying f32 (except that on avx512, bf16 products of 8 rows
    /// or more run on the CPU's bf16 dot product where it has one, rounding their input to
    /// bf16); on the portable path candle's ops run in it. q8_0 and q4_0 (GPT-2 checkpoints):
    /// the dense layers' and the head's matrices are quantized at load into llama.cpp's blocks
    /// (34 and 18 bytes per 32 weights) and multiplied by the quantized kernels, everything else
    /// f32. A GGUF file's matrices run as stored whatever this says.
    #[arg(long, default_value = "f32", value_parser = parse_dtype, value_name = "f32|f16|bf16|q8_0|q4_0")]
    pub dtype: WeightType,

    /// CPU kernels the model is built for: `avx512` (packed AVX-512 matmul), `avx2` (packed
    /// AVX2 matmul), `portable` (candle's own ops only, as on a CPU without AVX2), or `auto`
    /// (the widest this CPU supports) [default: $COURSE_CPU_KERNELS, else auto].
    #[arg(long, value_name = "auto|avx512|avx2|portable", value_parser = parse_kernels)]
    pub kernels: Option<Kernels>,
}

impl Default for RunArgs {
    fn default() -> Self {
        Self {
            device: DeviceChoice::Auto,
            dtype: WeightType::Dense(DType::F32),
            kernels: None,
        }
    }
}

/// A `--kernels` value: `auto` or one path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kernels(pub Option<KernelPath>);

fn parse_kernels(s: &str) -> std::result::Result<Kernels, String> {
    KernelPath::parse(s).map(Kernels)
}

impl RunArgs {
    /// The device, opened (a CUDA device that does not answer is an error that says what to do).
    pub fn open_device(&self) -> Result<Device> {
        self.device.open()
    }

    /// The kernel path the model is built for: `--kernels`, else `COURSE_CPU_KERNELS`, else the
    /// widest this CPU runs (`--kernels auto` is the widest whatever the variable says).
    pub fn kernel_path(&self) -> Result<KernelPath> {
        match self.kernels {
            Some(Kernels(Some(path))) => KernelPath::resolve(Some(path)),
            Some(Kernels(None)) => Ok(KernelPath::widest()),
            None => KernelPath::resolve(None),
        }
    }
}
