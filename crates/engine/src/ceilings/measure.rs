//! Measuring the ceilings: the memory read bandwidth every thread reaches together, and the
//! peak matmul throughput of the model's own `Linear` on its kernel path.

use std::time::Instant;

use candle_core::{DType, Device, Tensor};

use super::{Ceilings, Key};
use crate::cpu::KernelPath;
use crate::error::Result;
use crate::linear::{Layout, Linear};
use crate::settings::{self, Setting};

/// Measures `device`'s ceilings now (a few seconds).
pub fn measure(device: &Device, dtype: DType, kernels: KernelPath, key: &Key) -> Result<Ceilings> {
    let (mem_read_gbps, bandwidth_how, peak_gflops, peak_how) = if device.is_cuda() {
        measure_cuda(device, dtype)?
    } else {
        let threads = key.threads;
        let rounds = 5;
        let gbps = memory_read_bandwidth(threads, rounds);
        let cache = largest_cache_bytes().map_or(String::new(), |b| {
            format!(" (the largest cache is {} MiB)", b >> 20)
        });
        let how = format!(
            "{} MiB f32 buffer{cache} summed by {threads} threads, best of {rounds}",
            bandwidth_buffer_bytes() >> 20
        );
        let (gflops, peak_how) = linear_peak(device, dtype, kernels)?;
        (gbps, how, gflops, peak_how)
    };
    Ok(Ceilings {
        device: key.device.clone(),
        threads: key.threads,
        kernels: key.kernels.clone(),
        build: key.build.clone(),
        mem_read_gbps,
        peak_gflops,
        bandwidth_how,
        peak_how,
    })
}

/// Overrides the bandwidth buffer's size, in MiB (at least 16). For machines where a GiB read
/// five times is too slow to wait for and says nothing anyway: an emulator (the aarch64 tests
/// run under qemu), or a test.
pub const BUFFER_ENV: Setting = settings::CEILINGS_BUFFER_MIB;

/// Bytes summed by [`memory_read_bandwidth`]: 1 GiB, or twice the largest cache the CPU
/// reports if that is more (virtual machines may report a host's last-level cache of
/// hundreds of MiB), up to 4 GiB: a buffer the caches could hold would time the caches.
fn bandwidth_buffer_bytes() -> usize {
    buffer_bytes(BUFFER_ENV.var().as_deref(), largest_cache_bytes())
}

/// [`bandwidth_buffer_bytes`] for a given override (MiB, from [`BUFFER_ENV`]) and largest cache.
fn buffer_bytes(override_mib: Option<&str>, largest_cache: Option<usize>) -> usize {
    if let Some(mib) = parsed_override(override_mib) {
        return mib.max(16) << 20;
    }
    let at_least = 1usize << 30;
    largest_cache.map_or(at_least, |c| (2 * c).clamp(at_least, 4 << 30))
}

/// An override's number, or `None` where it is unset or unreadable (and so ignored).
fn parsed_override(value: Option<&str>) -> Option<usize> {
    value.and_then(|v| v.trim().parse().ok())
}

/// The largest CPU cache Linux reports (`/sys/devices/system/cpu/cpu0/cache/index*/size`,
/// e.g. `491520K`); `None` elsewhere.
fn largest_cache_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("size")).ok())
        .filter_map(|s| parse_cache_size(&s))
        .max()
}

fn parse_cache_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let (digits, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: usize = digits.parse().ok()?;
    match unit {
        "" => Some(n),
        "K" => Some(n << 10),
        "M" => Some(n << 20),
        "G" => Some(n << 30),
        _ => None,
    }
}

/// Reads a buffer larger than any cache `rounds` times with `threads` threads and returns
/// the best bandwidth seen, in GB/s (1e9 bytes/s): the memory side of the CPU roofline,
/// and the denominator of `gpt2 bench`'s decode floor.
pub fn memory_read_bandwidth(threads: usize, rounds: usize) -> f64 {
    let len = bandwidth_buffer_bytes() / 4;
    let chunk = len.div_ceil(threads.max(1));
    // Written, not just allocated: untouched pages all map to the one zero page, which the
    // caches would serve.
    let mut data = vec![0f32; len];
    std::thread::scope(|s| {
        for (i, part) in data.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                part.iter_mut()
                    .enumerate()
                    .for_each(|(j, x)| *x = ((i + j) % 7) as f32)
            });
        }
    });
    let mut best = 0f64;
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        let total: f32 = std::thread::scope(|s| {
            let parts: Vec<_> = data
                .chunks(chunk)
                .map(|c| s.spawn(move || sum_lanes(c)))
                .collect();
            parts.into_iter().map(|p| p.join().unwrap_or(0.0)).sum()
        });
        let secs = start.elapsed().as_secs_f64();
        std::hint::black_box(total);
        best = best.max((len * 4) as f64 / secs / 1e9);
    }
    best
}

/// Sums `xs` with the widest vectors this CPU has: a narrow loop (SSE2 is all a default
/// x86-64 build assumes) is bound by its adds before memory on a fast machine (on the
/// development machine, 21.5 GB/s against 25 with AVX-512 on the same 1 GiB).
fn sum_lanes(xs: &[f32]) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has the instructions the function is compiled for (checked above).
            return unsafe { sum_lanes_avx512(xs) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: as above.
            return unsafe { sum_lanes_avx2(xs) };
        }
    }
    sum_lanes_portable(xs)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sum_lanes_avx512(xs: &[f32]) -> f32 {
    sum_lanes_portable(xs)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sum_lanes_avx2(xs: &[f32]) -> f32 {
    sum_lanes_portable(xs)
}

/// 64 independent accumulators (four vectors of 16, eight of 8), so the loop waits on memory,
/// not on the latency of one add chain. Inlined into the callers above, it is compiled for
/// their instruction sets.
#[inline(always)]
fn sum_lanes_portable(xs: &[f32]) -> f32 {
    let mut acc = [0f32; 64];
    let mut chunks = xs.chunks_exact(64);
    for c in &mut chunks {
        for (a, x) in acc.iter_mut().zip(c) {
            *a += x;
        }
    }
    acc.iter().sum::<f32>() + chunks.remainder().iter().sum::<f32>()
}

/// The product the peak is measured on: a 512-token prefill through an MLP's `c_fc`
/// (768 → 3072), large enough that every kernel runs at its best.
pub const PEAK_SHAPE: (usize, usize, usize) = (512, 768, 3072);
const PEAK_RUNS: usize = 5;

/// Overrides the peak product's row count (tokens; at least 16, at most 512). For an emulator,
/// where six 1.2 GFLOP products take most of a minute and the figure says nothing about a real
/// machine: the aarch64 tests run under qemu with 32.
pub const PEAK_ROWS_ENV: Setting = settings::CEILINGS_PEAK_ROWS;

/// The product [`linear_peak`] times here: [`PEAK_SHAPE`], with [`PEAK_ROWS_ENV`]'s row count
/// where it is set.
fn peak_shape_here() -> (usize, usize, usize) {
    peak_shape(PEAK_ROWS_ENV.var().as_deref())
}

/// [`PEAK_SHAPE`] with a given override's row count (from [`PEAK_ROWS_ENV`]), where it is a number.
fn peak_shape(override_rows: Option<&str>) -> (usize, usize, usize) {
    let (m, k, n) = PEAK_SHAPE;
    (
        parsed_override(override_rows).map_or(m, |r| r.clamp(16, m)),
        k,
        n,
    )
}

/// The best throughput of [`peak_shape_here`]'s product through [`Linear`] laid out as the
/// model's layers are on `device`, with the weight in `dtype` and `x` in the activations' type
/// (f32 beside a half-type weight on the CPU's packed paths), and one line naming the kernel
/// that ran it (read off the profiler's row).
fn linear_peak(device: &Device, dtype: DType, kernels: KernelPath) -> Result<(f64, String)> {
    let (m, k, n) = peak_shape_here();
    let activations = kernels.activations(device, dtype);
    let w = Tensor::randn(0f32, 0.02, (k, n), device)?.to_dtype(dtype)?;
    let x = Tensor::randn(0f32, 1.0, (m, k), device)?.to_dtype(activations)?;
    let linear = Linear::with_layout(
        w,
        None,
        Layout::for_device(kernels, device, activations),
        kernels,
    )?;
    // One warm-up (packing scratch, thread pool), then the timed runs, each its own step.
    let mut prof = profiler::Profiler::new(profiler::Options {
        schedule: profiler::Schedule::new(0, 1, PEAK_RUNS, 1),
        ..profiler::Options::default()
    });
    let mut best = f64::INFINITY;
    while !prof.is_done() {
        let start = Instant::now();
        prof.step(|| linear.matmul(&x).map(drop))?;
        device.synchronize()?;
        best = best.min(start.elapsed().as_secs_f64());
    }
    let k_avg = prof.finish().key_averages(
        profiler::View::Op,
        false,
        profiler::SortBy::SelfCpuTimeTotal,
    );
    let kernel = k_avg
        .rows
        .iter()
        .find(|r| r.name == crate::ops::list::MATMUL.name)
        .and_then(|r| r.kernel.clone())
        .unwrap_or_else(|| "unlabelled".into());
    let gflops = 2.0 * (m * k * n) as f64 / best / 1e9;
    Ok((
        gflops,
        format!(
            "x ({m}×{k}) · W ({k}×{n}) through Linear ({kernel}), {dtype:?}, best of {PEAK_RUNS}"
        ),
    ))
}

#[cfg(feature = "cuda")]
fn measure_cuda(device: &Device, dtype: DType) -> Result<(f64, String, f64, String)> {
    // Device-to-device copy of 1 GiB (candle's copy of a contiguous tensor is one
    // cuMemcpyDtoD): every byte is read once and written once.
    let bytes = 1usize << 30;
    let src = Tensor::zeros(bytes / 4, DType::F32, device)?;
    let rounds = 5;
    let mut best = f64::INFINITY;
    for i in 0..rounds + 1 {
        device.synchronize()?;
        let start = Instant::now();
        let copy = src.copy()?;
        device.synchronize()?;
        // The first copy allocates the destination's pool memory: not counted.
        if i > 0 {
            best = best.min(start.elapsed().as_secs_f64());
        }
        drop(copy);
    }
    let gbps = 2.0 * bytes as f64 / best / 1e9;
    let bandwidth_how =
        format!("1 GiB device-to-device copy (bytes read + written), best of {rounds}");
    let f32_peak = cublas_peak(device, DType::F32)?;
    let (peak, peak_how) = if dtype == DType::F32 {
        (
            f32_peak,
            format!("cuBLAS {CUBLAS_N}³ f32 product through candle, best of {CUBLAS_RUNS}"),
        )
    } else {
        let peak = cublas_peak(device, dtype)?;
        (peak, format!("cuBLAS {CUBLAS_N}³ {dtype:?} product through candle, best of {CUBLAS_RUNS} (f32: {f32_peak:.0} GFLOP/s)"))
    };
    Ok((gbps, bandwidth_how, peak, peak_how))
}

#[cfg(feature = "cuda")]
const CUBLAS_N: usize = 4096;
#[cfg(feature = "cuda")]
const CUBLAS_RUNS: usize = 5;

/// The best throughput of a square `CUBLAS_N` product in `dtype` (candle's CUDA matmul is
/// cuBLAS), synchronised around each run.
#[cfg(feature = "cuda")]
fn cublas_peak(device: &Device, dtype: DType) -> Result<f64> {
    let n = CUBLAS_N;
    let a = Tensor::randn(0f32, 1.0, (n, n), device)?.to_dtype(dtype)?;
    let b = Tensor::randn(0f32, 1.0, (n, n), device)?.to_dtype(dtype)?;
    let mut best = f64::INFINITY;
    for i in 0..CUBLAS_RUNS + 1 {
        device.synchronize()?;
        let start = Instant::now();
        let c = a.matmul(&b)?;
        device.synchronize()?;
        if i > 0 {
            best = best.min(start.elapsed().as_secs_f64());
        }
        drop(c);
    }
    Ok(2.0 * (n * n * n) as f64 / best / 1e9)
}

#[cfg(not(feature = "cuda"))]
fn measure_cuda(_device: &Device, _dtype: DType) -> Result<(f64, String, f64, String)> {
    Err(crate::error::Error::Device(
        "this build has no CUDA support (built without --features cuda)".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceilings_bandwidth_sum_is_the_sum() {
        let xs: Vec<f32> = (0..1000).map(|i| (i % 7) as f32).collect();
        let expected: f32 = xs.iter().sum();
        assert_eq!(sum_lanes(&xs), expected);
        assert_eq!(sum_lanes(&xs[..37]), xs[..37].iter().sum::<f32>());
        assert_eq!(sum_lanes(&[]), 0.0);
    }

    #[test]
    fn the_ceilings_bandwidth_buffer_outgrows_the_reported_caches() {
        assert_eq!(parse_cache_size("491520K\n"), Some(491_520 << 10));
        assert_eq!(parse_cache_size("32M"), Some(32 << 20));
        assert_eq!(parse_cache_size("48"), Some(48));
        assert_eq!(parse_cache_size("big"), None);
        let buffer = buffer_bytes(None, largest_cache_bytes());
        assert!((1 << 30..=4 << 30).contains(&buffer));
        if let Some(cache) = largest_cache_bytes().filter(|&c| c <= 2 << 30) {
            assert!(
                buffer >= 2 * cache,
                "{buffer} bytes against a {cache}-byte cache"
            );
        }
        assert_eq!(
            buffer_bytes(None, Some(480 << 20)),
            1 << 30,
            "at least 1 GiB"
        );
        assert_eq!(
            buffer_bytes(None, Some(600 << 20)),
            1200 << 20,
            "twice a 600 MiB cache"
        );
        assert_eq!(buffer_bytes(None, Some(8 << 30)), 4 << 30, "at most 4 GiB");
        // The override (the aarch64 tests under qemu set it), with a floor.
        assert_eq!(buffer_bytes(Some("32"), Some(480 << 20)), 32 << 20);
        assert_eq!(buffer_bytes(Some("1"), None), 16 << 20);
        assert_eq!(
            buffer_bytes(Some("lots"), None),
            1 << 30,
            "an unreadable override is ignored"
        );
    }

    #[test]
    fn the_peak_product_is_a_512_token_c_fc_unless_an_emulator_asks_for_fewer_rows() {
        assert_eq!(peak_shape(None), PEAK_SHAPE);
        assert_eq!(peak_shape(Some("32")), (32, 768, 3072));
        assert_eq!(peak_shape(Some("1")), (16, 768, 3072), "a floor");
        assert_eq!(
            peak_shape(Some("4096")),
            PEAK_SHAPE,
            "never more than the real shape"
        );
        assert_eq!(
            peak_shape(Some("many")),
            PEAK_SHAPE,
            "an unreadable override is ignored"
        );
    }

    #[test]
    fn the_measured_ceilings_are_positive_and_name_how() {
        let path = KernelPath::widest();
        let key = Key::current(&Device::Cpu, DType::F32, path).unwrap();
        let c = measure(&Device::Cpu, DType::F32, path, &key).unwrap();
        assert!(key.matches(&c), "{c:?}");
        assert!(c.mem_read_gbps > 0.0 && c.peak_gflops > 0.0, "{c:?}");
        let (m, k, _) = peak_shape_here();
        assert!(
            c.peak_how.contains(&format!("{m}×{k}")) && c.peak_how.contains("Linear"),
            "{}",
            c.peak_how
        );
        assert!(
            !c.peak_how.contains("unlabelled"),
            "the profiler's row names the kernel: {}",
            c.peak_how
        );
    }
}
