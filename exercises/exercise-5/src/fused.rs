//! Your fused bias-add + GELU, in two stages, each a candle custom op that reads the MLP's
//! matmul output once and writes the activation once, instead of candle's two passes (a
//! broadcast add that writes a whole new tensor, then a GELU that reads it back and writes
//! another):
//!
//! - **Stage 1**, [`FusedBiasGelu`]: the fusion: one pass, the same per-element math as
//!   candle's GELU (a tanh).
//! - **Stage 2**, [`FastFusedBiasGelu`]: the kernel fix the roofline points to on a CPU: the
//!   same fusion with per-element math the compiler can vectorise (one [`exp`] built from
//!   arithmetic instead of a library tanh), and rows split across threads.
//!
//! On a CUDA device (a build with `--features cuda`) both run the kernel in
//! src/fused_bias_gelu.cu, launched by src/fused/cuda.rs.
//!
//! TODO (you): the bodies of the two `cpu_fwd`s, stage 1 first. `cargo test -p exercise-5 stage1`
//! compares stage 1 with the unfused ops (it must agree within 1e-5), `cargo test -p exercise-5
//! stage2` stage 2, and `cargo test -p exercise-5` both (stage 2's tests only say it is not
//! written until it is). `course run 5` runs the stages you have written. With an NVIDIA GPU,
//! also the kernel's body in src/fused_bias_gelu.cu (`cargo test -p exercise-5 --features cuda`).

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor};
use gpt2::model::BiasActivation;
#[allow(unused_imports, reason = "stage 2 uses it")]
use rayon::prelude::*;

#[cfg(feature = "cuda")]
mod cuda;

/// The name of stage 1's row in the profile.
pub const NAME: &str = "fused_bias_gelu";
/// The name of stage 2's row in the profile.
pub const FAST_NAME: &str = "fused_bias_gelu_fast";

/// What an op whose TODO is still open says when run: the exercise finds stage 2 unwritten by it.
pub const NOT_WRITTEN: &str = "is not written yet";

/// `√(2/π)`, GELU's tanh approximation's constant.
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

// ANCHOR: fused_op
/// Stage 1: `y = gelu_tanh(x + bias)` for `x` of shape `[tokens, width]` and `bias` of shape
/// `[width]`, in one pass over memory. GELU with the tanh approximation (GPT-2's `gelu_new`) is
/// `0.5 · v · (1 + tanh(√(2/π) · (v + 0.044715 · v³)))`.
pub struct FusedBiasGelu;

impl CustomOp2 for FusedBiasGelu {
    fn name(&self) -> &'static str {
        NAME
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, bias) = inputs(NAME, s1, l1, s2, l2)?;
        // TODO (stage 1): compute `out[row][j] = gelu_tanh(x[row][j] + bias[j])` for every row
        // of width `bias.len()`, in one pass (read each x once, write each out once, nothing in
        // between), into a new Vec<f32> `out` of x.len() values, with the formula above (f32 has
        // `.tanh()`; `SQRT_2_OVER_PI` is defined below), and return
        // `Ok((CpuStorage::F32(out), l1.shape().clone()))`.
        let _ = (x, bias, SQRT_2_OVER_PI);
        candle_core::bail!(
            "{NAME} {NOT_WRITTEN}: complete stage 1's TODO in exercises/exercise-5/src/fused.rs"
        )
    }

    /// On a GPU: one launch of the kernel in src/fused_bias_gelu.cu (f32, f16 or bf16).
    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        cuda::forward(NAME, s1, l1, s2, l2)
    }
}
// ANCHOR_END: fused_op

// ANCHOR: fast_op
/// Stage 2: the same result as [`FusedBiasGelu`], from per-element math that vectorises.
///
/// `0.5 · (1 + tanh(u)) = 1 / (1 + e^(−2u))`, so GELU is `v / (1 + e^(−2u))`: one exponential,
/// which [`exp`] computes from multiplications and additions the compiler can run on several
/// lanes at once, where a library `tanh` is a call per element that it cannot.
pub struct FastFusedBiasGelu;

impl CustomOp2 for FastFusedBiasGelu {
    fn name(&self) -> &'static str {
        FAST_NAME
    }

    fn cpu_fwd(
        &self,
        s1: &CpuStorage,
        l1: &Layout,
        s2: &CpuStorage,
        l2: &Layout,
    ) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, bias) = inputs(FAST_NAME, s1, l1, s2, l2)?;
        // TODO (stage 2), once stage 1's profile shows what held the row back: the same loop as
        // stage 1, with GELU written as `v / (1 + exp(-2u))` where `u = √(2/π)·(v + 0.044715·v³)`
        // and `exp` is the function below (no library call in the loop, so the compiler can
        // vectorise it). Then split the rows across threads (rayon's `par_chunks_mut`), except
        // below `PARALLEL_MIN` elements, where one row or two is not worth waking the pool.
        let _ = (x, bias, PARALLEL_MIN, exp);
        candle_core::bail!("{FAST_NAME} {NOT_WRITTEN}: complete stage 2's TODO in exercises/exercise-5/src/fused.rs")
    }

    /// On a GPU, the same launch as stage 1: stage 2 rewrites the CPU loop only, so on a GPU
    /// the two stages are one kernel.
    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        cuda::forward(FAST_NAME, s1, l1, s2, l2)
    }
}
// ANCHOR_END: fast_op

/// Below this many elements the exercise keeps the op on one thread. On a 2-core x86-64 VM, a
/// release build on 8 × 3072 values (the profiled forward pass) took 59 µs on one thread and
/// 35 µs on two; a row or two is not worth the pool.
const PARALLEL_MIN: usize = 1 << 13;

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
fn inputs<'a>(
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
fn row_width(op: &str, l1: &Layout, l2: &Layout) -> candle_core::Result<usize> {
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

/// How the model's MLP calls stage 1 (`MlpActivation::Custom`).
impl BiasActivation for FusedBiasGelu {
    fn name(&self) -> &'static str {
        NAME
    }

    fn forward(&self, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
        apply(self, x, bias)
    }
}

/// How the model's MLP calls stage 2.
impl BiasActivation for FastFusedBiasGelu {
    fn name(&self) -> &'static str {
        FAST_NAME
    }

    fn forward(&self, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
        apply(self, x, bias)
    }
}

/// `op` on `x` and `bias`: candle calls its cpu_fwd or cuda_fwd by the tensors' device (a build
/// without the `cuda` feature cannot open a CUDA device in the first place).
fn apply(op: &impl CustomOp2, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
    x.contiguous()?.apply_op2_no_bwd(&bias.contiguous()?, op)
}

/// The largest absolute difference between `op` and candle's unfused ops (`broadcast_add`,
/// then `gelu`) on `x` and `bias`, on whichever device they are.
pub fn max_abs_error(
    op: &dyn BiasActivation,
    x: &Tensor,
    bias: &Tensor,
) -> candle_core::Result<f32> {
    let unfused = x.broadcast_add(bias)?.gelu()?.to_dtype(DType::F32)?;
    let fused = op.forward(x, bias)?.to_dtype(DType::F32)?;
    let diff: Vec<f32> = (fused - unfused)?.abs()?.flatten_all()?.to_vec1()?;
    // A NaN anywhere is the worst error of all: keep it rather than let `max` skip it.
    Ok(diff.into_iter().fold(0.0, |worst, d| {
        if d.is_nan() || worst.is_nan() {
            f32::NAN
        } else {
            worst.max(d)
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    // The CPU checks of each stage, in a module named for it: `cargo test -p exercise-5 stage1`
    // checks stage 1 alone, before stage 2 is written. Stage 2's tests check it once it is
    // written; until then they say so and pass, so that `course check 5` grades a submission that
    // stops at stage 1 (its feedback says what stage 1 showed and what to do next) and a GPU
    // learner, for whom stage 2 is not required, passes without it.

    /// Stage 1's checks.
    mod stage1 {
        use super::super::*;

        #[test]
        fn matches_the_unfused_ops_within_1e_5() {
            super::matches_the_unfused_ops("stage 1", &FusedBiasGelu);
        }

        #[test]
        fn keeps_the_shape() {
            super::keeps_the_shape("stage 1", &FusedBiasGelu);
        }

        #[test]
        fn saturates_like_gelu() {
            super::saturates_like_gelu("stage 1", &FusedBiasGelu);
        }

        #[test]
        fn a_bias_of_the_wrong_width_or_a_half_type_is_an_error_that_says_what_to_run() {
            super::errors_say_what_to_run("stage 1", &FusedBiasGelu);
        }
    }

    /// Stage 2's checks, once stage 2 is written.
    mod stage2 {
        use super::super::*;

        #[test]
        fn matches_the_unfused_ops_within_1e_5() {
            if super::stage2_written("matches_the_unfused_ops_within_1e_5") {
                super::matches_the_unfused_ops("stage 2", &FastFusedBiasGelu);
            }
        }

        #[test]
        fn keeps_the_shape() {
            if super::stage2_written("keeps_the_shape") {
                super::keeps_the_shape("stage 2", &FastFusedBiasGelu);
            }
        }

        #[test]
        fn saturates_like_gelu() {
            if super::stage2_written("saturates_like_gelu") {
                super::saturates_like_gelu("stage 2", &FastFusedBiasGelu);
            }
        }

        #[test]
        fn a_bias_of_the_wrong_width_or_a_half_type_is_an_error_that_says_what_to_run() {
            if super::stage2_written("a_bias_of_the_wrong_width") {
                super::errors_say_what_to_run("stage 2", &FastFusedBiasGelu);
            }
        }

        /// The `exp` stage 2 is built on (given, not written by you).
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

    /// Whether stage 2 is written: false, after saying so, while its `cpu_fwd` still answers
    /// that it is not written; any other answer (a result, or another error) is checked.
    fn stage2_written(test: &str) -> bool {
        let x = Tensor::zeros((1, 4), DType::F32, &Device::Cpu).unwrap();
        let bias = Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap();
        match FastFusedBiasGelu.forward(&x, &bias) {
            Err(e) if e.to_string().contains(NOT_WRITTEN) => {
                println!("stage2::{test}: stage 2 (FastFusedBiasGelu in src/fused.rs) is not written yet, so it was not checked");
                false
            }
            _ => true,
        }
    }

    fn matches_the_unfused_ops(stage: &str, op: &dyn BiasActivation) {
        // GPT-2 small's MLP width, a few token counts (one token, a decode batch, a prompt
        // large enough for stage 2's threads), and an odd shape.
        for (tokens, width) in [(1, 3072), (8, 3072), (64, 3072), (5, 7)] {
            let x = Tensor::randn(0f32, 3.0, (tokens, width), &Device::Cpu).unwrap();
            let bias = Tensor::randn(0f32, 1.0, width, &Device::Cpu).unwrap();
            let err = max_abs_error(op, &x, &bias).unwrap();
            assert!(
                err <= 1e-5,
                "{stage}, {tokens}x{width}: largest difference {err} is over 1e-5"
            );
        }
    }

    fn keeps_the_shape(stage: &str, op: &dyn BiasActivation) {
        let x = Tensor::zeros((4, 16), DType::F32, &Device::Cpu).unwrap();
        let bias = Tensor::ones(16, DType::F32, &Device::Cpu).unwrap();
        assert_eq!(op.forward(&x, &bias).unwrap().dims(), &[4, 16], "{stage}");
    }

    fn saturates_like_gelu(stage: &str, op: &dyn BiasActivation) {
        // Far from zero GELU is the identity (large positive) or zero (large negative).
        let x = Tensor::new(&[[-30.0f32, -10.0, 0.0, 10.0, 30.0]], &Device::Cpu).unwrap();
        let bias = Tensor::zeros(5, DType::F32, &Device::Cpu).unwrap();
        let y: Vec<f32> = op
            .forward(&x, &bias)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let expected = [0.0, 0.0, 0.0, 10.0, 30.0];
        for (got, want) in y.iter().zip(expected) {
            assert!(
                (got - want).abs() <= 1e-5,
                "{stage}: gelu gave {got}, expected {want}"
            );
        }
    }

    fn errors_say_what_to_run(stage: &str, op: &dyn BiasActivation) {
        let x = Tensor::zeros((2, 8), DType::F32, &Device::Cpu).unwrap();
        let bias = Tensor::zeros(7, DType::F32, &Device::Cpu).unwrap();
        let err = op.forward(&x, &bias).unwrap_err().to_string();
        assert!(err.contains("bias has shape"), "{stage}: {err}");
        let half = Tensor::zeros((2, 8), DType::BF16, &Device::Cpu).unwrap();
        let half_bias = Tensor::zeros(8, DType::BF16, &Device::Cpu).unwrap();
        let err = op.forward(&half, &half_bias).unwrap_err().to_string();
        assert!(
            err.contains("f32")
                && err.contains("BF16")
                && err.contains("--dtype f32")
                && err.contains("--kernels"),
            "{stage}: {err}"
        );
    }

    /// CUDA device 0 when this build has the `cuda` feature and a GPU answers; otherwise prints
    /// that the CUDA check did not run, and why (a skip is never a silent pass).
    #[cfg(feature = "cuda")]
    fn cuda_or_say_why(test: &str) -> Option<Device> {
        match Device::new_cuda(0) {
            Ok(device) => Some(device),
            Err(e) => {
                println!("{test}: SKIPPED on CUDA, CUDA was not available ({e}); only the CPU op was checked");
                None
            }
        }
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn matches_the_unfused_ops_within_1e_5_on_cuda() {
        let Some(cuda) = cuda_or_say_why("matches_the_unfused_ops_within_1e_5_on_cuda") else {
            return;
        };
        // The same shapes as on the CPU, plus one that is not a multiple of the block size
        // and a row wider than a block.
        for (tokens, width) in [(1, 3072), (8, 3072), (64, 3072), (5, 7), (3, 1000)] {
            let x_cpu = Tensor::randn(0f32, 3.0, (tokens, width), &Device::Cpu).unwrap();
            let bias_cpu = Tensor::randn(0f32, 1.0, width, &Device::Cpu).unwrap();
            let (x, bias) = (
                x_cpu.to_device(&cuda).unwrap(),
                bias_cpu.to_device(&cuda).unwrap(),
            );
            let err = max_abs_error(&FusedBiasGelu, &x, &bias).unwrap();
            assert!(
                err <= 1e-5,
                "CUDA {tokens}x{width}: largest difference {err} is over 1e-5"
            );
            // And across devices: the kernel against candle's unfused ops on the CPU.
            let cpu = x_cpu.broadcast_add(&bias_cpu).unwrap().gelu().unwrap();
            let gpu = FusedBiasGelu
                .forward(&x, &bias)
                .unwrap()
                .to_device(&Device::Cpu)
                .unwrap();
            let err = (gpu - cpu)
                .unwrap()
                .abs()
                .unwrap()
                .flatten_all()
                .unwrap()
                .max(0)
                .unwrap()
                .to_scalar::<f32>()
                .unwrap();
            assert!(
                err <= 1e-5,
                "CUDA {tokens}x{width}: {err} from the CPU's unfused ops, over 1e-5"
            );
        }
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn half_precision_on_cuda_rounds_only_the_result() {
        use candle_core::DType;
        let Some(cuda) = cuda_or_say_why("half_precision_on_cuda_rounds_only_the_result") else {
            return;
        };
        // The kernel computes in f32 and rounds once, so it stays within about half a unit in
        // the last place of the exact result: 2^-11 relative for f16, 2^-8 for bf16.
        for (dtype, tolerance) in [(DType::F16, 1e-3f32), (DType::BF16, 8e-3)] {
            let x = Tensor::randn(0f32, 3.0, (8, 3072), &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .to_device(&cuda)
                .unwrap();
            let bias = Tensor::randn(0f32, 1.0, 3072, &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap()
                .to_device(&cuda)
                .unwrap();
            let got = FusedBiasGelu.forward(&x, &bias).unwrap();
            assert_eq!(got.dtype(), dtype);
            // The reference: the same (rounded) inputs, computed in f32 by candle's own ops.
            let exact = x
                .to_dtype(DType::F32)
                .unwrap()
                .broadcast_add(&bias.to_dtype(DType::F32).unwrap())
                .unwrap()
                .gelu()
                .unwrap();
            let got: Vec<f32> = got
                .to_dtype(DType::F32)
                .unwrap()
                .flatten_all()
                .unwrap()
                .to_vec1()
                .unwrap();
            let exact: Vec<f32> = exact.flatten_all().unwrap().to_vec1().unwrap();
            for (g, e) in got.iter().zip(&exact) {
                assert!(
                    (g - e).abs() <= tolerance * e.abs().max(1.0),
                    "{dtype:?}: got {g}, expected {e}"
                );
            }
        }
    }
}
