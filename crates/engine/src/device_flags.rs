//! `--device cpu|cuda|auto` and `--dtype f32|f16|bf16|q8_0|q4_0`, with errors that say what to do.

use std::str::FromStr;

use candle_core::{DType, Device};

use crate::error::{Error, Result};
use crate::ggml_type::GgmlType;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeviceChoice {
    Cpu,
    Cuda,
    /// CUDA when this build has it and a GPU answers, else CPU.
    #[default]
    Auto,
}

impl FromStr for DeviceChoice {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.to_ascii_lowercase().as_str() {
            "cpu" => Ok(Self::Cpu),
            "cuda" | "gpu" => Ok(Self::Cuda),
            "auto" => Ok(Self::Auto),
            other => Err(format!("unknown device \"{other}\": use cpu, cuda or auto")),
        }
    }
}

impl DeviceChoice {
    pub fn open(self) -> Result<Device> {
        match self {
            Self::Cpu => Ok(Device::Cpu),
            Self::Cuda => {
                try_cuda().map_err(|why| Error::Device(format!("{why}: {}", cuda_next_step())))
            }
            Self::Auto => Ok(try_cuda().unwrap_or_else(|why| {
                // Auto is the default device: a run that lands on the CPU says why, once per
                // process (a program may open its device more than once).
                static SAID: std::sync::Once = std::sync::Once::new();
                SAID.call_once(|| eprintln!("{}", auto_fallback_line(&why)));
                Device::Cpu
            })),
        }
    }
}

/// The one line `--device auto` prints when it falls back to the CPU. The reason may carry a
/// driver's multi-line message: it is folded onto one line.
fn auto_fallback_line(why: &str) -> String {
    format!(
        "cuda: {}; using the CPU",
        why.split_whitespace().collect::<Vec<_>>().join(" ")
    )
}

/// Opens CUDA device 0, or says why not (without the next step: `--device cuda` adds it,
/// `--device auto` falls back).
#[cfg(feature = "cuda")]
fn try_cuda() -> std::result::Result<Device, String> {
    let device = Device::new_cuda(0).map_err(|e| format!("cannot open CUDA device 0: {e}"))?;
    if let Err(e) = keep_freed_device_memory(&device) {
        eprintln!(
            "warning: cannot set the CUDA memory pool's release threshold ({e}): freed memory goes back to \
             the driver at every synchronise, so `--cuda-timing sync` and `gpt2 bench` also time re-mapping it"
        );
    }
    Ok(device)
}

/// Keeps memory that candle frees inside the device's memory pool across synchronisations.
///
/// cudarc allocates with `cuMemAllocAsync` (when the device supports memory pools), which
/// draws from the device's current pool: the default pool, since nothing here sets another.
/// That pool's `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` defaults to 0, so at every stream, event or
/// context synchronise the driver hands all freed memory back to the OS and the next
/// allocations map it again. `--cuda-timing sync` synchronises around every op (about 1,100
/// times per GPT-2 small forward) and `gpt2 bench` after every repeat, so both would time that
/// re-mapping, which PyTorch's caching allocator never does: the sync/events comparison and the
/// ratios to PyTorch would be biased against us. A threshold of u64::MAX keeps it all, as a
/// caching allocator does.
///
/// Not tested here: it needs a GPU (no CPU-side test can reach the driver call). On the GPU
/// machine, a failure is printed as a warning by `try_cuda`, and the run goes on.
#[cfg(feature = "cuda")]
fn keep_freed_device_memory(device: &Device) -> std::result::Result<(), String> {
    use candle_core::cuda_backend::cudarc::driver::{result, sys};

    let stream = device
        .as_cuda_device()
        .map_err(|e| e.to_string())?
        .cuda_stream();
    let context = stream.context();
    if !context.has_async_alloc() {
        // cudarc falls back to cuMemAlloc, which no pool governs.
        return Ok(());
    }
    let mut threshold: sys::cuuint64_t = u64::MAX;
    // SAFETY: `cu_device` comes from the live context candle opened (it owns it for as long as
    // `device` lives); the default pool belongs to that device; the attribute takes a pointer
    // to a cuuint64_t, which `threshold` is, alive for the call.
    unsafe {
        let pool = result::device::get_default_mem_pool(context.cu_device())
            .map_err(|e| format!("cuDeviceGetDefaultMemPool: {e}"))?;
        result::mem_pool::set_attribute(
            pool,
            sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
            (&mut threshold as *mut sys::cuuint64_t).cast(),
        )
        .map_err(|e| format!("cuMemPoolSetAttribute(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD): {e}"))?;
    }
    Ok(())
}

#[cfg(feature = "cuda")]
fn cuda_next_step() -> &'static str {
    "check that the NVIDIA driver is installed and `nvidia-smi` lists a GPU, or use --device cpu"
}

/// Why a build without the `cuda` feature cannot open a GPU; the `--device auto` line and the
/// `--device cuda` error both start with it.
#[cfg(not(feature = "cuda"))]
const NO_CUDA_SUPPORT: &str = "this build has no CUDA support (built without --features cuda)";

#[cfg(not(feature = "cuda"))]
fn try_cuda() -> std::result::Result<Device, String> {
    Err(NO_CUDA_SUPPORT.into())
}

#[cfg(not(feature = "cuda"))]
fn cuda_next_step() -> &'static str {
    "rebuild with `--features cuda` (see scripts/build-cuda.sh), or use --device cpu"
}

/// What `--dtype` asks for: dense weights of a candle type, or matrices quantized at load into
/// one of llama.cpp's block types (everything else staying f32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightType {
    Dense(DType),
    /// The dense layers' and the head's matrices as `Q8_0` or `Q4_0` blocks
    /// ([`crate::quant::quantize`]), multiplied by the quantized kernels; the rest f32.
    Quantized(GgmlType),
}

impl WeightType {
    /// The candle type the model's dense tensors load in: the type itself, or f32 beside
    /// quantized matrices.
    pub fn dense(self) -> DType {
        match self {
            Self::Dense(d) => d,
            Self::Quantized(_) => DType::F32,
        }
    }

    /// The block type the matrices are quantized to, where they are.
    pub fn quantized(self) -> Option<GgmlType> {
        match self {
            Self::Dense(_) => None,
            Self::Quantized(t) => Some(t),
        }
    }

    /// As `--dtype` and reports write it: `f32`, `bf16`, `q8_0`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Dense(d) => d.as_str(),
            Self::Quantized(t) => t.name(),
        }
    }

    /// The dense type, or an error saying that `family` quantizes no checkpoint at load and what
    /// runs quantized weights instead (a GGUF file).
    pub fn dense_only(self, family: &str) -> Result<DType> {
        match self {
            Self::Dense(d) => Ok(d),
            Self::Quantized(t) => Err(Error::Input(format!(
                "--dtype {t}: {family} checkpoints are not quantized at load here (GPT-2's are); \
                 give a GGUF file of the model in {t} instead (llama.cpp's convert_hf_to_gguf.py --outtype q8_0, \
                 or llama-quantize FILE.gguf OUT.gguf {}), which runs as stored whatever --dtype says",
                t.name().to_ascii_uppercase()
            ))),
        }
    }
}

impl From<DType> for WeightType {
    fn from(d: DType) -> Self {
        Self::Dense(d)
    }
}

impl std::fmt::Display for WeightType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `--dtype`: the type the weights are stored in: f32, f16 or bf16 on every device, or q8_0 or
/// q4_0 (llama.cpp's blocks of 32, quantized at load) for the matrices.
pub fn parse_dtype(s: &str) -> std::result::Result<WeightType, String> {
    match s.to_ascii_lowercase().as_str() {
        "f32" | "float32" => Ok(DType::F32.into()),
        "f16" | "float16" | "half" => Ok(DType::F16.into()),
        "bf16" | "bfloat16" => Ok(DType::BF16.into()),
        "q8_0" => Ok(WeightType::Quantized(GgmlType::Q8_0)),
        "q4_0" => Ok(WeightType::Quantized(GgmlType::Q4_0)),
        other => Err(format!(
            "\"{other}\" is not a weight type this engine runs: it stores weights as f32, f16 or bf16, or quantizes \
             the matrices at load to q8_0 or q4_0 (llama.cpp's blocks of 32); run --dtype bf16 for half the bytes of \
             f32, q8_0 for about a quarter{}",
            if other.starts_with('q') || other.starts_with("int") {
                " (other quantized types, the K-quants among them, run from a GGUF file: --model FILE.gguf)"
            } else {
                ""
            }
        )),
    }
}

/// A model's weights can be f32, f16 or bf16 on every device: on CUDA the whole model runs in
/// that type; on the CPU the packed paths keep the activations in f32 and the `portable` path
/// runs candle's ops in the half type (`cpu::KernelPath::activations`).
pub fn check_dtype(dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 | DType::F16 | DType::BF16 => Ok(()),
        other => Err(Error::Device(format!(
            "{other:?} is not a supported model dtype; use f32, f16 or bf16"
        ))),
    }
}

/// Waits for queued device work, so host clocks measure finished work.
pub fn synchronize(device: &Device) -> Result<()> {
    Ok(device.synchronize()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_devices_and_rejects_unknown_ones() {
        assert_eq!("CPU".parse::<DeviceChoice>(), Ok(DeviceChoice::Cpu));
        assert!("tpu"
            .parse::<DeviceChoice>()
            .unwrap_err()
            .contains("use cpu, cuda or auto"));
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_the_feature_says_how_to_get_it() {
        let err = DeviceChoice::Cuda.open().unwrap_err().to_string();
        assert!(
            err.contains(
                "no CUDA support (built without --features cuda): rebuild with `--features cuda`"
            ),
            "{err}"
        );
        assert!(DeviceChoice::Auto.open().unwrap().is_cpu());
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn auto_in_a_cpu_build_names_the_missing_feature() {
        let why = try_cuda().unwrap_err();
        assert_eq!(
            auto_fallback_line(&why),
            "cuda: this build has no CUDA support (built without --features cuda); using the CPU"
        );
    }

    #[test]
    fn the_auto_line_folds_a_multi_line_driver_message() {
        let line = auto_fallback_line("cannot open CUDA device 0: DriverError(CUDA_ERROR_NO_DEVICE,\n   \"no CUDA-capable device\")");
        assert_eq!(line, "cuda: cannot open CUDA device 0: DriverError(CUDA_ERROR_NO_DEVICE, \"no CUDA-capable device\"); using the CPU");
        assert_eq!(line.lines().count(), 1);
    }

    #[test]
    fn dtypes_parse_to_dense_or_quantized_weights() {
        assert_eq!(parse_dtype("BF16"), Ok(WeightType::Dense(DType::BF16)));
        let q8 = parse_dtype("q8_0").unwrap();
        assert_eq!(q8, WeightType::Quantized(GgmlType::Q8_0));
        assert_eq!(
            (q8.dense(), q8.quantized()),
            (DType::F32, Some(GgmlType::Q8_0))
        );
        assert_eq!(parse_dtype("q4_0").unwrap().name(), "q4_0");
        assert_eq!(parse_dtype("f16").unwrap().quantized(), None);
        // A K-quant is not quantized at load: the message names the GGUF route, not a
        // blanket "not implemented".
        let err = parse_dtype("q4_k").unwrap_err();
        assert!(
            err.contains("q8_0 or q4_0") && err.contains("--model FILE.gguf"),
            "{err}"
        );
        assert!(!err.contains("not implemented"), "{err}");
        assert!(!parse_dtype("f64").unwrap_err().contains("GGUF"));
    }

    #[test]
    fn a_family_without_quantize_at_load_names_the_gguf_route() {
        assert_eq!(
            WeightType::Dense(DType::F16).dense_only("Llama").unwrap(),
            DType::F16
        );
        let err = WeightType::Quantized(GgmlType::Q4_0)
            .dense_only("Llama")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("--dtype q4_0: Llama")
                && err.contains("llama-quantize FILE.gguf OUT.gguf Q4_0"),
            "{err}"
        );
    }

    #[test]
    fn the_three_float_types_are_model_types_and_others_are_not() {
        for dtype in [DType::F32, DType::F16, DType::BF16] {
            assert!(check_dtype(dtype).is_ok(), "{dtype:?}");
        }
        let err = check_dtype(DType::F64).unwrap_err().to_string();
        assert!(
            err.contains("F64") && err.contains("f32, f16 or bf16"),
            "{err}"
        );
    }
}
