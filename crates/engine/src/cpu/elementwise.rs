//! Fused element-wise kernels for the CPU, written as candle in-place ops.
//!
//! Candle runs `h.broadcast_add(bias)`, `gelu` and `x + y` as separate passes, each
//! allocating a fresh output and (for the broadcast) walking it element by element on one
//! thread; on GPT-2 small at T=128 they cost more than a quarter of the forward pass. These
//! kernels do the same arithmetic in one pass over the freshly computed matmul output,
//! in place, split across threads. Each takes the [`KernelPath`] whose instructions it is
//! compiled for; `crate::ops` calls them on the `avx512` and `avx2` paths and candle's own ops
//! elsewhere (the `portable` path, CUDA).

use candle_core::{CpuStorage, Layout, Result, Tensor};
use rayon::prelude::*;

use super::{f32_slice as slice, KernelPath};

/// Below this many elements a single thread is faster than waking the pool.
const PARALLEL_MIN: usize = 1 << 15;

fn slice_mut<'a>(s: &'a mut CpuStorage, l: &Layout, op: &str) -> Result<&'a mut [f32]> {
    match (s, l.contiguous_offsets()) {
        (CpuStorage::F32(v), Some((a, b))) => Ok(&mut v[a..b]),
        _ => candle_core::bail!("{op}: expects a contiguous f32 tensor"),
    }
}

/// Applies `f(row, row_index)` to each row of width `width`, on several threads when the
/// tensor is large enough to pay for it, with `f` compiled for `path`'s vectors.
fn for_rows(
    path: KernelPath,
    data: &mut [f32],
    width: usize,
    f: impl Fn(&mut [f32], usize) + Sync,
) {
    // Dispatched row by row: the body handed to `compiled_for` must be inlined into its wide
    // copy whole, and library loops around `f` (chunk iterators, rayon) are not always inlined.
    let row = |(i, row): (usize, &mut [f32])| {
        compiled_for(
            path,
            #[inline(always)]
            || f(row, i),
        )
    };
    if data.len() < PARALLEL_MIN {
        data.chunks_mut(width).enumerate().for_each(row);
    } else {
        data.par_chunks_mut(width).enumerate().for_each(row);
    }
}

/// Runs `f` compiled for AVX-512 or for AVX2 with FMA, as `path` says, or for the baseline
/// (`Portable`). The crate is built for baseline x86-64 (every learner's machine runs it),
/// where loops vectorise four floats wide; `f` is inlined into a copy of this function built
/// for the wider vectors, so the same loops run 8 or 16 wide (the softmax of a 128-token
/// prefill: 0.55 ms a layer on one thread with SSE2, see `softmax_matches_candles` for the
/// figures). A path the CPU lacks runs the baseline copy.
#[inline(always)]
pub(crate) fn compiled_for<R>(path: KernelPath, f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512dq,avx512vl,avx2,fma")]
        unsafe fn avx512<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        match path {
            // SAFETY: the CPU has the features the copy was built for.
            KernelPath::Avx512 if path.is_supported() => return unsafe { avx512(f) },
            // SAFETY: as above.
            KernelPath::Avx2 if path.is_supported() => return unsafe { avx2(f) },
            _ => {}
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = path;
    f()
}

/// An in-place op on the CPU, as candle runs one: `f` gets the output's values (contiguous
/// f32) and its layout, then each operand's values. Each kernel below is one of these, with
/// its row loop in `f`; the struct is only the door candle's `inplace_op*` calls through.
struct InPlace<F> {
    name: &'static str,
    f: F,
}

impl<F: Fn(&mut [f32], &Layout) -> Result<()> + Send + Sync> candle_core::InplaceOp1
    for InPlace<F>
{
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> Result<()> {
        (self.f)(slice_mut(s, l, self.name)?, l)
    }
}

impl<F: Fn(&mut [f32], &Layout, &[f32]) -> Result<()> + Send + Sync> candle_core::InplaceOp2
    for InPlace<F>
{
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<()> {
        (self.f)(slice_mut(s1, l1, self.name)?, l1, slice(s2, l2, self.name)?)
    }
}

impl<F: Fn(&mut [f32], &Layout, &[f32], &[f32]) -> Result<()> + Send + Sync> candle_core::InplaceOp3
    for InPlace<F>
{
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
        s3: &CpuStorage,
        l3: &Layout,
    ) -> Result<()> {
        (self.f)(
            slice_mut(s1, l1, self.name)?,
            l1,
            slice(s2, l2, self.name)?,
            slice(s3, l3, self.name)?,
        )
    }
}

/// Softmax over the last dimension of `h`, in place (contiguous f32 on the CPU). Candle's CPU
/// softmax calls libm's `exp` once per value; at a 128-token prefill (12 heads × 128 × 128
/// scores a layer) that took 1.1 ms a layer, as long as the two attention products together.
pub fn softmax_last_dim_(h: &Tensor, path: KernelPath) -> Result<()> {
    let f = |h: &mut [f32], l: &Layout| {
        let width = l.dims().last().copied().unwrap_or(1);
        if width > 0 {
            for_rows(
                path,
                h,
                width,
                #[inline(always)]
                |row, _| softmax_row(row),
            );
        }
        Ok(())
    };
    h.inplace_op1(&InPlace { name: "softmax", f })
}

/// `row = e^(row − max) / Σ e^(row − max)`, with 16 running lanes for the max and the sum so
/// that both loops vectorise (a single running value would chain every addition).
#[inline(always)]
pub(crate) fn softmax_row(row: &mut [f32]) {
    const LANES: usize = 16;
    let mut max = [f32::NEG_INFINITY; LANES];
    let mut chunks = row.chunks_exact(LANES);
    for chunk in &mut chunks {
        max.iter_mut().zip(chunk).for_each(|(m, &v)| *m = m.max(v));
    }
    let max = chunks
        .remainder()
        .iter()
        .chain(&max)
        .copied()
        .fold(f32::NEG_INFINITY, f32::max);
    let mut sum = [0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for chunk in &mut chunks {
        chunk.iter_mut().zip(&mut sum).for_each(|(v, s)| {
            *v = exp(*v - max);
            *s += *v;
        });
    }
    let mut total: f32 = sum.iter().sum();
    for v in chunks.into_remainder() {
        *v = exp(*v - max);
        total += *v;
    }
    let inv = 1.0 / total;
    row.iter_mut().for_each(|v| *v *= inv);
}

/// Attention scores `[batch, heads, queries, keys]` set to `value` where the mask
/// `[batch, 1, queries, keys]` (u8, shared by the heads) is non-zero.
struct MaskFill {
    value: f32,
    path: KernelPath,
}

impl candle_core::InplaceOp2 for MaskFill {
    fn name(&self) -> &'static str {
        "mask"
    }
    fn cpu_fwd(
        &self,
        s1: &mut CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> Result<()> {
        let (CpuStorage::U8(mask), Some((a, b))) = (s2, l2.contiguous_offsets()) else {
            candle_core::bail!("mask: expects a contiguous u8 mask")
        };
        let mask = &mask[a..b];
        let &[batch, heads, queries, keys] = l1.dims() else {
            candle_core::bail!(
                "mask: scores must be [batch, heads, queries, keys], got {:?}",
                l1.dims()
            )
        };
        if l2.dims() != [batch, 1, queries, keys] {
            candle_core::bail!("mask: {:?} does not fit scores {:?}", l2.dims(), l1.dims());
        }
        let scores = slice_mut(s1, l1, self.name())?;
        let value = self.value;
        if keys > 0 {
            for_rows(
                self.path,
                scores,
                keys,
                #[inline(always)]
                |row, r| {
                    // Row r is query r % queries of head (r / queries) % heads of sequence r / (heads · queries).
                    let m = (r / (heads * queries)) * queries + r % queries;
                    row.iter_mut()
                        .zip(&mask[m * keys..(m + 1) * keys])
                        .for_each(|(v, &blocked)| {
                            if blocked != 0 {
                                *v = value
                            }
                        });
                },
            );
        }
        Ok(())
    }
}

/// Sets `scores` (`[batch, heads, queries, keys]`, contiguous f32 on the CPU) to `value` where
/// `mask` (`[batch, 1, queries, keys]`, u8) is non-zero, in place: candle's `where_cond`
/// broadcasts the mask and writes a fresh tensor.
pub fn mask_fill_(scores: &Tensor, mask: &Tensor, value: f32, path: KernelPath) -> Result<()> {
    scores.inplace_op2(mask, &MaskFill { value, path })
}

/// `Σ f(v)` over `values`, in 16 running lanes so that the loop vectorises.
#[inline(always)]
fn lane_sum(values: &[f32], f: impl Fn(f32) -> f32) -> f32 {
    let mut lanes = [0f32; 16];
    let mut chunks = values.chunks_exact(16);
    for chunk in &mut chunks {
        lanes.iter_mut().zip(chunk).for_each(|(s, &v)| *s += f(v));
    }
    lanes.iter().sum::<f32>() + chunks.remainder().iter().map(|&v| f(v)).sum::<f32>()
}

/// LayerNorm of each row of `x` (contiguous f32 on the CPU) into a new tensor:
/// `(x − mean) / √(var + eps) · weight + bias`. Candle's CPU layer norm sums each row one
/// value at a time; this one sums 16 lanes at once.
pub fn layer_norm(
    x: &Tensor,
    weight: &Tensor,
    bias: &Tensor,
    eps: f32,
    path: KernelPath,
) -> Result<Tensor> {
    let f = |h: &mut [f32], _: &Layout, weight: &[f32], bias: &[f32]| {
        if weight.len() != bias.len() || weight.is_empty() || !h.len().is_multiple_of(weight.len())
        {
            candle_core::bail!(
                "layer_norm: rows of {} values, weight {}, bias {}",
                h.len(),
                weight.len(),
                bias.len()
            );
        }
        for_rows(
            path,
            h,
            weight.len(),
            #[inline(always)]
            |row, _| {
                let n = row.len() as f32;
                let mean = lane_sum(row, |v| v) / n;
                let var = lane_sum(row, |v| (v - mean) * (v - mean)) / n;
                let inv = 1.0 / (var + eps).sqrt();
                row.iter_mut()
                    .zip(weight)
                    .zip(bias)
                    .for_each(|((v, w), b)| *v = (*v - mean) * inv * w + b);
            },
        );
        Ok(())
    };
    let y = x.copy()?;
    y.inplace_op3(
        weight,
        bias,
        &InPlace {
            name: "layer_norm",
            f,
        },
    )?;
    Ok(y)
}

/// RMSNorm of each row (the last dimension) of `x` (contiguous f32 on the CPU) into a new
/// tensor, `x / √(mean(x²) + eps) · weight`, 16 lanes at a time.
pub fn rms_norm(x: &Tensor, weight: &Tensor, eps: f32, path: KernelPath) -> Result<Tensor> {
    let f = |h: &mut [f32], _: &Layout, weight: &[f32]| {
        if weight.is_empty() || !h.len().is_multiple_of(weight.len()) {
            candle_core::bail!(
                "rms_norm: rows of {} values, weight {}",
                h.len(),
                weight.len()
            );
        }
        for_rows(
            path,
            h,
            weight.len(),
            #[inline(always)]
            |row, _| {
                let inv = 1.0 / (lane_sum(row, |v| v * v) / row.len() as f32 + eps).sqrt();
                row.iter_mut()
                    .zip(weight)
                    .for_each(|(v, w)| *v = *v * inv * w);
            },
        );
        Ok(())
    };
    let y = x.copy()?;
    y.inplace_op2(
        weight,
        &InPlace {
            name: "rms_norm",
            f,
        },
    )?;
    Ok(y)
}

/// `h += residual` in place (both contiguous f32 on the CPU, of one shape).
pub fn residual_add_(h: &Tensor, residual: &Tensor, path: KernelPath) -> Result<()> {
    let f = |h: &mut [f32], l: &Layout, residual: &[f32]| {
        if residual.len() != h.len() || h.is_empty() {
            candle_core::bail!(
                "residual_add: residual has {} elements, output {}",
                residual.len(),
                h.len()
            );
        }
        let width = l.dims().last().copied().unwrap_or(h.len());
        for_rows(
            path,
            h,
            width,
            #[inline(always)]
            |row, i| {
                row.iter_mut()
                    .zip(&residual[i * width..(i + 1) * width])
                    .for_each(|(y, r)| *y += r)
            },
        );
        Ok(())
    };
    h.inplace_op2(
        residual,
        &InPlace {
            name: "residual_add",
            f,
        },
    )
}

/// `silu(gate) · up` for each row of `gate_up` (`[tokens, 2 · inner]`, gate first; contiguous
/// f32 on the CPU) into a new `[tokens, inner]` tensor, in one pass.
pub fn silu_mul(gate_up: &Tensor, path: KernelPath) -> Result<Tensor> {
    let (tokens, width) = gate_up.dims2()?;
    let inner = width / 2;
    let gate_up = gate_up.contiguous()?;
    let (storage, layout) = gate_up.storage_and_layout();
    let input = super::cpu_f32(&storage, layout, "silu_mul")?;
    let mut out = vec![0f32; tokens * inner];
    if inner > 0 {
        for_rows(
            path,
            &mut out,
            inner,
            #[inline(always)]
            |row, i| {
                let (gate, up) = input[i * width..(i + 1) * width].split_at(inner);
                row.iter_mut()
                    .zip(gate)
                    .zip(up)
                    .for_each(|((y, &g), &u)| *y = g / (1.0 + exp(-g)) * u);
            },
        );
    }
    Tensor::from_vec(out, (tokens, inner), gate_up.device())
}

/// `h += bias` in place (`h` is `[tokens, width]`, contiguous f32 on the CPU).
pub fn bias_add_(h: &Tensor, bias: &Tensor, path: KernelPath) -> Result<()> {
    bias_then(h, bias, path, "bias_add", |v| v)
}

/// `h = gelu_tanh(h + bias)` in place: GPT-2's MLP activation fused with the bias before it.
pub fn bias_gelu_(h: &Tensor, bias: &Tensor, path: KernelPath) -> Result<()> {
    bias_then(h, bias, path, "bias_gelu", gelu_tanh)
}

/// `h = act(h + bias)`, row by row. `act` is a function item or a closure, so each use is
/// compiled with its own body inlined into the row loop.
fn bias_then(
    h: &Tensor,
    bias: &Tensor,
    path: KernelPath,
    name: &'static str,
    act: impl Fn(f32) -> f32 + Send + Sync,
) -> Result<()> {
    let f = |h: &mut [f32], _: &Layout, bias: &[f32]| {
        for_rows(
            path,
            h,
            bias.len(),
            #[inline(always)]
            |row, _| row.iter_mut().zip(bias).for_each(|(y, b)| *y = act(*y + b)),
        );
        Ok(())
    };
    h.inplace_op2(bias, &InPlace { name, f })
}

/// `h += bias + residual` in place: a projection's bias fused with the residual add after it.
pub fn bias_residual_(
    h: &Tensor,
    bias: &Tensor,
    residual: &Tensor,
    path: KernelPath,
) -> Result<()> {
    let f = |h: &mut [f32], _: &Layout, bias: &[f32], residual: &[f32]| {
        if residual.len() != h.len() {
            candle_core::bail!(
                "bias_residual_add: residual has {} elements, output {}",
                residual.len(),
                h.len()
            );
        }
        let width = bias.len();
        for_rows(
            path,
            h,
            width,
            #[inline(always)]
            |row, i| {
                let res = &residual[i * width..(i + 1) * width];
                row.iter_mut()
                    .zip(bias)
                    .zip(res)
                    .for_each(|((y, b), r)| *y += b + r)
            },
        );
        Ok(())
    };
    h.inplace_op3(
        bias,
        residual,
        &InPlace {
            name: "bias_residual_add",
            f,
        },
    )
}

/// GELU with the tanh approximation, `0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))`, written
/// as the equal `x · σ(2u)` so that one exponential does the work.
#[inline(always)]
pub fn gelu_tanh(x: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    let u = SQRT_2_OVER_PI * (x + 0.044_715 * x * x * x);
    x / (1.0 + exp(-2.0 * u))
}

/// `e^x` to about 1e-6 relative error (for |x| ≤ 20) without a libm call, so loops over it vectorise:
/// `e^x = 2^n · 2^f` with `n` the nearest integer to `x·log2(e)` and `2^f` a degree-6
/// Taylor polynomial on |f| ≤ 1/2.
#[inline(always)]
fn exp(x: f32) -> f32 {
    // Beyond these e^x is 0 or infinite in f32 anyway; clamping keeps 2^n in range.
    let t = x.clamp(-87.0, 88.0) * std::f32::consts::LOG2_E;
    // Round to nearest by the magic-number trick (plain SSE2, unlike `round`): adding
    // 1.5 · 2^23 leaves n in the low bits of the sum.
    const MAGIC: f32 = 12_582_912.0; // 1.5 · 2^23
    let shifted = t + MAGIC;
    let n = shifted - MAGIC;
    let g = (t - n) * std::f32::consts::LN_2;
    let p = 1.0
        + g * (1.0
            + g * (0.5
                + g * (1.0 / 6.0 + g * (1.0 / 24.0 + g * (1.0 / 120.0 + g * (1.0 / 720.0))))));
    // n as an integer, read from those bits: `n as i32` would saturate lane by lane, which
    // stops the loop from vectorising (it made exp five times slower).
    let n_int = shifted.to_bits().wrapping_sub(MAGIC.to_bits()) as i32;
    let scale = f32::from_bits(((n_int + 127) as u32) << 23);
    // Below the clamp the true value is under f32's smallest normal: return 0, as libm does
    // for masked attention scores. A 1e-38 instead would make the next product's values
    // subnormal, which the CPU handles in microcode (attention's `p · v` ran 80 times slower).
    if x < -87.0 {
        0.0
    } else {
        p * scale
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::{Device, Tensor};

    /// Every compiled copy this CPU can run: the paths it supports (`portable` is the baseline copy).
    fn paths() -> Vec<KernelPath> {
        KernelPath::supported()
    }

    #[test]
    fn exp_is_accurate_where_gelu_is_not_saturated() {
        // Past |x| ≈ 20 the sigmoid in gelu_tanh is 0 or 1 to f32 precision; there the
        // error of reducing x·log2(e) in f32 (a few 1e-6) does not matter.
        for i in -2000..2000 {
            let x = i as f32 / 100.0;
            let rel = ((exp(x) - x.exp()) / x.exp()).abs();
            assert!(rel < 2e-6, "exp({x}): relative error {rel}");
        }
        // Clamped, not wrapped: zero and finite-huge instead of garbage.
        assert_eq!(exp(-1000.0), 0.0);
        assert_eq!(exp(f32::MIN), 0.0);
        assert!(exp(1000.0).is_finite() && exp(1000.0) > 1e38);
    }

    #[test]
    fn fused_kernels_match_candles_unfused_ops() {
        let dev = Device::Cpu;
        // Large enough to take the multi-threaded path too.
        for (rows, path) in [3, 64]
            .into_iter()
            .flat_map(|r| paths().into_iter().map(move |p| (r, p)))
        {
            let h = Tensor::randn(0f32, 3.0, (rows, 768), &dev).unwrap();
            let b = Tensor::randn(0f32, 1.0, 768, &dev).unwrap();
            let r = Tensor::randn(0f32, 1.0, (rows, 768), &dev).unwrap();
            let close = |a: &Tensor, e: &Tensor| {
                let d = (a - e)
                    .unwrap()
                    .abs()
                    .unwrap()
                    .max_all()
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap();
                assert!(d <= 1e-5, "{path}, {rows} rows: max |diff| {d}");
            };
            let expect = h.broadcast_add(&b).unwrap().gelu().unwrap();
            let got = h.copy().unwrap();
            bias_gelu_(&got, &b, path).unwrap();
            close(&got, &expect);

            let expect = h.broadcast_add(&b).unwrap();
            let got = h.copy().unwrap();
            bias_add_(&got, &b, path).unwrap();
            close(&got, &expect);

            let expect = (h.broadcast_add(&b).unwrap() + &r).unwrap();
            let got = h.copy().unwrap();
            bias_residual_(&got, &b, &r, path).unwrap();
            close(&got, &expect);
        }
    }

    #[test]
    fn softmax_matches_candles() {
        let dev = Device::Cpu;
        // Widths under, at and over the 16 lanes; enough rows for the threaded path; masked
        // scores (f32::MIN, as the model writes them) and a fully masked row (a padded query).
        for (rows, width) in [(3, 5), (7, 16), (2048, 37), (12, 128)] {
            let h = (Tensor::randn(0f32, 4.0, (rows, width), &dev).unwrap())
                .to_vec2::<f32>()
                .unwrap();
            let mut h: Vec<f32> = h.into_iter().flatten().collect();
            for (i, v) in h.iter_mut().enumerate() {
                let (r, c) = (i / width, i % width);
                if c > r % width || r == 1 {
                    *v = f32::MIN;
                }
            }
            let h = Tensor::from_vec(h, (rows, width), &dev).unwrap();
            let expect = candle_nn::ops::softmax_last_dim(&h).unwrap();
            for path in paths() {
                let got = h.copy().unwrap();
                softmax_last_dim_(&got, path).unwrap();
                let d = (&got - &expect)
                    .unwrap()
                    .abs()
                    .unwrap()
                    .max_all()
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap();
                assert!(d <= 1e-6, "{path}, {rows}x{width}: max |diff| {d}");
            }
        }
    }

    #[test]
    fn layer_norm_matches_candles() {
        let dev = Device::Cpu;
        for (rows, width) in [(1, 768), (128, 768), (5, 19)] {
            let x = (Tensor::randn(0f32, 2.0, (rows, width), &dev).unwrap() + 3.0).unwrap();
            let w = Tensor::randn(1f32, 0.1, width, &dev).unwrap();
            let b = Tensor::randn(0f32, 0.1, width, &dev).unwrap();
            // The reference in f64: candle's f32 version sums one value at a time, and
            // differs from both by about 1e-5 at width 768.
            let f64s = |t: &Tensor| t.to_dtype(candle_core::DType::F64).unwrap();
            let x64 = f64s(&x);
            let centred = x64.broadcast_sub(&x64.mean_keepdim(1).unwrap()).unwrap();
            let var = centred.sqr().unwrap().mean_keepdim(1).unwrap();
            let normed = centred
                .broadcast_div(&(var + 1e-5).unwrap().sqrt().unwrap())
                .unwrap();
            let expect = normed
                .broadcast_mul(&f64s(&w))
                .unwrap()
                .broadcast_add(&f64s(&b))
                .unwrap();
            for path in paths() {
                let got = f64s(&layer_norm(&x, &w, &b, 1e-5, path).unwrap());
                let d = (&got - &expect)
                    .unwrap()
                    .abs()
                    .unwrap()
                    .max_all()
                    .unwrap()
                    .to_scalar::<f64>()
                    .unwrap();
                assert!(d <= 5e-6, "{path}, {rows}x{width}: max |diff| {d}");
            }
        }
    }

    #[test]
    fn mask_fill_matches_where_cond() {
        let dev = Device::Cpu;
        let (b, h, t, s) = (2, 3, 5, 7);
        let scores = Tensor::randn(0f32, 1.0, (b, h, t, s), &dev).unwrap();
        let mask: Vec<u8> = (0..b * t * s).map(|i| u8::from(i % 3 == 0)).collect();
        let mask = Tensor::from_vec(mask, (b, 1, t, s), &dev).unwrap();
        let blocked = Tensor::new(f32::MIN, &dev)
            .unwrap()
            .broadcast_as((b, h, t, s))
            .unwrap();
        let expect = mask
            .broadcast_as((b, h, t, s))
            .unwrap()
            .where_cond(&blocked, &scores)
            .unwrap();
        for path in paths() {
            let got = scores.copy().unwrap();
            mask_fill_(&got, &mask, f32::MIN, path).unwrap();
            let same = got
                .eq(&expect)
                .unwrap()
                .to_dtype(candle_core::DType::F32)
                .unwrap()
                .min_all()
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert_eq!(same, 1.0, "{path}");
            let wrong = Tensor::zeros((b, 1, t, s + 1), candle_core::DType::U8, &dev).unwrap();
            assert!(mask_fill_(&got, &wrong, 0.0, path)
                .unwrap_err()
                .to_string()
                .contains("does not fit"));
        }
    }

    #[test]
    fn non_contiguous_input_is_an_error_not_garbage() {
        let h = Tensor::zeros((8, 4), candle_core::DType::F32, &Device::Cpu)
            .unwrap()
            .t()
            .unwrap();
        let b = Tensor::zeros(8, candle_core::DType::F32, &Device::Cpu).unwrap();
        assert!(bias_add_(&h, &b, KernelPath::Portable)
            .unwrap_err()
            .to_string()
            .contains("contiguous"));
    }
}
