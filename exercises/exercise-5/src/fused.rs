//! Your fused bias-add + GELU: one candle custom op that reads the MLP's matmul output once
//! and writes the activation once, instead of candle's two passes (a broadcast add that writes
//! a whole new tensor, then a GELU that reads it back and writes another).
//!
//! TODO (you): the body of `cpu_fwd`. `cargo test --release -p exercise-5` compares your op with
//! the unfused ops; it must agree within 1e-5.

use candle_core::{CpuStorage, CustomOp2, Layout, Shape, Tensor};
use gpt2::model::BiasActivation;

/// The name of the op's row in the profile.
pub const NAME: &str = "fused_bias_gelu";

// ANCHOR: fused_op
/// `y = gelu_tanh(x + bias)` for `x` of shape `[tokens, width]` and `bias` of shape `[width]`,
/// in one pass over memory. GELU with the tanh approximation (GPT-2's `gelu_new`) is
/// `0.5 · v · (1 + tanh(√(2/π) · (v + 0.044715 · v³)))`.
pub struct FusedBiasGelu;

impl CustomOp2 for FusedBiasGelu {
    fn name(&self) -> &'static str {
        NAME
    }

    fn cpu_fwd(&self, s1: &CpuStorage, l1: &Layout, s2: &CpuStorage, l2: &Layout) -> candle_core::Result<(CpuStorage, Shape)> {
        let (x, bias) = inputs(s1, l1, s2, l2)?;
        // TODO: compute `out[row][j] = gelu_tanh(x[row][j] + bias[j])` for every row of width
        // `bias.len()`, in one pass, into a new Vec<f32> `out` of x.len() values, and return
        // `Ok((CpuStorage::F32(out), l1.shape().clone()))`.
        // Faster still: split the rows across threads (rayon's `par_chunks_mut`).
        let _ = (x, bias);
        candle_core::bail!("{NAME} is not written yet: complete the TODO in exercises/exercise-5/src/fused.rs")
    }
}
// ANCHOR_END: fused_op

/// The contiguous f32 data of `x` and `bias`, after checking their shapes.
fn inputs<'a>(s1: &'a CpuStorage, l1: &Layout, s2: &'a CpuStorage, l2: &Layout) -> candle_core::Result<(&'a [f32], &'a [f32])> {
    let (CpuStorage::F32(x), CpuStorage::F32(bias)) = (s1, s2) else {
        candle_core::bail!("{NAME}: expects f32 tensors (run the model with --dtype f32)");
    };
    let (Some((x0, x1)), Some((b0, b1))) = (l1.contiguous_offsets(), l2.contiguous_offsets()) else {
        candle_core::bail!("{NAME}: expects contiguous tensors");
    };
    let (x, bias) = (&x[x0..x1], &bias[b0..b1]);
    let width = *l1.dims().last().unwrap_or(&0);
    if l2.dims().len() != 1 || bias.len() != width || width == 0 {
        candle_core::bail!("{NAME}: bias has shape {:?}, but x's rows have {width} values", l2.dims());
    }
    Ok((x, bias))
}

/// How the model's MLP calls the op (`MlpActivation::Custom`).
impl BiasActivation for FusedBiasGelu {
    fn name(&self) -> &'static str {
        NAME
    }

    fn forward(&self, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
        if !x.device().is_cpu() {
            candle_core::bail!("{NAME} runs on the CPU only in this exercise: run it with --device cpu");
        }
        x.contiguous()?.apply_op2_no_bwd(bias, self)
    }
}

/// The largest absolute difference between the fused op and candle's unfused ops
/// (`broadcast_add`, then `gelu`) on `x` and `bias`.
pub fn max_abs_error(x: &Tensor, bias: &Tensor) -> candle_core::Result<f32> {
    let unfused = x.broadcast_add(bias)?.gelu()?;
    let fused = FusedBiasGelu.forward(x, bias)?;
    let diff: Vec<f32> = (fused - unfused)?.abs()?.flatten_all()?.to_vec1()?;
    // A NaN anywhere is the worst error of all: keep it rather than let `max` skip it.
    Ok(diff.into_iter().fold(0.0, |worst, d| if d.is_nan() || worst.is_nan() { f32::NAN } else { worst.max(d) }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    #[test]
    fn matches_the_unfused_ops_within_1e_5() {
        // GPT-2 small's MLP width, a few token counts (one token, a decode batch, a prompt).
        for (tokens, width) in [(1, 3072), (8, 3072), (64, 3072), (5, 7)] {
            let x = Tensor::randn(0f32, 3.0, (tokens, width), &Device::Cpu).unwrap();
            let bias = Tensor::randn(0f32, 1.0, width, &Device::Cpu).unwrap();
            let err = max_abs_error(&x, &bias).unwrap();
            assert!(err <= 1e-5, "{tokens}x{width}: largest difference {err} is over 1e-5");
        }
    }

    #[test]
    fn keeps_the_shape() {
        let x = Tensor::zeros((4, 16), candle_core::DType::F32, &Device::Cpu).unwrap();
        let bias = Tensor::ones(16, candle_core::DType::F32, &Device::Cpu).unwrap();
        assert_eq!(FusedBiasGelu.forward(&x, &bias).unwrap().dims(), &[4, 16]);
    }

    #[test]
    fn saturates_like_gelu() {
        // Far from zero GELU is the identity (large positive) or zero (large negative).
        let x = Tensor::new(&[[-30.0f32, -10.0, 0.0, 10.0, 30.0]], &Device::Cpu).unwrap();
        let bias = Tensor::zeros(5, candle_core::DType::F32, &Device::Cpu).unwrap();
        let y: Vec<f32> = FusedBiasGelu.forward(&x, &bias).unwrap().flatten_all().unwrap().to_vec1().unwrap();
        let expected = [0.0, 0.0, 0.0, 10.0, 30.0];
        for (got, want) in y.iter().zip(expected) {
            assert!((got - want).abs() <= 1e-5, "gelu gave {got}, expected {want}");
        }
    }

    #[test]
    fn a_bias_of_the_wrong_width_is_an_error() {
        let x = Tensor::zeros((2, 8), candle_core::DType::F32, &Device::Cpu).unwrap();
        let bias = Tensor::zeros(7, candle_core::DType::F32, &Device::Cpu).unwrap();
        let err = FusedBiasGelu.forward(&x, &bias).unwrap_err().to_string();
        assert!(err.contains("bias has shape"), "{err}");
    }
}
