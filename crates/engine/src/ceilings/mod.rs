//! This machine's ceilings: the memory bandwidth and the matmul throughput a profile's
//! roofline columns are read against, measured with the engine's own code.
//!
//! A roofline is only as honest as its two numbers. Datasheet peaks describe a chip, not
//! what this build of this engine reaches on it with this many threads, so both are
//! measured here:
//! - memory read bandwidth: a buffer far larger than any cache, summed by every thread
//!   (on CUDA: a device-to-device copy, bytes read plus bytes written);
//! - peak matmul throughput: a large product through [`Linear`], so it runs the kernel the
//!   run's kernel path picks for the model's own layers (on CUDA: cuBLAS through candle, in
//!   the model's dtype; the f32 figure is given beside it).
//!
//! Measuring takes a few seconds, so it is done once per machine and cached as JSON under
//! the course's cache folder (`ceilings/`), keyed by CPU model or GPU name, threads, build
//! and kernel path: a different machine, thread count, debug build or kernel path gets
//! its own measurement. `--remeasure-ceilings` measures again (after a measurement on a
//! busy machine, say).

mod cache;
mod measure;

use candle_core::{DType, Device};
use serde::{Deserialize, Serialize};

use crate::cpu::KernelPath;
use crate::error::{Error, Result};

pub use cache::{cache_folder, cached_or_measured};
pub use measure::{measure, memory_read_bandwidth, BUFFER_ENV, PEAK_ROWS_ENV, PEAK_SHAPE};
pub use profiler::Ceilings;

/// What a measurement depends on; one cache file per key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    /// CPU model or GPU name.
    pub device: String,
    pub threads: usize,
    /// "release" or "debug".
    pub build: String,
    /// The run's kernel path (`avx512`, `avx2`, `portable`), or `cuda`.
    pub kernels: String,
    /// The dtype the peak is measured in (the model's).
    pub dtype: String,
}

impl Key {
    /// The key of a run on `device` with `dtype` and the CPU kernel path `kernels`, in this
    /// process (its thread count).
    pub fn current(device: &Device, dtype: DType, kernels: KernelPath) -> Result<Key> {
        let name = if device.is_cuda() {
            gpu_name(device)?
        } else {
            profiler::cpu_model()
        };
        Ok(Key {
            device: name,
            threads: candle_core::utils::get_num_threads(),
            build: build().to_string(),
            kernels: kernels.run_name(device).to_string(),
            dtype: format!("{dtype:?}").to_lowercase(),
        })
    }

    /// The cache file's name: every part of the key, readable, safe in any file system.
    pub fn file_name(&self) -> String {
        let device: String = self
            .device
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '-'
                }
            })
            .collect();
        let device = device
            .split('-')
            .filter(|s| !s.is_empty())
            .collect::<Vec<_>>()
            .join("-");
        format!(
            "{device}-{}t-{}-{}-{}.json",
            self.threads, self.build, self.kernels, self.dtype
        )
    }

    /// One line for the "measuring" note.
    pub fn describe(&self) -> String {
        format!(
            "{}, {} threads, {} build, {} kernels, {}",
            self.device, self.threads, self.build, self.kernels, self.dtype
        )
    }

    fn matches(&self, c: &Ceilings) -> bool {
        c.device == self.device
            && c.threads == self.threads
            && c.build == self.build
            && c.kernels == self.kernels
    }
}

/// The ceilings of `device` for a model in `dtype`: from the cache, or measured now (with a
/// one-line note) and cached. `remeasure` ignores the cache.
pub fn for_device(
    device: &Device,
    dtype: DType,
    kernels: KernelPath,
    remeasure: bool,
    note: &mut dyn FnMut(&str),
) -> Result<Ceilings> {
    let key = Key::current(device, dtype, kernels)?;
    let path = cache_folder().join(key.file_name());
    cached_or_measured(&path, &key, remeasure, note, || {
        measure(device, dtype, kernels, &key)
    })
}

#[cfg(feature = "cuda")]
fn gpu_name(device: &Device) -> Result<String> {
    let stream = device.as_cuda_device()?.cuda_stream();
    stream
        .context()
        .name()
        .map_err(|e| Error::Device(format!("cannot read the GPU's name: {e}")))
}

#[cfg(not(feature = "cuda"))]
fn gpu_name(_device: &Device) -> Result<String> {
    Err(Error::Device(
        "this build has no CUDA support (built without --features cuda)".into(),
    ))
}

/// Named as the report's environment names it, so a report and its ceilings agree.
fn build() -> &'static str {
    if profiler::unoptimised_build() {
        "debug"
    } else {
        "release"
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn key() -> Key {
        Key {
            device: "Intel(R) Xeon(R) Processor".into(),
            threads: 2,
            build: "release".into(),
            kernels: "avx512".into(),
            dtype: "f32".into(),
        }
    }

    pub(crate) fn ceilings(key: &Key, gbps: f64) -> Ceilings {
        Ceilings {
            device: key.device.clone(),
            threads: key.threads,
            kernels: key.kernels.clone(),
            build: key.build.clone(),
            mem_read_gbps: gbps,
            peak_gflops: 120.0,
            bandwidth_how: "test".into(),
            peak_how: "test".into(),
        }
    }

    #[test]
    fn the_ceilings_key_names_every_part_of_what_was_measured() {
        let k = key();
        assert_eq!(
            k.file_name(),
            "intel-r-xeon-r-processor-2t-release-avx512-f32.json"
        );
        let others = [
            Key {
                threads: 1,
                ..key()
            },
            Key {
                build: "debug".into(),
                ..key()
            },
            Key {
                kernels: "portable".into(),
                ..key()
            },
            Key {
                device: "AMD EPYC 7B13".into(),
                ..key()
            },
            Key {
                dtype: "bf16".into(),
                ..key()
            },
        ];
        for other in &others {
            assert_ne!(other.file_name(), k.file_name(), "{other:?}");
        }
        // A name with path separators stays one file name.
        let odd = Key {
            device: "../NVIDIA H200/x".into(),
            ..key()
        };
        assert!(
            !odd.file_name().contains('/') && !odd.file_name().starts_with('.'),
            "{}",
            odd.file_name()
        );
    }

    #[test]
    fn the_current_ceilings_key_is_this_process() {
        for path in KernelPath::supported() {
            assert_eq!(
                Key::current(&Device::Cpu, DType::F32, path)
                    .unwrap()
                    .kernels,
                path.name()
            );
        }
        let k = Key::current(&Device::Cpu, DType::F32, KernelPath::Portable).unwrap();
        assert_eq!(k.threads, candle_core::utils::get_num_threads());
        assert_eq!(
            k.build,
            if cfg!(debug_assertions) {
                "debug"
            } else {
                "release"
            }
        );
        assert_eq!(k.dtype, "f32");
    }
}
