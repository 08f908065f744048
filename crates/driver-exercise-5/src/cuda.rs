//! The CUDA plumbing of the learner's fused op (built with `--features cuda` only): launch the
//! kernel of their src/fused_bias_gelu.cu, which their build.rs compiled to PTX, with one thread
//! per element. The fusion itself is the kernel's body; nothing here is the learner's to change.

use candle_core::backend::BackendStorage;
use candle_core::cuda_backend::cudarc::driver::{
    CudaSlice, DeviceRepr, LaunchConfig, PushKernelArg, ValidAsZeroBits,
};
use candle_core::cuda_backend::{kernel_name, Map2, WrapErr};
use candle_core::{CudaDevice, CudaStorage, DType, Layout, Shape, WithDType};

/// A package's compiled kernel: what [`kernel!`](crate::kernel) gives.
pub struct Kernel {
    /// The PTX text of src/fused_bias_gelu.cu.
    pub ptx: &'static str,
    /// The name the device caches the loaded module under: one per package, so the exercise's
    /// and the solution's kernels never stand in for each other.
    pub module: &'static str,
}

/// The [`Kernel`] of the package this is written in: `$OUT_DIR/ptx.rs`, written by its build.rs,
/// defines `FUSED_BIAS_GELU`, the PTX text of its src/fused_bias_gelu.cu.
#[macro_export]
macro_rules! kernel {
    () => {{
        mod ptx {
            include!(concat!(env!("OUT_DIR"), "/ptx.rs"));
        }
        $crate::cuda::Kernel {
            ptx: ptx::FUSED_BIAS_GELU,
            module: concat!(env!("CARGO_PKG_NAME"), "::fused_bias_gelu"),
        }
    }};
}

/// Threads per block: with one thread per element, any multiple of the warp size works.
const BLOCK: u32 = 256;

/// `gelu_tanh(x + bias)` on the GPU; the same checks as the CPU path, then one launch.
pub fn forward(
    op: &'static str,
    kernel: &'static Kernel,
    s1: &CudaStorage,
    l1: &Layout,
    s2: &CudaStorage,
    l2: &Layout,
) -> candle_core::Result<(CudaStorage, Shape)> {
    match (s1.dtype(), s2.dtype()) {
        (x, b) if x != b => {
            candle_core::bail!("{op}: x is {x:?} but bias is {b:?}; give both the same dtype")
        }
        (DType::F32 | DType::F16 | DType::BF16, _) => {}
        (other, _) => {
            candle_core::bail!("{op}: the CUDA kernel takes f32, f16 or bf16, not {other:?}")
        }
    }
    let width = crate::op::row_width(op, l1, l2)?;
    let device = s1.device();
    let slice = Launch { op, width, kernel }.map(&s1.slice, l1, &s2.slice, l2, device)?;
    Ok((
        CudaStorage {
            slice,
            device: device.clone(),
        },
        l1.shape().clone(),
    ))
}

/// One launch of `fused_bias_gelu_<dtype>`, for whichever dtype the storage holds.
struct Launch {
    op: &'static str,
    width: usize,
    kernel: &'static Kernel,
}

impl Map2 for Launch {
    fn f<T: DeviceRepr + WithDType + ValidAsZeroBits>(
        &self,
        x: &CudaSlice<T>,
        l1: &Layout,
        bias: &CudaSlice<T>,
        l2: &Layout,
        device: &CudaDevice,
    ) -> candle_core::Result<CudaSlice<T>> {
        let (Some((x0, x1)), Some((b0, b1))) = (l1.contiguous_offsets(), l2.contiguous_offsets())
        else {
            candle_core::bail!("{}: expects contiguous tensors", self.op);
        };
        let n = x1 - x0;
        // The kernel indexes with 32-bit integers; the last block may run past `n` by up to
        // BLOCK - 1 threads, which must not wrap around either.
        let (Ok(n32), Ok(width32)) = (i32::try_from(n), u32::try_from(self.width)) else {
            candle_core::bail!(
                "{}: {n} elements is more than the kernel's 32-bit indexing covers",
                self.op
            );
        };
        let (n32, x, bias) = (n32 as u32, x.slice(x0..x1), bias.slice(b0..b1));
        // SAFETY: the launch below writes every one of the n elements before anyone reads them.
        let mut out = unsafe { device.alloc::<T>(n) }?;
        if n == 0 {
            return Ok(out);
        }
        let func = device.get_or_load_custom_func(
            &kernel_name::<T>("fused_bias_gelu"),
            self.kernel.module,
            self.kernel.ptx,
        )?;
        let config = LaunchConfig {
            grid_dim: (n32.div_ceil(BLOCK), 1, 1),
            block_dim: (BLOCK, 1, 1),
            shared_mem_bytes: 0,
        };
        let mut launch = func.builder();
        launch.arg(&x);
        launch.arg(&bias);
        launch.arg(&mut out);
        launch.arg(&n32);
        launch.arg(&width32);
        // SAFETY: the arguments match the kernel's signature
        // (const T*, const T*, T*, unsigned int, unsigned int), and every pointer covers the
        // elements the kernel reads or writes: n of x and out, width of bias.
        unsafe { launch.launch(config) }.w()?;
        Ok(out)
    }
}
