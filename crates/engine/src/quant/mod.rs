//! Quantized weights, kept quantized: dequantization of every type the GGUF reader knows, and
//! the quantized matrix product `x · Wᵀ` with `W` as a GGUF file stores it.
//!
//! The product ([`QMatrix::matmul`]) is one profiler row, like a dense layer's: its work is
//! counted at the weight's stored width, scales included (`Q8_0` 34 bytes per 32 weights,
//! `Q4_0` 18 per 32, `Q1_0` 18 per 128), so the row's GB/s and roofline are the bytes it really
//! streams; its kernel column says which of these ran ([`label`]):
//!
//! - `Q8_0`, `Q4_0` and `Q1_0` on our own kernels ([`kernels`]): `x` is quantized first, per
//!   row, to 8-bit blocks of 32 values with an f32 scale each (llama.cpp's `block_q8_0`, whose
//!   scale is f16: ours keeps it f32, one rounding fewer), and each block's product is an integer
//!   dot product, scaled once by both blocks' scales. On the `avx512` path with AVX-512 VNNI
//!   (`vpdpbusd`, 512 bits wide: `Q8_0` and `Q4_0` two blocks a vector in tiles of weight rows
//!   by activation rows; `Q1_0` its sign bits used as a byte mask,
//!   [`kernels`]) or with AVX2 (`vpmaddubsw` then `vpmaddwd`), and a portable
//!   scalar loop on every other CPU (aarch64 included). What the activations' rounding costs:
//!   each value moves by at most half its block's step, `max|x| / 254`, so a product moves by at
//!   most `Σ_blocks (Σ |w|) · max|x_block| / 254` ([`activation_rounding_bound`]), which the
//!   tests hold every kernel to.
//! - The K-quants `Q4_K` and `Q6_K`: candle's quantized matmul (`candle_core::quantized`,
//!   which quantizes `x` to its `Q8_K`), labelled `candle-q4_k` / `candle-q6_k`.
//!
//! The weights stay in the file's block layout: a row of `W` is `k / block` blocks, read with
//! unaligned loads; nothing is repacked, so the bytes counted are the bytes held.

pub mod kernels;
mod quantize;

pub use quantize::quantize;

use std::borrow::Cow;

use candle_core::quantized::{GgmlDType, QMatMul, QStorage, QTensor};
use candle_core::{Device, DeviceLocation, Tensor};
use half::{bf16, f16};
use rayon::prelude::*;

use crate::cpu::KernelPath;
use crate::error::{Error, Result};
pub use crate::ggml_type::GgmlType;

/// What a quantized product's `kernel` column says ran.
pub mod label {
    pub const AVX512_Q8_0: &str = "quant-avx512-vnni-q8_0";
    pub const AVX512_Q4_0: &str = "quant-avx512-vnni-q4_0";
    pub const AVX512_Q1_0: &str = "quant-avx512-vnni-q1_0";
    pub const AVX2_Q8_0: &str = "quant-avx2-q8_0";
    pub const AVX2_Q4_0: &str = "quant-avx2-q4_0";
    pub const AVX2_Q1_0: &str = "quant-avx2-q1_0";
    pub const PORTABLE_Q8_0: &str = "quant-portable-q8_0";
    pub const PORTABLE_Q4_0: &str = "quant-portable-q4_0";
    pub const PORTABLE_Q1_0: &str = "quant-portable-q1_0";
    pub const CANDLE_Q4_K: &str = "candle-q4_k";
    pub const CANDLE_Q6_K: &str = "candle-q6_k";
    pub const CANDLE_CUDA_Q8_0: &str = "candle-cuda-q8_0";
    pub const CANDLE_CUDA_Q4_0: &str = "candle-cuda-q4_0";
    pub const CANDLE_CUDA_Q4_K: &str = "candle-cuda-q4_k";
    pub const CANDLE_CUDA_Q6_K: &str = "candle-cuda-q6_k";
}

/// The values of `n` weights stored as `ty` in `bytes`, as f32 (in order). ggml's definitions
/// (`ggml-quants.c`'s `dequantize_row_*`); the K-quants through candle's, which follows them.
pub fn dequantize(ty: GgmlType, bytes: &[u8], n: usize) -> std::result::Result<Vec<f32>, String> {
    let need = ty.bytes_for(&[n as u64])?;
    if bytes.len() as u64 != need {
        return Err(format!(
            "{} bytes for {n} {} values, which take {need}",
            bytes.len(),
            ty.name()
        ));
    }
    let mut out = vec![0f32; n];
    match ty {
        GgmlType::F32 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
                *o = f32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
        }
        GgmlType::F16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = f16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        GgmlType::BF16 => {
            for (o, c) in out.iter_mut().zip(bytes.chunks_exact(2)) {
                *o = bf16::from_le_bytes([c[0], c[1]]).to_f32();
            }
        }
        GgmlType::Q8_0 | GgmlType::Q4_0 | GgmlType::Q1_0 => {
            let (bs, ts) = (ty.block_size(), ty.type_size());
            for (o, b) in out.chunks_exact_mut(bs).zip(bytes.chunks_exact(ts)) {
                dequantize_block(ty, b, o);
            }
        }
        GgmlType::Q4K | GgmlType::Q6K => {
            let t = candle_qtensor(ty, bytes, &[n], &Device::Cpu).map_err(|e| e.to_string())?;
            out = t
                .dequantize(&Device::Cpu)
                .and_then(|t| t.to_vec1::<f32>())
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(out)
}

/// One block of `Q8_0`, `Q4_0` or `Q1_0` (`block`: its bytes) into `out` (its weights).
fn dequantize_block(ty: GgmlType, block: &[u8], out: &mut [f32]) {
    let d = f16::from_le_bytes([block[0], block[1]]).to_f32();
    let qs = &block[2..];
    match ty {
        GgmlType::Q8_0 => {
            for (o, &q) in out.iter_mut().zip(qs) {
                *o = d * (q as i8) as f32;
            }
        }
        GgmlType::Q4_0 => {
            for j in 0..16 {
                out[j] = d * ((qs[j] & 0x0F) as i32 - 8) as f32;
                out[j + 16] = d * ((qs[j] >> 4) as i32 - 8) as f32;
            }
        }
        GgmlType::Q1_0 => {
            for (j, o) in out.iter_mut().enumerate() {
                let bit = (qs[j / 8] >> (j % 8)) & 1;
                *o = if bit == 1 { d } else { -d };
            }
        }
        _ => unreachable!("dequantize_block is called for Q8_0, Q4_0 and Q1_0 only"),
    }
}

/// Candle's type for one of ours, where candle has it (`Q1_0`: not in candle 0.11).
fn candle_type(ty: GgmlType) -> Option<GgmlDType> {
    Some(match ty {
        GgmlType::F32 => GgmlDType::F32,
        GgmlType::F16 => GgmlDType::F16,
        GgmlType::BF16 => GgmlDType::BF16,
        GgmlType::Q8_0 => GgmlDType::Q8_0,
        GgmlType::Q4_0 => GgmlDType::Q4_0,
        GgmlType::Q4K => GgmlDType::Q4K,
        GgmlType::Q6K => GgmlDType::Q6K,
        GgmlType::Q1_0 => return None,
    })
}

fn candle_qtensor(
    ty: GgmlType,
    bytes: &[u8],
    shape: &[usize],
    device: &Device,
) -> candle_core::Result<QTensor> {
    let Some(dtype) = candle_type(ty) else {
        candle_core::bail!("candle has no {} type", ty.name())
    };
    let storage = QStorage::from_data(Cow::Borrowed(bytes), device, dtype)?;
    QTensor::new(storage, shape)
}

/// A row-major `[m, k]` activation quantized to 8-bit blocks of 32 values: `q` the codes
/// (row after row), `d` one f32 scale a block (row after row), so value `i` of row `r` is
/// about `d[r·k/32 + i/32] · q[r·k + i]`.
pub struct ActQ8 {
    pub q: Vec<i8>,
    pub d: Vec<f32>,
    pub m: usize,
    pub k: usize,
    /// For the 512-bit kernels (empty where the CPU has no AVX-512 VNNI): each pair of blocks
    /// (`k / 64` pairs a row, rounded up; an odd last block pairs with nothing), sixteen lanes
    /// of minus the sum of four codes (lanes 0–7 the first block, 8–15 the second, as the codes
    /// lie in a 64-byte vector) and sixteen of the blocks' scales, each block's repeated eight
    /// times. Computed once a product, they spare every weight tile redoing it.
    pub pair_neg_sums: Vec<i32>,
    pub pair_scales: Vec<f32>,
}

/// Values an activation block holds.
pub const ACT_BLOCK: usize = 32;

impl ActQ8 {
    /// `x` (`m` rows of `k`, `k` a multiple of 32): each block scaled by its largest magnitude
    /// over 127 and rounded to the nearest code (halves away from zero), as ggml's
    /// `quantize_row_q8_0_ref` does.
    pub fn quantize(x: &[f32], m: usize, k: usize) -> Self {
        Self::quantize_with(x, m, k, kernels::has_avx512_vnni())
    }

    /// [`Self::quantize`] with the AVX-512 loop (`simd`, where the CPU has it) or the scalar one
    /// (the tests hold the two to the same bits).
    fn quantize_with(x: &[f32], m: usize, k: usize, simd: bool) -> Self {
        assert_eq!(x.len(), m * k);
        assert!(k.is_multiple_of(ACT_BLOCK));
        let mut q = vec![0i8; m * k];
        let mut d = vec![0f32; m * k / ACT_BLOCK];
        let simd = simd && kernels::has_avx512_vnni();
        let work = |(xs, (qs, ds)): (&[f32], (&mut [i8], &mut [f32]))| {
            #[cfg(target_arch = "x86_64")]
            if simd {
                // SAFETY: the CPU has AVX-512 (checked); the three slices are one row's values,
                // codes and scales.
                unsafe { kernels::quantize_row_512(xs, qs, ds) };
                return;
            }
            let _ = simd;
            for ((xb, qb), db) in xs
                .chunks_exact(ACT_BLOCK)
                .zip(qs.chunks_exact_mut(ACT_BLOCK))
                .zip(ds.iter_mut())
            {
                let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs()));
                let scale = amax / 127.0;
                let inv = if scale == 0.0 { 0.0 } else { 1.0 / scale };
                for (qv, &v) in qb.iter_mut().zip(xb) {
                    *qv = (v * inv).round().clamp(-127.0, 127.0) as i8;
                }
                *db = scale;
            }
        };
        if m * k >= 1 << 16 {
            x.par_chunks(k)
                .zip(q.par_chunks_mut(k).zip(d.par_chunks_mut(k / ACT_BLOCK)))
                .for_each(work);
        } else {
            x.chunks(k)
                .zip(q.chunks_mut(k).zip(d.chunks_mut(k / ACT_BLOCK)))
                .for_each(work);
        }
        #[cfg(target_arch = "x86_64")]
        let (pair_neg_sums, pair_scales) = if simd {
            let lanes = m * (k / ACT_BLOCK).div_ceil(2) * 16;
            let (mut neg, mut scales) = (vec![0i32; lanes], vec![0f32; lanes]);
            // SAFETY: the CPU has AVX-512 VNNI (checked); the codes and scales are whole rows
            // and the two outputs hold 16 lanes for each of their pairs.
            unsafe { kernels::pair_sums_512(&q, &d, k, &mut neg, &mut scales) };
            (neg, scales)
        } else {
            (Vec::new(), Vec::new())
        };
        // No 512-bit kernels elsewhere.
        #[cfg(not(target_arch = "x86_64"))]
        let (pair_neg_sums, pair_scales) = (Vec::new(), Vec::new());
        Self {
            q,
            d,
            m,
            k,
            pair_neg_sums,
            pair_scales,
        }
    }

    /// The values the codes stand for (what the kernels multiply), row-major.
    pub fn dequantized(&self) -> Vec<f32> {
        self.q
            .iter()
            .enumerate()
            .map(|(i, &q)| q as f32 * self.d[i / ACT_BLOCK])
            .collect()
    }
}

/// The most a product `w · x` (one row of `W`, one of `x`, `k` values each) can move when `x` is
/// rounded to 8-bit blocks of 32: each value by at most half a step, `max|x_block| / 254`.
pub fn activation_rounding_bound(w: &[f32], x: &[f32]) -> f32 {
    w.chunks(ACT_BLOCK)
        .zip(x.chunks(ACT_BLOCK))
        .map(|(wb, xb)| {
            let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs()));
            wb.iter().map(|v| v.abs()).sum::<f32>() * amax / 254.0
        })
        .sum()
}

/// Which kernel a [`QMatrix`] runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kernel {
    /// Ours, AVX-512 VNNI (`vpdpbusd`), 512 bits wide.
    Avx512Vnni,
    /// Ours, AVX2.
    Avx2,
    /// Ours, a scalar loop.
    Portable,
    /// Candle's quantized matmul (the K-quants; any type candle has on CUDA).
    Candle,
}

impl Kernel {
    /// The kernel for `ty` on the device at `device` in a model built for `path`, or why there
    /// is none. It takes the device's location, not the device, so that the CUDA choice (and
    /// its refusal of a type candle lacks there) is tested on a machine without a GPU.
    pub fn choose(
        ty: GgmlType,
        path: KernelPath,
        device: &DeviceLocation,
    ) -> std::result::Result<Kernel, String> {
        if !ty.is_quantized() {
            return Err(format!("{} is not a quantized type", ty.name()));
        }
        if !matches!(device, DeviceLocation::Cpu) {
            return match candle_type(ty) {
                Some(_) => Ok(Kernel::Candle),
                None => Err(format!(
                    "no {} matmul on {device:?}: candle has no {} kernel there and the engine's run on the CPU only; run with --device cpu",
                    ty.name(),
                    ty.name()
                )),
            };
        }
        if matches!(ty, GgmlType::Q4K | GgmlType::Q6K) {
            return Ok(Kernel::Candle);
        }
        Ok(match path {
            KernelPath::Avx512 if kernels::has_avx512_vnni() => Kernel::Avx512Vnni,
            KernelPath::Avx512 | KernelPath::Avx2 => Kernel::Avx2,
            KernelPath::Portable => Kernel::Portable,
        })
    }

    /// The label of this kernel on `ty` (`device`: candle's on CUDA).
    pub fn label(self, ty: GgmlType, device: &Device) -> &'static str {
        use GgmlType::*;
        match (self, ty) {
            (Kernel::Avx512Vnni, Q8_0) => label::AVX512_Q8_0,
            (Kernel::Avx512Vnni, Q4_0) => label::AVX512_Q4_0,
            (Kernel::Avx512Vnni, _) => label::AVX512_Q1_0,
            (Kernel::Avx2, Q8_0) => label::AVX2_Q8_0,
            (Kernel::Avx2, Q4_0) => label::AVX2_Q4_0,
            (Kernel::Avx2, _) => label::AVX2_Q1_0,
            (Kernel::Portable, Q8_0) => label::PORTABLE_Q8_0,
            (Kernel::Portable, Q4_0) => label::PORTABLE_Q4_0,
            (Kernel::Portable, _) => label::PORTABLE_Q1_0,
            (Kernel::Candle, t) if device.is_cuda() => match t {
                Q8_0 => label::CANDLE_CUDA_Q8_0,
                Q4_0 => label::CANDLE_CUDA_Q4_0,
                Q4K => label::CANDLE_CUDA_Q4_K,
                _ => label::CANDLE_CUDA_Q6_K,
            },
            (Kernel::Candle, Q4K) => label::CANDLE_Q4_K,
            (Kernel::Candle, _) => label::CANDLE_Q6_K,
        }
    }
}

/// A weight `W` of `n` rows (output features) by `k` (input features), kept in a quantized
/// GGUF type, as the file stores it: row after row, each row `k / block` blocks.
pub struct QMatrix {
    ty: GgmlType,
    n: usize,
    k: usize,
    /// The blocks (ours), or candle's copy of them.
    data: Data,
    kernel: Kernel,
    device: Device,
}

/// A matrix's blocks, as the file stores them. On Linux a matrix of 64 KiB or more is moved
/// into memory the kernel is asked to back with 2 MiB pages (`MADV_HUGEPAGE`; this machine's
/// setting gives them only on request): a decode step streams every matrix once, and with 4 KiB
/// pages it crosses a page, and a TLB miss, every 4 KiB, where the hardware prefetchers stop
/// (a 30 MB Q8_0 matrix streamed at 24 GB/s on 4 KiB pages, 37 on 2 MiB ones). A layer's
/// matrices are smaller than a 2 MiB page, so those below 4 MiB share mappings of
/// [`ARENA_CHUNK`] bytes, one after the other, each mapping freed with the last matrix in it.
/// The bytes are the same; where a mapping fails they stay where they were.
enum Blocks {
    Heap(Vec<u8>),
    #[cfg(target_os = "linux")]
    Mapped(memmap2::MmapMut),
    /// `len` bytes from `offset` of a shared mapping, written once (in [`Blocks::hold`]) and
    /// only read after.
    #[cfg(target_os = "linux")]
    Shared {
        chunk: std::sync::Arc<Chunk>,
        offset: usize,
        len: usize,
    },
}

/// A mapping matrices share, and the address it was written through (taken once, before it
/// was shared, so the writes of each matrix's own bytes need no `&mut` to the whole).
#[cfg(target_os = "linux")]
struct Chunk {
    /// Held for its lifetime: unmapped when the last matrix in it goes.
    _map: memmap2::MmapMut,
    base: *mut u8,
}

// SAFETY: each matrix writes its own bytes of the mapping once, before any reader can see
// them (under the arena's lock, in `hold`), and afterwards they are only read.
#[cfg(target_os = "linux")]
unsafe impl Send for Chunk {}
// SAFETY: as above.
#[cfg(target_os = "linux")]
unsafe impl Sync for Chunk {}

/// Bytes a shared mapping holds.
#[cfg(target_os = "linux")]
const ARENA_CHUNK: usize = 64 << 20;

/// The shared mapping being filled, and how much of it is used.
#[cfg(target_os = "linux")]
static ARENA: std::sync::Mutex<Option<(std::sync::Arc<Chunk>, usize)>> =
    std::sync::Mutex::new(None);

#[cfg(target_os = "linux")]
fn huge_mapping(len: usize) -> Option<memmap2::MmapMut> {
    let map = memmap2::MmapMut::map_anon(len).ok()?;
    // Asked before any write, so the pages the first writes touch are huge ones.
    let _ = map.advise(memmap2::Advice::HugePage);
    Some(map)
}

impl Blocks {
    fn hold(bytes: Vec<u8>) -> Self {
        #[cfg(target_os = "linux")]
        {
            let len = bytes.len();
            if len >= 4 << 20 {
                if let Some(mut map) = huge_mapping(len) {
                    map.copy_from_slice(&bytes);
                    return Blocks::Mapped(map);
                }
            } else if len >= 64 << 10 {
                let mut arena = ARENA.lock().unwrap_or_else(|e| e.into_inner());
                if arena
                    .as_ref()
                    .is_none_or(|(_, used)| used + len > ARENA_CHUNK)
                {
                    *arena = huge_mapping(ARENA_CHUNK).map(|mut map| {
                        let base = map.as_mut_ptr();
                        (std::sync::Arc::new(Chunk { _map: map, base }), 0)
                    });
                }
                if let Some((chunk, used)) = arena.as_mut() {
                    let offset = *used;
                    // SAFETY: offset .. offset + len lies inside the mapping (checked above),
                    // and no other matrix holds those bytes: each takes the bytes after the
                    // last one's, under this lock.
                    unsafe {
                        std::ptr::copy_nonoverlapping(bytes.as_ptr(), chunk.base.add(offset), len)
                    };
                    // The next matrix starts on a cache line.
                    *used = (offset + len).next_multiple_of(64);
                    return Blocks::Shared {
                        chunk: chunk.clone(),
                        offset,
                        len,
                    };
                }
            }
        }
        Blocks::Heap(bytes)
    }
}

impl std::ops::Deref for Blocks {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Blocks::Heap(v) => v,
            #[cfg(target_os = "linux")]
            Blocks::Mapped(m) => m,
            #[cfg(target_os = "linux")]
            // Through the address, not the whole mapping: another matrix may be writing its
            // own bytes of it at this moment.
            // SAFETY: offset .. offset + len lies inside the mapping, which `chunk` keeps
            // alive; those bytes were written in `hold` before this matrix existed and are
            // never written again.
            Blocks::Shared { chunk, offset, len } => unsafe {
                std::slice::from_raw_parts(chunk.base.add(*offset), *len)
            },
        }
    }
}

enum Data {
    Blocks(Blocks),
    Candle(QMatMul),
}

impl QMatrix {
    /// `bytes` holds `n` rows of `k` weights of type `ty`; the kernel is chosen for `path` on
    /// `device` ([`Kernel::choose`]).
    pub fn new(
        ty: GgmlType,
        n: usize,
        k: usize,
        bytes: Vec<u8>,
        path: KernelPath,
        device: &Device,
    ) -> Result<Self> {
        let need = ty.bytes_for(&[k as u64, n as u64]).map_err(Error::Input)?;
        if bytes.len() as u64 != need {
            return Err(Error::Input(format!(
                "a {n}×{k} {} matrix takes {need} bytes, not {}",
                ty.name(),
                bytes.len()
            )));
        }
        let kernel = Kernel::choose(ty, path, &device.location()).map_err(Error::Device)?;
        let data = match kernel {
            Kernel::Candle => Data::Candle(QMatMul::from_qtensor(candle_qtensor(
                ty,
                &bytes,
                &[n, k],
                device,
            )?)?),
            _ => Data::Blocks(Blocks::hold(bytes)),
        };
        Ok(Self {
            ty,
            n,
            k,
            data,
            kernel,
            device: device.clone(),
        })
    }

    /// Another kernel for the same blocks (the tests run every path on one matrix).
    pub fn with_kernel(mut self, kernel: Kernel) -> Self {
        if matches!(self.data, Data::Blocks(_)) && kernel != Kernel::Candle {
            self.kernel = kernel;
        }
        self
    }

    pub fn ggml_type(&self) -> GgmlType {
        self.ty
    }

    /// (out, in): `(n, k)`.
    pub fn dims(&self) -> (usize, usize) {
        (self.n, self.k)
    }

    pub fn kernel(&self) -> Kernel {
        self.kernel
    }

    pub fn label(&self) -> &'static str {
        self.kernel.label(self.ty, &self.device)
    }

    /// Bytes held: the blocks, scales included.
    pub fn stored_bytes(&self) -> usize {
        self.n * self.ty.row_bytes(self.k)
    }

    /// FLOPs and bytes of `[m, k] · Wᵀ`: `x` and the output f32, `W` at its stored width.
    pub fn work(&self, m: usize) -> (u64, u64) {
        let flops = 2 * m * self.k * self.n;
        let bytes = (m * self.k + m * self.n) * 4 + self.stored_bytes();
        (flops as u64, bytes as u64)
    }

    /// `x` (`[m, k]`, f32) times `Wᵀ`: `[m, n]`, f32. No profiler row: [`crate::linear`]'s
    /// `Linear` opens it.
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        if k != self.k {
            return Err(Error::Input(format!(
                "a [{m}, {k}] input to a {}×{} {} matrix",
                self.n,
                self.k,
                self.ty.name()
            )));
        }
        let blocks = match &self.data {
            Data::Candle(q) => return Ok(candle_core::Module::forward(q, x)?),
            Data::Blocks(b) => b,
        };
        // A decode step's input is already contiguous f32 on the CPU: read it where it lies
        // rather than copy it (a copy and an allocation a product, 120 products a step). Any
        // other input is converted first.
        let converted;
        let x = match x.dtype() == candle_core::DType::F32 && x.is_contiguous() {
            true => x,
            false => {
                converted = x.to_dtype(candle_core::DType::F32)?.contiguous()?;
                &converted
            }
        };
        let (storage, layout) = x.storage_and_layout();
        let xs = match &*storage {
            candle_core::Storage::Cpu(cpu) => {
                crate::cpu::f32_slice(cpu, layout, "quantized matmul")?
            }
            _ => {
                return Err(Error::Input(
                    "a quantized matmul on our kernels takes its input on the CPU".into(),
                ))
            }
        };
        let out = self.matmul_f32(blocks, xs, m);
        drop(storage);
        Ok(Tensor::from_vec(out, (m, self.n), &self.device)?)
    }

    /// The product on plain slices: `x` row-major `[m, k]`, result `[m, n]`.
    fn matmul_f32(&self, blocks: &[u8], x: &[f32], m: usize) -> Vec<f32> {
        let (n, k) = (self.n, self.k);
        if m == 0 || n == 0 {
            return vec![0.0; m * n];
        }
        let act = ActQ8::quantize(x, m, k);
        let row_bytes = self.ty.row_bytes(k);
        let mut out = vec![0f32; m * n];
        let rows_per_task = rows_per_task(n, rayon::current_num_threads());
        let (ty, kernel) = (self.ty, self.kernel);
        // Each task owns weight rows j0 .. j1 and so columns j0 .. j1 of the `[m, n]` output,
        // which it writes in place.
        let base = SendPtr(out.as_mut_ptr());
        (0..n.div_ceil(rows_per_task))
            .into_par_iter()
            .for_each(|t| {
                let base = &base;
                let j0 = t * rows_per_task;
                let j1 = (j0 + rows_per_task).min(n);
                let w = &blocks[j0 * row_bytes..j1 * row_bytes];
                // SAFETY: `out` holds m · n values and outlives the tasks; tasks own disjoint
                // columns (j0 .. j1 ≤ n).
                let mut view = unsafe { kernels::Out::columns(base.0, n, j0, j1 - j0, m) };
                kernels::rows_times_x(kernel, ty, w, &act, &mut view);
            });
        out
    }
}

/// A pointer the tasks share; each writes only its own columns through it.
struct SendPtr(*mut f32);
// SAFETY: the tasks write disjoint elements through it (see `matmul_f32`), and the output
// outlives them.
unsafe impl Sync for SendPtr {}

/// Weight rows a task takes: a multiple of the 512-bit kernels' four, at most 64 (a task's
/// weights stay small beside the caches), and as few tasks as that allows that are a whole
/// number of rounds of `threads` (576 rows on 2 threads: 10 tasks of 60, not 9 of 64, which
/// leave one thread a task to do alone).
fn rows_per_task(n: usize, threads: usize) -> usize {
    let threads = threads.max(1);
    let mut rounds = 1;
    loop {
        let per = n.div_ceil(threads * rounds).next_multiple_of(4);
        if per <= 64 {
            return per;
        }
        rounds += 1;
    }
}

#[cfg(test)]
mod tests;
