//! Your fused bias-add + GELU: one candle custom op that reads the MLP's matmul output once
//! and writes the activation once, instead of candle's two passes (a broadcast add that writes
//! a whole new tensor, then a GELU that reads it back and writes another).
//!
//! On a CUDA device (a build with `--features cuda`) the same op runs the kernel in
//! src/fused_bias_gelu.cu, launched by src/fused/cuda.rs.
//!
//! TODO (you): the body of `cpu_fwd`. `cargo test -p exercise-5` compares your op with
//! the unfused ops; it must agree within 1e-5. With an NVIDIA GPU, also the kernel's body in
//! src/fused_bias_gelu.cu (`cargo test -p exercise-5 --features cuda`).

use candle_core::{CpuStorage, CustomOp2, DType, Layout, Shape, Tensor};
use gpt2::model::BiasActivation;

#[cfg(feature = "cuda")]
mod cuda;

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

    /// On a GPU: one launch of the kernel in src/fused_bias_gelu.cu (f32, f16 or bf16).
    #[cfg(feature = "cuda")]
    fn cuda_fwd(
        &self,
        s1: &candle_core::CudaStorage,
        l1: &Layout,
        s2: &candle_core::CudaStorage,
        l2: &Layout,
    ) -> candle_core::Result<(candle_core::CudaStorage, Shape)> {
        cuda::forward(s1, l1, s2, l2)
    }
}
// ANCHOR_END: fused_op

/// The contiguous f32 data of `x` and `bias`, after checking their shapes.
fn inputs<'a>(s1: &'a CpuStorage, l1: &Layout, s2: &'a CpuStorage, l2: &Layout) -> candle_core::Result<(&'a [f32], &'a [f32])> {
    let (CpuStorage::F32(x), CpuStorage::F32(bias)) = (s1, s2) else {
        candle_core::bail!("{NAME}: expects f32 tensors on the CPU (run the model with --dtype f32)");
    };
    row_width(l1, l2)?;
    let (Some((x0, x1)), Some((b0, b1))) = (l1.contiguous_offsets(), l2.contiguous_offsets()) else {
        candle_core::bail!("{NAME}: expects contiguous tensors");
    };
    Ok((&x[x0..x1], &bias[b0..b1]))
}

/// The width of `x`'s rows, after checking that both tensors are contiguous and that `bias`
/// is one row of that width (on every device).
fn row_width(l1: &Layout, l2: &Layout) -> candle_core::Result<usize> {
    if !l1.is_contiguous() || !l2.is_contiguous() {
        candle_core::bail!("{NAME}: expects contiguous tensors");
    }
    let width = *l1.dims().last().unwrap_or(&0);
    if l2.dims() != [width] || width == 0 {
        candle_core::bail!("{NAME}: bias has shape {:?}, but x's rows have {width} values", l2.dims());
    }
    Ok(width)
}

/// How the model's MLP calls the op (`MlpActivation::Custom`).
impl BiasActivation for FusedBiasGelu {
    fn name(&self) -> &'static str {
        NAME
    }

    fn forward(&self, x: &Tensor, bias: &Tensor) -> candle_core::Result<Tensor> {
        // candle calls cpu_fwd or cuda_fwd by the tensors' device; a build without the `cuda`
        // feature cannot open a CUDA device in the first place.
        x.contiguous()?.apply_op2_no_bwd(&bias.contiguous()?, self)
    }
}

/// The largest absolute difference between the fused op and candle's unfused ops
/// (`broadcast_add`, then `gelu`) on `x` and `bias`, on whichever device they are.
pub fn max_abs_error(x: &Tensor, bias: &Tensor) -> candle_core::Result<f32> {
    let unfused = x.broadcast_add(bias)?.gelu()?.to_dtype(DType::F32)?;
    let fused = FusedBiasGelu.forward(x, bias)?.to_dtype(DType::F32)?;
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
        let Some(cuda) = cuda_or_say_why("matches_the_unfused_ops_within_1e_5_on_cuda") else { return };
        // The same shapes as on the CPU, plus one that is not a multiple of the block size
        // and a row wider than a block.
        for (tokens, width) in [(1, 3072), (8, 3072), (64, 3072), (5, 7), (3, 1000)] {
            let x_cpu = Tensor::randn(0f32, 3.0, (tokens, width), &Device::Cpu).unwrap();
            let bias_cpu = Tensor::randn(0f32, 1.0, width, &Device::Cpu).unwrap();
            let (x, bias) = (x_cpu.to_device(&cuda).unwrap(), bias_cpu.to_device(&cuda).unwrap());
            let err = max_abs_error(&x, &bias).unwrap();
            assert!(err <= 1e-5, "CUDA {tokens}x{width}: largest difference {err} is over 1e-5");
            // And across devices: the kernel against candle's unfused ops on the CPU.
            let cpu = x_cpu.broadcast_add(&bias_cpu).unwrap().gelu().unwrap();
            let gpu = FusedBiasGelu.forward(&x, &bias).unwrap().to_device(&Device::Cpu).unwrap();
            let err = (gpu - cpu).unwrap().abs().unwrap().flatten_all().unwrap().max(0).unwrap().to_scalar::<f32>().unwrap();
            assert!(err <= 1e-5, "CUDA {tokens}x{width}: {err} from the CPU's unfused ops, over 1e-5");
        }
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn half_precision_on_cuda_rounds_only_the_result() {
        use candle_core::DType;
        let Some(cuda) = cuda_or_say_why("half_precision_on_cuda_rounds_only_the_result") else { return };
        // The kernel computes in f32 and rounds once, so it stays within about half a unit in
        // the last place of the exact result: 2^-11 relative for f16, 2^-8 for bf16.
        for (dtype, tolerance) in [(DType::F16, 1e-3f32), (DType::BF16, 8e-3)] {
            let x = Tensor::randn(0f32, 3.0, (8, 3072), &Device::Cpu).unwrap().to_dtype(dtype).unwrap().to_device(&cuda).unwrap();
            let bias = Tensor::randn(0f32, 1.0, 3072, &Device::Cpu).unwrap().to_dtype(dtype).unwrap().to_device(&cuda).unwrap();
            let got = FusedBiasGelu.forward(&x, &bias).unwrap();
            assert_eq!(got.dtype(), dtype);
            // The reference: the same (rounded) inputs, computed in f32 by candle's own ops.
            let exact = x.to_dtype(DType::F32).unwrap().broadcast_add(&bias.to_dtype(DType::F32).unwrap()).unwrap().gelu().unwrap();
            let got: Vec<f32> = got.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap();
            let exact: Vec<f32> = exact.flatten_all().unwrap().to_vec1().unwrap();
            for (g, e) in got.iter().zip(&exact) {
                assert!((g - e).abs() <= tolerance * e.abs().max(1.0), "{dtype:?}: got {g}, expected {e}");
            }
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
