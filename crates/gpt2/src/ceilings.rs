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
//! and kernel path: a different machine, thread count, debug build or forced kernel path
//! gets its own measurement. `--remeasure-ceilings` measures again (after a measurement on a
//! busy machine, say).

use std::path::{Path, PathBuf};
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::linear::{Layout, Linear};

pub use profiler::Ceilings;

/// Bump when a measurement changes, so files measured the old way are measured again
/// (2: a 1 GiB or larger buffer, best of 5, instead of 512 MiB, best of 3; 3: summed with
/// the CPU's widest vectors).
const CACHE_VERSION: u32 = 3;

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
    /// The key of a run on `device` with `dtype` in this process (its thread count and
    /// kernel path).
    pub fn current(device: &Device, dtype: DType) -> Result<Key> {
        let name = if device.is_cuda() { gpu_name(device)? } else { profiler::cpu_model() };
        Ok(Key {
            device: name,
            threads: candle_core::utils::get_num_threads(),
            build: build().to_string(),
            kernels: crate::cpu::run_kernels(device).to_string(),
            dtype: format!("{dtype:?}").to_lowercase(),
        })
    }

    /// The cache file's name: every part of the key, readable, safe in any file system.
    pub fn file_name(&self) -> String {
        let device: String = self.device.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' }).collect();
        let device = device.split('-').filter(|s| !s.is_empty()).collect::<Vec<_>>().join("-");
        format!("{device}-{}t-{}-{}-{}.json", self.threads, self.build, self.kernels, self.dtype)
    }

    /// One line for the "measuring" note.
    pub fn describe(&self) -> String {
        format!("{}, {} threads, {} build, {} kernels, {}", self.device, self.threads, self.build, self.kernels, self.dtype)
    }

    fn matches(&self, c: &Ceilings) -> bool {
        c.device == self.device && c.threads == self.threads && c.build == self.build && c.kernels == self.kernels
    }
}

/// The file in the cache: the key is stored whole, so a file copied from another machine
/// (or renamed) is recognised as foreign rather than trusted.
#[derive(Debug, Serialize, Deserialize)]
struct CacheFile {
    version: u32,
    key: Key,
    ceilings: Ceilings,
}

/// `ceilings/` under the course's cache folder (`$GPT2_COURSE_CACHE`, else
/// `$XDG_CACHE_HOME/gpt2-course`, else `~/.cache/gpt2-course`).
pub fn cache_folder() -> PathBuf {
    crate::weights::cache_dir().join("ceilings")
}

/// The ceilings of `device` for a model in `dtype`: from the cache, or measured now (with a
/// one-line note) and cached. `remeasure` ignores the cache.
pub fn for_device(device: &Device, dtype: DType, remeasure: bool, note: &mut dyn FnMut(&str)) -> Result<Ceilings> {
    let key = Key::current(device, dtype)?;
    let path = cache_folder().join(key.file_name());
    cached_or_measured(&path, &key, remeasure, note, || measure(device, dtype, &key))
}

/// The ceilings in `path` when it holds a measurement for `key`; otherwise `measure()`'s,
/// written to `path`. A file that is unreadable, corrupt, of an older version or of another
/// key is measured again, with a one-line note saying why.
pub fn cached_or_measured(
    path: &Path,
    key: &Key,
    remeasure: bool,
    note: &mut dyn FnMut(&str),
    measure: impl FnOnce() -> Result<Ceilings>,
) -> Result<Ceilings> {
    if !remeasure {
        match read_cache(path, key) {
            Ok(Some(c)) => return Ok(c),
            Ok(None) => {}
            Err(why) => note(&format!("note: {} {why}; measuring again", path.display())),
        }
    }
    note(&format!("measuring this machine's ceilings once ({}), cached in {}", key.describe(), path.display()));
    let ceilings = measure()?;
    // A cache that cannot be written costs a re-measurement next time, not this run.
    if let Err(e) = write_cache(path, key, &ceilings) {
        note(&format!("note: cannot cache the ceilings ({e}); they will be measured again next run"));
    }
    Ok(ceilings)
}

/// `Ok(None)` when there is no file; `Err(why)` when there is one that cannot be used.
fn read_cache(path: &Path, key: &Key) -> std::result::Result<Option<Ceilings>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    let file: CacheFile = serde_json::from_str(&text).map_err(|e| format!("is not a ceilings file ({e})"))?;
    if file.version != CACHE_VERSION {
        return Err(format!("was measured by another version of the measurement ({}, this one is {CACHE_VERSION})", file.version));
    }
    if file.key != *key || !key.matches(&file.ceilings) {
        return Err(format!("holds another machine's ceilings ({})", file.key.describe()));
    }
    let c = file.ceilings;
    if !(c.mem_read_gbps.is_finite() && c.mem_read_gbps > 0.0 && c.peak_gflops.is_finite() && c.peak_gflops > 0.0) {
        return Err(format!("holds impossible ceilings ({} GB/s, {} GFLOP/s)", c.mem_read_gbps, c.peak_gflops));
    }
    Ok(Some(c))
}

/// Written to a temporary file beside `path` and renamed over it, so a reader never sees
/// half a file and two concurrent writers leave one whole one.
fn write_cache(path: &Path, key: &Key, ceilings: &Ceilings) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let file = CacheFile { version: CACHE_VERSION, key: key.clone(), ceilings: ceilings.clone() };
    let json = serde_json::to_string_pretty(&file).map_err(|e| Error::Input(e.to_string()))?;
    let mut tmp = tempfile::Builder::new().prefix(".ceilings-").tempfile_in(dir).map_err(|e| Error::io(dir, e))?;
    std::io::Write::write_all(&mut tmp, json.as_bytes()).map_err(|e| Error::io(tmp.path(), e))?;
    tmp.persist(path).map_err(|e| Error::io(path, e.error))?;
    Ok(())
}

/// Measures `device`'s ceilings now (a few seconds).
pub fn measure(device: &Device, dtype: DType, key: &Key) -> Result<Ceilings> {
    let (mem_read_gbps, bandwidth_how, peak_gflops, peak_how) = if device.is_cuda() {
        measure_cuda(device, dtype)?
    } else {
        let threads = key.threads;
        let rounds = 5;
        let gbps = memory_read_bandwidth(threads, rounds);
        let cache = largest_cache_bytes().map_or(String::new(), |b| format!(" (the largest cache is {} MiB)", b >> 20));
        let how = format!("{} MiB f32 buffer{cache} summed by {threads} threads, best of {rounds}", bandwidth_buffer_bytes() >> 20);
        let (gflops, peak_how) = linear_peak(device, dtype)?;
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
pub const BUFFER_ENV: &str = "GPT2_CEILINGS_BUFFER_MIB";

/// Bytes summed by [`memory_read_bandwidth`]: 1 GiB, or twice the largest cache the CPU
/// reports if that is more (virtual machines may report a host's last-level cache of
/// hundreds of MiB), up to 4 GiB: a buffer the caches could hold would time the caches.
fn bandwidth_buffer_bytes() -> usize {
    buffer_bytes(std::env::var(BUFFER_ENV).ok().as_deref(), largest_cache_bytes())
}

/// [`bandwidth_buffer_bytes`] for a given override (MiB, from [`BUFFER_ENV`]) and largest cache.
fn buffer_bytes(override_mib: Option<&str>, largest_cache: Option<usize>) -> usize {
    if let Some(mib) = override_mib.and_then(|v| v.trim().parse::<usize>().ok()) {
        return mib.max(16) << 20;
    }
    let at_least = 1usize << 30;
    largest_cache.map_or(at_least, |c| (2 * c).clamp(at_least, 4 << 30))
}

/// The largest CPU cache Linux reports (`/sys/devices/system/cpu/cpu0/cache/index*/size`,
/// e.g. `491520K`); `None` elsewhere.
fn largest_cache_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("size")).ok()).filter_map(|s| parse_cache_size(&s)).max()
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
            s.spawn(move || part.iter_mut().enumerate().for_each(|(j, x)| *x = ((i + j) % 7) as f32));
        }
    });
    let mut best = 0f64;
    for _ in 0..rounds.max(1) {
        let start = Instant::now();
        let total: f32 = std::thread::scope(|s| {
            let parts: Vec<_> = data.chunks(chunk).map(|c| s.spawn(move || sum_lanes(c))).collect();
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

/// The best throughput of `PEAK_SHAPE` through [`Linear`] laid out as the model's layers are
/// on `device`, and one line naming the kernel that ran it (read off the profiler's row).
fn linear_peak(device: &Device, dtype: DType) -> Result<(f64, String)> {
    let (m, k, n) = PEAK_SHAPE;
    let w = Tensor::randn(0f32, 0.02, (k, n), device)?.to_dtype(dtype)?;
    let x = Tensor::randn(0f32, 1.0, (m, k), device)?.to_dtype(dtype)?;
    let linear = Linear::with_layout(w, None, Layout::for_device(device, dtype))?;
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
    let k_avg = prof.finish().key_averages(profiler::View::Op, false, profiler::SortBy::SelfCpuTimeTotal);
    let kernel = k_avg.rows.iter().find(|r| r.name == "matmul").and_then(|r| r.kernel.clone()).unwrap_or_else(|| "unlabelled".into());
    let gflops = 2.0 * (m * k * n) as f64 / best / 1e9;
    Ok((gflops, format!("x ({m}×{k}) · W ({k}×{n}) through Linear ({kernel}), {dtype:?}, best of {PEAK_RUNS}")))
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
    let bandwidth_how = format!("1 GiB device-to-device copy (bytes read + written), best of {rounds}");
    let f32_peak = cublas_peak(device, DType::F32)?;
    let (peak, peak_how) = if dtype == DType::F32 {
        (f32_peak, format!("cuBLAS {CUBLAS_N}³ f32 product through candle, best of {CUBLAS_RUNS}"))
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
    Err(Error::Device("this build has no CUDA support (built without --features cuda)".into()))
}

#[cfg(feature = "cuda")]
fn gpu_name(device: &Device) -> Result<String> {
    let stream = device.as_cuda_device()?.cuda_stream();
    stream.context().name().map_err(|e| Error::Device(format!("cannot read the GPU's name: {e}")))
}

#[cfg(not(feature = "cuda"))]
fn gpu_name(_device: &Device) -> Result<String> {
    Err(Error::Device("this build has no CUDA support (built without --features cuda)".into()))
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
mod tests {
    use super::*;

    fn key() -> Key {
        Key { device: "Intel(R) Xeon(R) Processor".into(), threads: 2, build: "release".into(), kernels: "avx512".into(), dtype: "f32".into() }
    }

    fn ceilings(key: &Key, gbps: f64) -> Ceilings {
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

    /// Runs `cached_or_measured` with a measurement that returns `gbps` and counts its calls.
    fn lookup(path: &Path, key: &Key, remeasure: bool, gbps: f64) -> (Ceilings, usize, Vec<String>) {
        let (mut calls, mut notes) = (0, Vec::new());
        let c = cached_or_measured(path, key, remeasure, &mut |n| notes.push(n.to_string()), || {
            calls += 1;
            Ok(ceilings(key, gbps))
        })
        .unwrap();
        (c, calls, notes)
    }

    #[test]
    fn the_ceilings_key_names_every_part_of_what_was_measured() {
        let k = key();
        assert_eq!(k.file_name(), "intel-r-xeon-r-processor-2t-release-avx512-f32.json");
        let others = [
            Key { threads: 1, ..key() },
            Key { build: "debug".into(), ..key() },
            Key { kernels: "portable".into(), ..key() },
            Key { device: "AMD EPYC 7B13".into(), ..key() },
            Key { dtype: "bf16".into(), ..key() },
        ];
        for other in &others {
            assert_ne!(other.file_name(), k.file_name(), "{other:?}");
        }
        // A name with path separators stays one file name.
        let odd = Key { device: "../NVIDIA H200/x".into(), ..key() };
        assert!(!odd.file_name().contains('/') && !odd.file_name().starts_with('.'), "{}", odd.file_name());
    }

    #[test]
    fn the_current_ceilings_key_is_this_process() {
        let k = Key::current(&Device::Cpu, DType::F32).unwrap();
        assert_eq!(k.threads, candle_core::utils::get_num_threads());
        assert_eq!(k.kernels, crate::cpu::KernelPath::selected().name());
        
        assert_eq!(k.build, if cfg!(debug_assertions) { "debug" } else { "release" });
        assert_eq!(k.dtype, "f32");
    }

    #[test]
    fn a_ceilings_cache_hit_does_not_measure_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ceilings").join(key().file_name());
        let (first, calls, notes) = lookup(&path, &key(), false, 20.0);
        assert_eq!((calls, first.mem_read_gbps), (1, 20.0));
        assert!(notes.len() == 1 && notes[0].starts_with("measuring this machine's ceilings once"), "{notes:?}");
        assert!(notes[0].contains(&path.display().to_string()), "{notes:?}");
        // The second run reads the file: no measurement, no note, the first figures.
        let (second, calls, notes) = lookup(&path, &key(), false, 99.0);
        assert_eq!((calls, second), (0, first.clone()));
        assert!(notes.is_empty(), "{notes:?}");
        // Forced, it measures and replaces the file.
        let (third, calls, _) = lookup(&path, &key(), true, 30.0);
        assert_eq!((calls, third.mem_read_gbps), (1, 30.0));
        assert_eq!(lookup(&path, &key(), false, 99.0).0.mem_read_gbps, 30.0);
        // Nothing but the cache file is left in the folder (the temporary file was renamed).
        assert_eq!(std::fs::read_dir(path.parent().unwrap()).unwrap().count(), 1);
    }

    #[test]
    fn a_corrupt_ceilings_cache_file_is_measured_again_with_a_note() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(key().file_name());
        for bad in ["{\"version\": 1, \"key\": ", "", "[1, 2, 3]"] {
            std::fs::write(&path, bad).unwrap();
            let (c, calls, notes) = lookup(&path, &key(), false, 21.0);
            assert_eq!((calls, c.mem_read_gbps), (1, 21.0), "{bad:?}");
            assert!(notes[0].contains("is not a ceilings file") && notes[0].ends_with("measuring again"), "{notes:?}");
            assert_eq!(notes.len(), 2, "one line on the bad file, one on measuring: {notes:?}");
            // And the file is whole again.
            assert_eq!(lookup(&path, &key(), false, 99.0).1, 0);
        }
    }

    #[test]
    fn a_foreign_or_impossible_ceilings_file_is_measured_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(key().file_name());
        let other = Key { threads: 16, ..key() };
        let write = |version: u32, k: &Key, c: Ceilings| {
            std::fs::write(&path, serde_json::to_string(&CacheFile { version, key: k.clone(), ceilings: c }).unwrap()).unwrap()
        };
        let cases: [(u32, Key, Ceilings, &str); 4] = [
            (CACHE_VERSION, other.clone(), ceilings(&other, 50.0), "another machine's"),
            // The key says this machine, the figures say another: not trusted either.
            (CACHE_VERSION, key(), ceilings(&other, 50.0), "another machine's"),
            (CACHE_VERSION + 1, key(), ceilings(&key(), 50.0), "another version"),
            (CACHE_VERSION, key(), ceilings(&key(), 0.0), "impossible"),
        ];
        for (version, k, c, why) in cases {
            write(version, &k, c);
            let (c, calls, notes) = lookup(&path, &key(), false, 22.0);
            assert_eq!((calls, c.mem_read_gbps), (1, 22.0), "{why}");
            assert!(notes[0].contains(why), "{why}: {notes:?}");
        }
    }

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
        assert!(buffer >= 1 << 30 && buffer <= 4 << 30);
        if let Some(cache) = largest_cache_bytes().filter(|&c| c <= 2 << 30) {
            assert!(buffer >= 2 * cache, "{buffer} bytes against a {cache}-byte cache");
        }
        assert_eq!(buffer_bytes(None, Some(480 << 20)), 1 << 30, "at least 1 GiB");
        assert_eq!(buffer_bytes(None, Some(600 << 20)), 1200 << 20, "twice a 600 MiB cache");
        assert_eq!(buffer_bytes(None, Some(8 << 30)), 4 << 30, "at most 4 GiB");
        // The override (the aarch64 tests under qemu set it), with a floor.
        assert_eq!(buffer_bytes(Some("32"), Some(480 << 20)), 32 << 20);
        assert_eq!(buffer_bytes(Some("1"), None), 16 << 20);
        assert_eq!(buffer_bytes(Some("lots"), None), 1 << 30, "an unreadable override is ignored");
    }

    #[test]
    fn the_measured_ceilings_are_positive_and_name_how() {
        let key = Key::current(&Device::Cpu, DType::F32).unwrap();
        let c = measure(&Device::Cpu, DType::F32, &key).unwrap();
        assert!(key.matches(&c), "{c:?}");
        assert!(c.mem_read_gbps > 0.0 && c.peak_gflops > 0.0, "{c:?}");
        assert!(c.peak_how.contains("512×768") && c.peak_how.contains("Linear"), "{}", c.peak_how);
        assert!(!c.peak_how.contains("unlabelled"), "the profiler's row names the kernel: {}", c.peak_how);
    }
}
