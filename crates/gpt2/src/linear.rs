//! GPT-2's dense layers and the memory layout of their weights.
//!
//! The checkpoint stores `Conv1D` weights as (in, out). That is a storage format, not a
//! requirement. On the CPU every weight is kept as (out, in): a product with 1–16 rows of
//! activations (decode steps, which generation spends its time in) then runs through the
//! skinny kernel (`skinny_matmul`), which reads each weight row once. `gpt2 bench --layouts` times
//! every GPT-2 weight shape both ways at M = 1, 8, 16 and 128 to check that choice.

use candle_core::{Device, Tensor};
use candle_nn::VarBuilder;

use crate::error::Result;
use crate::kernels;
use crate::skinny_matmul;
use crate::work;

/// How a weight of logical shape (in, out) is held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Contiguous (out, in), multiplied as `x · wᵀ` through a transposed view.
    OutIn,
    /// Contiguous (in, out), multiplied as `x · w`.
    InOut,
}

impl Layout {
    /// The layout for a (in, out) weight on `device` (see the module docs for why).
    pub fn for_device(device: &Device) -> Self {
        if device.is_cuda() {
            // cuBLAS reads either layout at full speed; keep the checkpoint's.
            return Layout::InOut;
        }
        Layout::OutIn
    }
}

pub struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
    layout: Layout,
    /// The profiler row its product is counted under.
    op_name: &'static str,
}

impl Linear {
    /// Loads a checkpoint `Conv1D`: `weight` is (in, out), `bias` is (out).
    pub fn load(vb: VarBuilder, in_dim: usize, out_dim: usize) -> Result<Self> {
        let stored = vb.get((in_dim, out_dim), "weight")?;
        let bias = vb.get(out_dim, "bias")?;
        let layout = Layout::for_device(vb.device());
        Self::with_layout(stored, Some(bias), layout)
    }

    /// The output head, tied to the token embedding `wte` (vocab, n_embd) = (out, in).
    pub fn tied(wte: Tensor) -> Self {
        // wte is already (out, in); for CPU that is also the faster layout for the head.
        Self { weight: wte, bias: None, layout: Layout::OutIn, op_name: "lm_head" }
    }

    /// `in_out` is the (in, out) weight; it is copied into `layout` once.
    pub fn with_layout(in_out: Tensor, bias: Option<Tensor>, layout: Layout) -> Result<Self> {
        let weight = match layout {
            Layout::InOut => in_out.contiguous()?,
            Layout::OutIn => in_out.t()?.contiguous()?,
        };
        Ok(Self { weight, bias, layout, op_name: "matmul" })
    }

    pub fn bias(&self) -> &Tensor {
        self.bias.as_ref().expect("only the tied lm_head has no bias, and it never asks for one")
    }

    /// `x` (tokens, in) times the weight, without the bias.
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        let n = self.weight.elem_count() / k;
        let (flops, bytes) = work::matmul(1, m, k, n, x.dtype().size_in_bytes());
        let _s = profiler::op_shapes(self.op_name, &[x.dims(), self.weight.dims()]).with_work(flops, bytes);
        Ok(match self.layout {
            Layout::OutIn if skinny_matmul::applies(x, &self.weight) => skinny_matmul::matmul(x, &self.weight)?,
            Layout::OutIn => x.matmul(&self.weight.t()?)?,
            Layout::InOut => x.matmul(&self.weight)?,
        })
    }

    /// Adds the bias to a fresh product `h` (in place on the CPU, where candle's broadcast
    /// add is a slow single-threaded pass; candle's op elsewhere).
    pub fn add_bias(&self, h: Tensor) -> Result<Tensor> {
        let Some(b) = &self.bias else { return Ok(h) };
        let (flops, bytes) = work::elementwise(h.elem_count(), 1, 1, b.elem_count(), h.dtype().size_in_bytes());
        let _s = profiler::op_shapes("bias_add", &[h.dims()]).with_work(flops, bytes);
        if h.device().is_cpu() {
            kernels::bias_add_(&h, b)?;
            Ok(h)
        } else {
            Ok(h.broadcast_add(b)?)
        }
    }

    /// `h + bias + residual` for a fresh product `h`: one fused pass on the CPU.
    pub fn add_bias_and_residual(&self, h: Tensor, residual: &Tensor) -> Result<Tensor> {
        let Some(b) = &self.bias else { return residual_add(&h, residual) };
        if h.device().is_cpu() {
            let (flops, bytes) = work::elementwise(h.elem_count(), 2, 2, b.elem_count(), h.dtype().size_in_bytes());
            let _s = profiler::op_shapes("bias_residual_add", &[h.dims(), residual.dims()]).with_work(flops, bytes);
            kernels::bias_residual_(&h, b, residual)?;
            Ok(h)
        } else {
            let h = self.add_bias(h)?;
            residual_add(&h, residual)
        }
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.add_bias(self.matmul(x)?)
    }
}

/// The stock residual connection, `x + y`.
pub fn residual_add(x: &Tensor, y: &Tensor) -> Result<Tensor> {
    let (flops, bytes) = work::elementwise(x.elem_count(), 1, 2, 0, x.dtype().size_in_bytes());
    let _s = profiler::op_shapes("residual_add", &[x.dims(), y.dims()]).with_work(flops, bytes);
    Ok((x + y)?)
}
