//! `x · Wᵀ` for a few rows of `x` (decode steps, short prompts) on the CPU.
//!
//! With 1–16 rows the product is bound by reading `W` from memory, yet candle's gemm
//! reaches a third to a half of the machine's bandwidth at those shapes (idle 2-core
//! machine: GPT-2 small's decode step at B=1 took 53 ms with gemm, 35 ms with this kernel).
//! This kernel reads each weight row once: a block of four rows of `W` (cache-resident) is
//! multiplied with every row of `x`, two at a time, before the next block is loaded, with
//! AVX2 fused multiply-adds; the blocks are split across threads.

use candle_core::{Result, Tensor};
use rayon::prelude::*;

use super::{cpu_f32, KernelPath};

/// Rows of `x` this kernel takes; more is gemm's territory (the product becomes compute-bound).
pub const MAX_ROWS: usize = 16;

/// Output columns per parallel task: large enough to amortise scheduling, small enough
/// to balance two to sixteen threads.
const COLUMNS_PER_TASK: usize = 256;

/// Whether this CPU (it needs AVX2 and FMA) and these operands can use the kernel.
pub fn applies(x: &Tensor, w_out_in: &Tensor) -> bool {
    let rows = x.dims().first().copied().unwrap_or(0);
    x.device().is_cpu()
        && x.dtype() == candle_core::DType::F32
        && x.rank() == 2
        && (1..=MAX_ROWS).contains(&rows)
        && w_out_in.dims().get(1) == x.dims().get(1)
        && KernelPath::Avx2.is_supported()
}

/// `x (m × k) · W (n × k)ᵀ → (m × n)`, for operands [`applies`] accepts.
pub fn matmul(x: &Tensor, w_out_in: &Tensor) -> Result<Tensor> {
    if !applies(x, w_out_in) {
        candle_core::bail!("skinny matmul: {:?} · {:?}ᵀ is not for this kernel (1–{MAX_ROWS} f32 rows on a CPU with AVX2)", x.dims(), w_out_in.dims())
    }
    let (m, k) = x.dims2()?;
    let (n, _) = w_out_in.dims2()?;
    let x = x.contiguous()?;
    let xs = x.flatten_all()?.to_vec1::<f32>()?;
    let w = w_out_in.contiguous()?;
    let (storage, layout) = w.storage_and_layout();
    let ws = cpu_f32(&storage, layout, "skinny matmul")?;

    // Computed column-block by column-block into (n × m), then transposed: each task owns
    // a contiguous slice of the output.
    let mut out_t = vec![0f32; n * m];
    out_t.par_chunks_mut(COLUMNS_PER_TASK * m).enumerate().for_each(|(task, out)| {
        let col0 = task * COLUMNS_PER_TASK;
        let cols = out.len() / m;
        block(&xs, m, k, &ws[col0 * k..(col0 + cols) * k], cols, out);
    });
    Tensor::from_vec(out_t, (n, m), x.device())?.t()?.contiguous()
}

/// `out[c * m + r] = Σ_k x[r][k] · w[c][k]` for the `cols` rows of `w` given.
fn block(x: &[f32], m: usize, k: usize, w: &[f32], cols: usize, out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `matmul` checked (`applies`) that the CPU has AVX2 and FMA.
        unsafe { avx2::block(x, m, k, w, cols, out) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        for c in 0..cols {
            for r in 0..m {
                out[c * m + r] = x[r * k..(r + 1) * k].iter().zip(&w[c * k..(c + 1) * k]).map(|(a, b)| a * b).sum();
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::*;

    /// Register blocking: 4 columns × 2 rows of accumulators, so each 8-wide load of `x`
    /// feeds four FMAs and each load of `w` two.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn block(x: &[f32], m: usize, k: usize, w: &[f32], cols: usize, out: &mut [f32]) {
        let k8 = k - k % 8;
        let mut c = 0;
        while c + 4 <= cols {
            let wr = [&w[c * k..], &w[(c + 1) * k..], &w[(c + 2) * k..], &w[(c + 3) * k..]];
            let mut r = 0;
            while r < m {
                // The last row of an odd count is paired with itself; its duplicate result
                // is simply written twice.
                let r2 = if r + 1 < m { r + 1 } else { r };
                let (xa, xb) = (&x[r * k..(r + 1) * k], &x[r2 * k..(r2 + 1) * k]);
                let mut a = [_mm256_setzero_ps(); 4];
                let mut b = [_mm256_setzero_ps(); 4];
                let mut i = 0;
                while i < k8 {
                    let va = _mm256_loadu_ps(xa.as_ptr().add(i));
                    let vb = _mm256_loadu_ps(xb.as_ptr().add(i));
                    for j in 0..4 {
                        let wv = _mm256_loadu_ps(wr[j].as_ptr().add(i));
                        a[j] = _mm256_fmadd_ps(va, wv, a[j]);
                        b[j] = _mm256_fmadd_ps(vb, wv, b[j]);
                    }
                    i += 8;
                }
                for j in 0..4 {
                    let tail = |xr: &[f32]| -> f32 { (k8..k).map(|t| xr[t] * wr[j][t]).sum() };
                    out[(c + j) * m + r] = hsum(a[j]) + tail(xa);
                    out[(c + j) * m + r2] = hsum(b[j]) + tail(xb);
                }
                r += 2;
            }
            c += 4;
        }
        for c in c..cols {
            let wc = &w[c * k..(c + 1) * k];
            for r in 0..m {
                out[c * m + r] = x[r * k..(r + 1) * k].iter().zip(wc).map(|(a, b)| a * b).sum();
            }
        }
    }

    #[target_feature(enable = "avx2,fma")]
    unsafe fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn matches_candles_matmul() {
        if !KernelPath::Avx2.is_supported() {
            eprintln!("no AVX2 on this CPU: the skinny kernel is not used here, nothing to compare");
            return;
        }
        for (m, k, n) in [(1, 768, 50257), (2, 64, 192), (8, 768, 2304), (16, 768, 1003), (5, 100, 7)] {
            let x = Tensor::randn(0f32, 1.0, (m, k), &Device::Cpu).unwrap();
            let w = Tensor::randn(0f32, 0.05, (n, k), &Device::Cpu).unwrap();
            assert!(applies(&x, &w));
            let ours = matmul(&x, &w).unwrap();
            let theirs = x.matmul(&w.t().unwrap()).unwrap();
            let d = (ours - theirs).unwrap().abs().unwrap().max_all().unwrap().to_scalar::<f32>().unwrap();
            assert!(d < 1e-4, "{m}x{k}x{n}: max |diff| {d}");
        }
    }
}
