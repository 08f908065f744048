//! GPT-2's dense layers and the memory layout of their weights.
//!
//! The checkpoint stores `Conv1D` weights as (in, out). That is a storage format, not a
//! requirement; each weight is laid out once, at load time, the way its device (and on the
//! CPU, the run's kernel path, `cpu::KernelPath`) multiplies fastest:
//! - the `avx512` and `avx2` paths: packed into column panels for our own kernel
//!   (`cpu::packed_matmul`), which runs every GPT-2 product, from a one-row decode step to a
//!   128-token prefill: with AVX-512 1.2–3× faster than candle's gemm on the development
//!   machine; with AVX2 at least as fast as gemm at every GPT-2 shape from 1 to 128 rows, and
//!   1.5–2.4× faster from 2 to 16 rows (the `matmul_kernels` example, one thread, busy
//!   2-core machine);
//! - the `portable` path: (out, in), every product through candle's gemm with a transposed view;
//! - CUDA: the checkpoint's (in, out), which cuBLAS reads at full speed.
//!
//! Each product's profiler row is tagged with the kernel that ran (`ops::label`).
//!
//! `gpt2 bench --layouts` times every GPT-2 weight shape in each layout at M = 1, 8, 16 and 128
//! to check those choices on the machine at hand.

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;

use crate::cpu::packed_matmul::PackedWeight;
use crate::cpu::KernelPath;
use crate::error::Result;
use crate::ops::{self, label};
use crate::work;

/// How a weight of logical shape (in, out) is held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Contiguous (out, in), multiplied as `x · wᵀ` through a transposed view.
    OutIn,
    /// Contiguous (in, out), multiplied as `x · w`.
    InOut,
    /// Column panels for the packed kernel, AVX-512 or AVX2 (f32 on the CPU only).
    Packed,
}

impl Layout {
    /// The layout for a (in, out) weight of `dtype` on `device` (see the module docs for why).
    pub fn for_device(device: &Device, dtype: DType) -> Self {
        if device.is_cuda() {
            Layout::InOut
        } else if KernelPath::fast_for(device, dtype).is_some() {
            Layout::Packed
        } else {
            Layout::OutIn
        }
    }

    /// [`Layout::for_device`] for a weight being loaded: where `GPT2_CPU_KERNELS` names a path
    /// this CPU cannot run, loading stops with that error instead of running another path.
    fn at_load(device: &Device, dtype: DType) -> Result<Self> {
        if device.is_cpu() {
            KernelPath::configured()?;
        }
        Ok(Self::for_device(device, dtype))
    }
}

/// The weight, held in its layout.
enum Weight {
    /// (out, in), used through a transposed view.
    OutIn(Tensor),
    /// (in, out).
    InOut(Tensor),
    /// Panels of (out, in) for `packed_matmul`, on the kernel path they were packed for.
    Packed(PackedWeight),
}

impl Weight {
    /// The shape as the layout stores it, as PyTorch's profiler shows an input's shape.
    fn stored_dims(&self) -> Result<(usize, usize)> {
        Ok(match self {
            Weight::OutIn(w) | Weight::InOut(w) => w.dims2()?,
            Weight::Packed(w) => w.dims(),
        })
    }
}

pub struct Linear {
    weight: Weight,
    bias: Option<Tensor>,
    /// The profiler row its product is counted under.
    op_name: &'static str,
}

impl Linear {
    /// Loads a checkpoint `Conv1D`: `weight` is (in, out), `bias` is (out).
    pub fn load(vb: VarBuilder, in_dim: usize, out_dim: usize) -> Result<Self> {
        let stored = vb.get((in_dim, out_dim), "weight")?;
        let bias = vb.get(out_dim, "bias")?;
        let layout = Layout::at_load(vb.device(), stored.dtype())?;
        Self::with_layout(stored, Some(bias), layout)
    }

    /// The output head, tied to the token embedding `wte` (vocab, n_embd) = (out, in).
    pub fn tied(wte: Tensor) -> Result<Self> {
        let weight = match Layout::at_load(wte.device(), wte.dtype())? {
            Layout::Packed => Weight::Packed(PackedWeight::pack(&wte, KernelPath::selected())?),
            // wte is already (out, in): on CUDA too, where cuBLAS takes the transposed view.
            Layout::InOut | Layout::OutIn => Weight::OutIn(wte),
        };
        Ok(Self { weight, bias: None, op_name: "lm_head" })
    }

    /// `in_out` is the (in, out) weight; it is copied into `layout` once.
    pub fn with_layout(in_out: Tensor, bias: Option<Tensor>, layout: Layout) -> Result<Self> {
        let weight = match layout {
            Layout::InOut => Weight::InOut(in_out.contiguous()?),
            Layout::OutIn => Weight::OutIn(in_out.t()?.contiguous()?),
            Layout::Packed => Weight::Packed(PackedWeight::pack(&in_out.t()?, KernelPath::selected())?),
        };
        Ok(Self { weight, bias, op_name: "matmul" })
    }

    pub fn bias(&self) -> &Tensor {
        self.bias.as_ref().expect("only the tied lm_head has no bias, and it never asks for one")
    }

    /// `x` (tokens, in) times the weight, without the bias.
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        let (rows, cols) = self.weight.stored_dims()?;
        // Output features: the columns of an (in, out) weight, the rows of the others.
        let n = if let Weight::InOut(_) = self.weight { cols } else { rows };
        let (flops, bytes) = work::matmul(1, m, k, n, x.dtype().size_in_bytes());
        let kernel = match &self.weight {
            Weight::Packed(w) => label::packed(w.path()),
            _ => label::gemm(x.device()),
        };
        let _s = profiler::op_shapes(self.op_name, &[x.dims(), &[rows, cols]]).with_work(flops, bytes).with_kernel(kernel);
        Ok(match &self.weight {
            Weight::Packed(w) => w.matmul(x)?,
            Weight::OutIn(w) => x.matmul(&w.t()?)?,
            Weight::InOut(w) => x.matmul(w)?,
        })
    }

    /// Adds the bias to a fresh product `h`.
    pub fn add_bias(&self, h: Tensor) -> Result<Tensor> {
        match &self.bias {
            Some(b) => ops::bias_add(h, b),
            None => Ok(h),
        }
    }

    /// `h + bias + residual` for a fresh product `h` (one fused pass on the CPU).
    pub fn add_bias_and_residual(&self, h: Tensor, residual: &Tensor) -> Result<Tensor> {
        match &self.bias {
            Some(b) => ops::bias_residual_add(h, b, residual),
            None => ops::residual_add(&h, residual),
        }
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.add_bias(self.matmul(x)?)
    }
}
