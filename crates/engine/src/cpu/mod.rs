//! The engine's own CPU kernels, and which of them a run may use.
//!
//! - [`packed_matmul`]: `x · Wᵀ` with `W` packed into column panels, AVX-512 or AVX2 (every
//!   linear layer and both attention products, on either path);
//! - [`elementwise`]: in-place LayerNorm, softmax, mask, bias, bias + GELU and bias +
//!   residual passes, compiled for AVX-512 or AVX2;
//! - [`decode_attention`]: one new query per sequence against its own cached keys and values,
//!   read where the cache keeps them (a decode step's attention).
//!
//! A model is built for one [`KernelPath`] and holds it ([`crate::Model::kernel_path`]): the
//! widest the CPU supports, or the one `--kernels` (or `COURSE_CPU_KERNELS`) names, so that a
//! machine with AVX-512 can run, test and time what a laptop without it runs. Its weights are
//! laid out for that path when it loads, and every op it runs is given the path: there is no
//! process-wide choice to change under a loaded model.

pub mod awake;
pub mod decode_attention;
pub mod elementwise;
pub mod packed_matmul;

use std::sync::OnceLock;

use candle_core::{CpuStorage, Device, Layout, Storage};

use crate::error::{Error, Result};

/// The environment variable that forces a kernel path: `auto` (the default), `avx512`,
/// `avx2` or `portable` (its alias GPT2_CPU_KERNELS is still read: [`crate::settings`]).
pub const ENV: &str = crate::settings::CPU_KERNELS.name;

/// Which CPU kernels a run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KernelPath {
    /// The packed AVX-512 matmul for every product, element-wise kernels 16 floats wide.
    Avx512,
    /// The packed matmul's AVX2 kernel for every product, element-wise kernels 8 floats wide:
    /// most laptops without AVX-512.
    Avx2,
    /// Candle's own CPU ops only: what a CPU without AVX2 (and aarch64, today) runs.
    Portable,
}

impl KernelPath {
    /// Widest first.
    pub const ALL: [KernelPath; 3] = [KernelPath::Avx512, KernelPath::Avx2, KernelPath::Portable];

    /// The name `COURSE_CPU_KERNELS`, `--kernels` and the reports use.
    pub fn name(self) -> &'static str {
        match self {
            KernelPath::Avx512 => "avx512",
            KernelPath::Avx2 => "avx2",
            KernelPath::Portable => "portable",
        }
    }

    /// `auto` is `None`: the widest path the CPU supports.
    pub fn parse(s: &str) -> std::result::Result<Option<KernelPath>, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "auto" => Ok(None),
            name => KernelPath::ALL
                .into_iter()
                .find(|p| p.name() == name)
                .map(Some)
                .ok_or_else(|| {
                    format!("`{s}` is not a kernel path: use auto, avx512, avx2 or portable")
                }),
        }
    }

    /// Whether this CPU has the instructions the path's kernels are compiled for.
    pub fn is_supported(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            // F16C widens f16 weights; every AVX2 CPU has it.
            let avx2 = has!("avx2") && has!("fma") && has!("f16c");
            match self {
                KernelPath::Avx512 => {
                    avx2 && has!("avx512f") && has!("avx512dq") && has!("avx512vl")
                }
                KernelPath::Avx2 => avx2,
                KernelPath::Portable => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == KernelPath::Portable
        }
    }

    /// The paths this CPU can run, widest first (`portable` always).
    pub fn supported() -> Vec<KernelPath> {
        KernelPath::ALL
            .into_iter()
            .filter(|p| p.is_supported())
            .collect()
    }

    /// The widest path this CPU supports: what `auto` runs.
    pub fn widest() -> KernelPath {
        KernelPath::supported()[0]
    }

    /// The path a model is built for: `asked` (a `--kernels` value) when given, else
    /// `COURSE_CPU_KERNELS`'s, else the widest this CPU supports. A path this CPU cannot run, or a
    /// variable that names none, is an error that says what to use instead.
    pub fn resolve(asked: Option<KernelPath>) -> Result<KernelPath> {
        match asked {
            Some(path) if path.is_supported() => Ok(path),
            Some(path) => Err(Error::Device(unsupported(
                path,
                &format!("--kernels {}", path.name()),
            ))),
            None => from_env().clone().map_err(Error::Device),
        }
    }

    /// Which of our kernels run an op on a tensor of `dtype` on `device` when the model holds
    /// this path: this path's, or `None` where candle's op does (another device or dtype, or
    /// the `portable` path). The one rule for element-wise ops, attention's products and the
    /// packed weight layout.
    pub fn fast_for(self, device: &Device, dtype: candle_core::DType) -> Option<KernelPath> {
        (device.is_cpu() && dtype == candle_core::DType::F32 && self != KernelPath::Portable)
            .then_some(self)
    }

    /// The type a model's activations run in (so its KV cache and every op but the dense
    /// layers' products) when its weights are stored as `weights` on `device`: f32 on the
    /// CPU's `avx512` and `avx2` paths, whose packed products read a bf16 or f16 weight as
    /// stored and widen it in registers; the weights' own type elsewhere (CUDA, and the
    /// `portable` path, whose candle ops cannot mix types). The one rule for what runs in
    /// which type.
    pub fn activations(self, device: &Device, weights: candle_core::DType) -> candle_core::DType {
        if device.is_cpu() && self != KernelPath::Portable {
            candle_core::DType::F32
        } else {
            weights
        }
    }

    /// What a report records as a model's kernels: this path's name on the CPU, `cuda` there.
    pub fn run_name(self, device: &Device) -> &'static str {
        if device.is_cuda() {
            "cuda"
        } else {
            self.name()
        }
    }
}

impl std::fmt::Display for KernelPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `COURSE_CPU_KERNELS` (or its alias), read once.
fn from_env() -> &'static std::result::Result<KernelPath, String> {
    static FROM_ENV: OnceLock<std::result::Result<KernelPath, String>> = OnceLock::new();
    FROM_ENV.get_or_init(|| {
        let Some(value) = crate::settings::CPU_KERNELS.var() else {
            return Ok(KernelPath::widest());
        };
        match KernelPath::parse(&value) {
            Ok(None) => Ok(KernelPath::widest()),
            Ok(Some(path)) if path.is_supported() => Ok(path),
            Ok(Some(path)) => Err(unsupported(path, &format!("{ENV}={value}"))),
            Err(e) => Err(format!("{ENV}: {e} (or unset it)")),
        }
    })
}

/// Why `what` cannot run here, and what to use instead.
fn unsupported(path: KernelPath, what: &str) -> String {
    let needs = match path {
        KernelPath::Avx512 => "AVX-512 (F, DQ, VL) with AVX2, FMA and F16C",
        _ => "AVX2, FMA and F16C",
    };
    let has: Vec<&str> = KernelPath::supported().iter().map(|p| p.name()).collect();
    format!(
        "{what} needs {needs}, which this CPU ({}) lacks; it supports {}: set {ENV} (or --kernels) to one of those, or to auto",
        cpu_model().unwrap_or_else(|| std::env::consts::ARCH.to_string()),
        has.join(", ")
    )
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// Runs `f` on a thread of the compute pool (rayon's), where the kernels' parallel loops start
/// at once: from any other thread, each parallel kernel call hands its work to the pool and
/// waits for a sleeping worker to wake, 17 µs a call on this project's 2-core VM and 55 µs
/// after 100 µs idle (against under 8 µs from inside the pool), and a decode step makes over a
/// hundred such calls. The tools that run a model (the benchmark cases, the profile, generation)
/// run it through this; from a pool thread it is `f()`.
pub fn on_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    match rayon::current_thread_index() {
        Some(_) => f(),
        None => rayon::join(f, || ()).0,
    }
}

/// The contiguous f32 values a CPU tensor's storage holds for `layout`, or an error naming
/// the op (every kernel here reads its operands through this).
pub(crate) fn cpu_f32<'a>(
    storage: &'a Storage,
    layout: &Layout,
    op: &str,
) -> candle_core::Result<&'a [f32]> {
    match storage {
        Storage::Cpu(cpu) => f32_slice(cpu, layout, op),
        _ => candle_core::bail!("{op}: expects a tensor on the CPU"),
    }
}

pub(crate) fn f32_slice<'a>(
    s: &'a CpuStorage,
    l: &Layout,
    op: &str,
) -> candle_core::Result<&'a [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&v[a..b]),
        _ => candle_core::bail!("{op}: expects a contiguous f32 tensor"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for p in KernelPath::ALL {
            assert_eq!(KernelPath::parse(p.name()), Ok(Some(p)));
        }
        assert_eq!(KernelPath::parse("auto"), Ok(None));
        assert_eq!(KernelPath::parse(" AVX2 "), Ok(Some(KernelPath::Avx2)));
        let err = KernelPath::parse("sse4").unwrap_err();
        assert!(err.contains("sse4") && err.contains("portable"), "{err}");
    }

    #[test]
    fn portable_is_always_supported_and_last() {
        let s = KernelPath::supported();
        assert_eq!(s.last(), Some(&KernelPath::Portable));
        assert_eq!(KernelPath::widest(), s[0]);
        // Narrower paths than a supported one are supported too.
        let first = KernelPath::ALL.iter().position(|p| *p == s[0]).unwrap();
        assert_eq!(s, KernelPath::ALL[first..].to_vec());
    }

    #[test]
    fn an_unsupported_path_is_refused_with_what_the_cpu_has() {
        let msg = unsupported(KernelPath::Avx512, "COURSE_CPU_KERNELS=avx512");
        assert!(
            msg.starts_with("COURSE_CPU_KERNELS=avx512 needs AVX-512")
                && msg.contains("it supports")
                && msg.contains("portable"),
            "{msg}"
        );
        if let Some(missing) = KernelPath::ALL.into_iter().find(|p| !p.is_supported()) {
            let err = KernelPath::resolve(Some(missing)).unwrap_err().to_string();
            assert!(
                err.contains("--kernels") && err.contains(ENV) && err.contains(missing.name()),
                "{err}"
            );
        }
        // Every supported path is given back as asked.
        for path in KernelPath::supported() {
            assert_eq!(KernelPath::resolve(Some(path)).unwrap(), path);
        }
    }
}
