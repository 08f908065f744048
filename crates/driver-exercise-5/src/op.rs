//! What the learner's fused ops are built on but do not write: the names and constants their
//! TODOs use, the checks of their inputs, the vectorisable [`exp`] stage 2 calls, and [`Fused`],
//! which makes a candle custom op the MLP's activation.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, Layout, Tensor};
use engine::ops::BiasActivation;

/// What an op whose TODO is still open says when run: the exercise finds stage 2 unwritten by it.
pub const NOT_WRITTEN: &str = "is not written yet";

/// `√(2/π)`, GELU's tanh approximation's constant.
pub const SQRT_2_OVER_PI: f32 = 0.797_884_6;

/// Below this many elements stage 2 keeps the op on one thread. On a 2-core x86-64 VM, a
/// release build on 8 × 3072 values (the profiled forward pass) took 59 µs on one thread and
/// 35 µs on two; a row or two is not worth the pool.
pub const PARALLEL_MIN: usize = 1 << 13;

// ANCHOR: exp
/// `e^x` in f32 from arithmetic alone (within 2 units in the last place for |x| ≤ 87), so that
/// a loop calling it vectorises: `x = k·ln 2 + r` with k an integer and |r| ≤ ln 2 / 2, then
/// `e^x = 2^k · e^r`, e^r from its Taylor polynomial to r⁶ and 2^k written straight into the
/// exponent bits. Adding 1.5·2²³ rounds `x / ln 2` to the nearest integer k and leaves k in the
/// low bits of the sum, with no call to a rounding function.
#[inline]
pub fn exp(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2^23
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    let x = x.clamp(-87.0, 88.0);
    let t = x * std::f32::consts::LOG2_E + ROUND;
    let k = t - ROUND;
    let r = x - k * LN2_HI - k * LN2_LO;
    let e_r = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    let two_k = f32::from_bits(t.to_bits().wrapping_sub(ROUND.to_bits()).wrapping_add(127) << 23);
    e_r * two_k
}
// ANCHOR_END: exp

/// The contiguous f32 data of `x` and `bias`, after checking their shapes.
pub fn inputs<'a>(
    op: &str,
    s1: &'a CpuStorage,
    l1: &Layout,
    s2: &'a CpuStorage,
    l2: &Layout,
) -> candle_core::Result<(&'a [f32], &'a [f32])> {
    let (CpuStorage::F32(x), CpuStorage::F32(bias)) = (s1, s2) else {
        candle_core::bail!(
            "{op}: this CPU op takes f32 tensors, got {:?} and {:?} (with --dtype bf16 or f16 the portable kernel path runs candle's ops, and so this op, in that type); run the exercise with --dtype f32 (its default), or on the avx512 or avx2 path (--kernels), where a half-type model's activations stay f32, or on a GPU (--features cuda --device cuda), whose kernel takes f16 and bf16 too",
            s1.dtype(),
            s2.dtype()
        );
    };
    row_width(op, l1, l2)?;
    let (Some((x0, x1)), Some((b0, b1))) = (l1.contiguous_offsets(), l2.contiguous_offsets())
    else {
        candle_core::bail!("{op}: expects contiguous tensors");
    };
    Ok((&x[x0..x1], &bias[b0..b1]))
}

/// The width of `x`'s rows, after checking that both tensors are contiguous and that `bias`
/// is one row of that width (on every device).
pub fn row_width(op: &str, l1: &Layout, l2: &Layout) -> candle_core::Result<usize> {
    if !l1.is_contiguous() || !l2.is_contiguous() {
        candle_core::bail!("{op}: expects contiguous tensors");
    }
    let width = *l1.dims().last().unwrap_or(&0);
    if l2.dims() != [width] || width == 0 {
        candle_core::bail!(
            "{op}: bias has shape {:?}, but x's rows have {width} values",
            l2.dims()
        );
    }
    Ok(width)
}

/// A learner's op as the model's MLP calls it (`MlpActivation::Custom`): its profiler row is
/// named by the op's name, and candle runs its `cpu_fwd` or `cuda_fwd` by the tensors' device.
pub struct Fused<Op>(pub Op);

impl<Op: CustomOp2 + Send + Sync> BiasActivation for Fused<Op> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    /// The op on `x` and `bias`: candle calls its cpu_fwd or cuda_fwd by the tensors' device (a
    /// build without the `cuda` feature cannot open a CUDA device in the first place).
    fn forward(&self, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
        x.contiguous()?
            .apply_op2_no_bwd(&bias.contiguous()?, &self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::exp;

    /// The `exp` stage 2 is built on (given, not written by the learner).
    #[test]
    fn exp_agrees_with_the_library_and_saturates() {
        for i in -870..=880 {
            let x = i as f32 / 10.0;
            let (got, want) = (exp(x), x.exp());
            assert!(
                (got - want).abs() <= 4.0 * f32::EPSILON * want,
                "e^{x}: {got} against {want}"
            );
        }
        assert_eq!(
            exp(-200.0),
            exp(-87.0),
            "far below, the smallest value it gives"
        );
        assert!(exp(200.0).is_finite());
    }
}
