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
//! src/fused_bias_gelu.cu. What the ops are built on but you do not write (the input checks, the
//! `exp`, the kernel's launch) and the program that checks, profiles and benchmarks them are in
//! crates/driver-exercise-5.
//!
//! TODO (you): the bodies of the two `cpu_fwd`s, stage 1 first. `cargo test -p exercise-5 stage1`
//! compares stage 1 with the unfused ops (it must agree within 1e-5), `cargo test -p exercise-5
//! stage2` stage 2, and `cargo test -p exercise-5` both (stage 2's tests only say it is not
//! written until it is). `course run 5` runs the stages you have written. With an NVIDIA GPU,
//! also the kernel's body in src/fused_bias_gelu.cu (`cargo test -p exercise-5 --features cuda`).

use candle_core::{CpuStorage, CustomOp2, Layout, Shape};
#[allow(unused_imports, reason = "the TODOs' placeholders use it")]
use driver_exercise_5::NOT_WRITTEN;
use driver_exercise_5::{exp, inputs, PARALLEL_MIN, SQRT_2_OVER_PI};
#[allow(unused_imports, reason = "stage 2 uses it")]
use rayon::prelude::*;

/// The name of stage 1's row in the profile.
pub const NAME: &str = "fused_bias_gelu";
/// The name of stage 2's row in the profile.
pub const FAST_NAME: &str = "fused_bias_gelu_fast";

/// src/fused_bias_gelu.cu, compiled to PTX by build.rs, for the driver to launch.
#[cfg(feature = "cuda")]
const KERNEL: driver_exercise_5::cuda::Kernel = driver_exercise_5::kernel!();

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
        // `.tanh()`; `SQRT_2_OVER_PI` is imported above), and return
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
        driver_exercise_5::cuda::forward(NAME, &KERNEL, s1, l1, s2, l2)
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
        // and `exp` is the one imported above (no library call in the loop, so the compiler can
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
        driver_exercise_5::cuda::forward(FAST_NAME, &KERNEL, s1, l1, s2, l2)
    }
}
// ANCHOR_END: fast_op

// The checks of each stage, written once in the driver (crates/driver-exercise-5/src/checks.rs):
// `cargo test -p exercise-5 stage1` checks stage 1 alone, before stage 2 is written.
driver_exercise_5::stage_tests!(FusedBiasGelu, FastFusedBiasGelu);
