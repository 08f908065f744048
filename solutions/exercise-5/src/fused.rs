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
//! Solution: both stages written; the CUDA kernel's body written too; the tests pass.

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
        let width = bias.len();
        let mut out = vec![0f32; x.len()];
        // One read of x and one write of out per element: no intermediate tensor.
        for (out_row, x_row) in out.chunks_mut(width).zip(x.chunks(width)) {
            for ((y, &v), &b) in out_row.iter_mut().zip(x_row).zip(bias) {
                let v = v + b;
                *y = 0.5 * v * (1.0 + (SQRT_2_OVER_PI * (v + 0.044_715 * v * v * v)).tanh());
            }
        }
        Ok((CpuStorage::F32(out), l1.shape().clone()))
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
        let width = bias.len();
        let mut out = vec![0f32; x.len()];
        // A plain loop over slices of one length, with no call inside: the compiler vectorises it.
        let row = |(out_row, x_row): (&mut [f32], &[f32])| {
            for ((y, &v), &b) in out_row.iter_mut().zip(x_row).zip(bias) {
                let v = v + b;
                *y = v / (1.0 + exp(-2.0 * SQRT_2_OVER_PI * (v + 0.044_715 * v * v * v)));
            }
        };
        // Rows are independent, so they are split across threads, except for a tensor of a few
        // rows too short to pay for waking the pool.
        if x.len() < PARALLEL_MIN {
            out.chunks_mut(width).zip(x.chunks(width)).for_each(row);
        } else {
            out.par_chunks_mut(width)
                .zip(x.par_chunks(width))
                .for_each(row);
        }
        Ok((CpuStorage::F32(out), l1.shape().clone()))
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
