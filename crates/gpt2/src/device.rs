//! `--device cpu|cuda|auto` and `--dtype f32|f16|bf16`, with errors that say what to do.

use std::str::FromStr;

use candle_core::{DType, Device};

use crate::error::{Error, Result};

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
            Self::Cuda => open_cuda(),
            Self::Auto => Ok(open_cuda().unwrap_or(Device::Cpu)),
        }
    }
}

#[cfg(feature = "cuda")]
fn open_cuda() -> Result<Device> {
    Device::new_cuda(0).map_err(|e| Error::Device(format!("cannot open CUDA device 0: {e} (is an NVIDIA driver installed and a GPU visible?)")))
}

#[cfg(not(feature = "cuda"))]
fn open_cuda() -> Result<Device> {
    Err(Error::Device(
        "this build has no CUDA support: rebuild with `--features cuda` (see scripts/build-cuda.sh), or use --device cpu".into(),
    ))
}

/// `--dtype`: f32 everywhere, f16 and bf16 on CUDA.
pub fn parse_dtype(s: &str) -> std::result::Result<DType, String> {
    match s.to_ascii_lowercase().as_str() {
        "f32" | "float32" => Ok(DType::F32),
        "f16" | "float16" | "half" => Ok(DType::F16),
        "bf16" | "bfloat16" => Ok(DType::BF16),
        other => Err(format!("unknown dtype \"{other}\": use f32, f16 or bf16")),
    }
}

/// Half precision runs on CUDA only: candle's CPU kernels for it are not the ones a
/// course should time.
pub fn check_dtype(device: &Device, dtype: DType) -> Result<()> {
    match dtype {
        DType::F32 => Ok(()),
        DType::F16 | DType::BF16 if device.is_cuda() => Ok(()),
        DType::F16 | DType::BF16 => Err(Error::Device(format!("{dtype:?} runs on CUDA only; use --dtype f32 on the CPU"))),
        other => Err(Error::Device(format!("{other:?} is not a supported model dtype; use f32, f16 or bf16"))),
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
        assert!("tpu".parse::<DeviceChoice>().unwrap_err().contains("use cpu, cuda or auto"));
    }

    #[cfg(not(feature = "cuda"))]
    #[test]
    fn cuda_without_the_feature_says_how_to_get_it() {
        let err = DeviceChoice::Cuda.open().unwrap_err().to_string();
        assert!(err.contains("--features cuda"), "{err}");
        assert!(DeviceChoice::Auto.open().unwrap().is_cpu());
    }

    #[test]
    fn half_precision_is_refused_on_cpu() {
        assert!(check_dtype(&Device::Cpu, DType::F16).unwrap_err().to_string().contains("CUDA only"));
        assert!(check_dtype(&Device::Cpu, DType::F32).is_ok());
    }
}
