//! Dense layers and the memory layout of their weights.
//!
//! GPT-2's checkpoint stores `Conv1D` weights as (in, out), the Llama family's `nn.Linear` as
//! (out, in). That is a storage format, not a
//! requirement; each weight is laid out once, at load time, the way its device (and on the
//! CPU, the model's kernel path, `cpu::KernelPath`) multiplies fastest:
//! - the `avx512` and `avx2` paths: packed into column panels for our own kernel
//!   (`cpu::packed_matmul`), in the weight's type (f32, or bf16 or f16 beside f32
//!   activations: `KernelPath::activations`), which runs every GPT-2 product, from a one-row
//!   decode step to a 128-token prefill: with AVX-512 1.2–3× faster than candle's gemm on the development
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
use crate::ops::{self, label, list};
use crate::quant::QMatrix;
use crate::work_counts as work;

/// How a weight of logical shape (in, out) is held in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Contiguous (out, in), multiplied as `x · wᵀ` through a transposed view.
    OutIn,
    /// Contiguous (in, out), multiplied as `x · w`.
    InOut,
    /// Column panels for the packed kernel, AVX-512 or AVX2 (the CPU only, with f32
    /// activations; the weight f32, bf16 or f16).
    Packed,
}

impl Layout {
    /// The layout for a (in, out) weight multiplying activations of `dtype` on `device`, in a
    /// model built for `path` (see the module docs for why).
    pub fn for_device(path: KernelPath, device: &Device, dtype: DType) -> Self {
        if device.is_cuda() {
            Layout::InOut
        } else if path.fast_for(device, dtype).is_some() {
            Layout::Packed
        } else {
            Layout::OutIn
        }
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
    /// (out, in) kept in a quantized GGUF type, multiplied by `quant`'s kernels (its own row,
    /// work at the stored width).
    Quantized(QMatrix),
    /// Layers whose outputs sit side by side (a fused `qkv` whose parts a GGUF stores in
    /// different types): each part's product is its own row.
    Parts(Vec<Linear>),
}

impl Weight {
    /// The shape as the layout stores it, as PyTorch's profiler shows an input's shape.
    fn stored_dims(&self) -> Result<(usize, usize)> {
        Ok(match self {
            Weight::OutIn(w) | Weight::InOut(w) => w.dims2()?,
            Weight::Packed(w) => w.dims(),
            Weight::Quantized(q) => q.dims(),
            Weight::Parts(parts) => {
                let mut out = 0;
                for p in parts {
                    out += p.weight.stored_dims()?.0;
                }
                (
                    out,
                    parts
                        .first()
                        .map_or(Ok((0, 0)), |p| p.weight.stored_dims())?
                        .1,
                )
            }
        })
    }

    /// The type its values are stored in.
    fn dtype(&self) -> DType {
        match self {
            Weight::OutIn(w) | Weight::InOut(w) => w.dtype(),
            Weight::Packed(w) => w.dtype(),
            // Never asked: their products count their own work (`Linear::matmul`).
            Weight::Quantized(_) | Weight::Parts(_) => DType::U8,
        }
    }
}

pub struct Linear {
    weight: Weight,
    bias: Option<Tensor>,
    /// The profiler row its product is counted under.
    op: profiler::OpName,
    /// The model's kernel path: the packed weight's, and its bias ops'.
    path: KernelPath,
}

impl Linear {
    /// Loads a checkpoint `Conv1D`: `weight` is (in, out), `bias` is (out). The weight is held
    /// in `vb`'s type, the bias in the activations' (`KernelPath::activations`).
    pub fn load(vb: VarBuilder, in_dim: usize, out_dim: usize, path: KernelPath) -> Result<Self> {
        let activations = path.activations(vb.device(), vb.dtype());
        let stored = vb.get((in_dim, out_dim), "weight")?;
        let bias = vb.get(out_dim, "bias")?.to_dtype(activations)?;
        let layout = Layout::for_device(path, vb.device(), activations);
        Self::with_layout(stored, Some(bias), layout, path)
    }

    /// A PyTorch `nn.Linear`: `weight` is (out, in), in the weights' type, `bias` (out) in the
    /// activations' (`KernelPath::activations`).
    pub fn from_out_in(weight: Tensor, bias: Option<Tensor>, path: KernelPath) -> Result<Self> {
        let activations = path.activations(weight.device(), weight.dtype());
        let layout = Layout::for_device(path, weight.device(), activations);
        let bias = bias.map(|b| b.to_dtype(activations)).transpose()?;
        Self::with_layout(weight.t()?, bias, layout, path)
    }

    /// The output head, (vocab, n_embd) = (out, in), in the weights' type: GPT-2's is its token
    /// embedding `wte` (tied), as are some of the Llama family's; the others store their own.
    pub fn head(w: Tensor, path: KernelPath) -> Result<Self> {
        let activations = path.activations(w.device(), w.dtype());
        let weight = match Layout::for_device(path, w.device(), activations) {
            Layout::Packed => Weight::Packed(PackedWeight::pack(&w, path)?),
            // Already (out, in): on CUDA too, where cuBLAS takes the transposed view.
            Layout::InOut | Layout::OutIn => Weight::OutIn(w),
        };
        Ok(Self {
            weight,
            bias: None,
            op: list::LM_HEAD,
            path,
        })
    }

    /// `in_out` is the (in, out) weight; it is copied into `layout` once (packed for `path`, in
    /// its own type; the other layouts multiply in it, so it must be the activations' type).
    pub fn with_layout(
        in_out: Tensor,
        bias: Option<Tensor>,
        layout: Layout,
        path: KernelPath,
    ) -> Result<Self> {
        let weight = match layout {
            Layout::InOut => Weight::InOut(in_out.contiguous()?),
            Layout::OutIn => Weight::OutIn(in_out.t()?.contiguous()?),
            Layout::Packed => Weight::Packed(PackedWeight::pack(&in_out.t()?, path)?),
        };
        Ok(Self {
            weight,
            bias,
            op: list::MATMUL,
            path,
        })
    }

    /// A weight kept quantized (a GGUF's), (out, in) as stored, its product counted under
    /// `op` (`list::MATMUL`, or `list::LM_HEAD` for the output head); `bias` (out) in the
    /// activations' type.
    pub fn quantized(
        q: QMatrix,
        bias: Option<Tensor>,
        op: profiler::OpName,
        path: KernelPath,
    ) -> Self {
        Self {
            weight: Weight::Quantized(q),
            bias,
            op,
            path,
        }
    }

    /// `parts` (each without a bias) as one layer, their outputs side by side, then `bias`.
    pub fn side_by_side(parts: Vec<Linear>, bias: Option<Tensor>, path: KernelPath) -> Self {
        Self {
            weight: Weight::Parts(parts),
            bias,
            op: list::MATMUL,
            path,
        }
    }

    pub fn bias(&self) -> &Tensor {
        self.bias
            .as_ref()
            .expect("only the tied lm_head has no bias, and it never asks for one")
    }

    /// `x` (tokens, in) times the weight, without the bias.
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        let (rows, cols) = self.weight.stored_dims()?;
        match &self.weight {
            Weight::Quantized(q) => {
                let (flops, bytes) = q.work(m);
                let _s = profiler::op_shapes(self.op, &[x.dims(), &[rows, cols]])
                    .with_work(flops, bytes)
                    .with_kernel(q.label())
                    .with_dtype(q.ggml_type().name());
                return q.matmul(x);
            }
            Weight::Parts(parts) => {
                let outs = parts
                    .iter()
                    .map(|p| p.matmul(x))
                    .collect::<Result<Vec<_>>>()?;
                return Ok(Tensor::cat(&outs, 1)?);
            }
            _ => {}
        }
        // Output features: the columns of an (in, out) weight, the rows of the others.
        let n = if let Weight::InOut(_) = self.weight {
            cols
        } else {
            rows
        };
        // Each operand at its stored width: a half-type weight moves half the bytes.
        let (flops, bytes) = work::matmul_widths(
            1,
            m,
            k,
            n,
            x.dtype().size_in_bytes(),
            self.weight.dtype().size_in_bytes(),
        );
        let kernel = match &self.weight {
            Weight::Packed(w) => label::packed(w.path(), w.dtype(), w.uses_dot_products(m)),
            _ => label::gemm(x.device()),
        };
        let _s = profiler::op_shapes(self.op, &[x.dims(), &[rows, cols]])
            .with_work(flops, bytes)
            .with_kernel(kernel)
            .with_dtype(self.weight.dtype().as_str());
        Ok(match &self.weight {
            Weight::Packed(w) => w.matmul(x)?,
            Weight::OutIn(w) => x.matmul(&w.t()?)?,
            Weight::InOut(w) => x.matmul(w)?,
            Weight::Quantized(_) | Weight::Parts(_) => unreachable!("returned above"),
        })
    }

    /// Adds the bias to a fresh product `h`.
    pub fn add_bias(&self, h: Tensor) -> Result<Tensor> {
        match &self.bias {
            Some(b) => ops::bias_add(h, b, self.path),
            None => Ok(h),
        }
    }

    pub fn forward(&self, x: &Tensor) -> Result<Tensor> {
        self.add_bias(self.matmul(x)?)
    }

    /// `x · W` with the bias still to add: a residual stream adds it, `x + proj(h)`, in the
    /// same pass as the residual itself (one fused row on the CPU). `module` is the scope of the
    /// block part (`attn`, `mlp`) the projection ends: it stays open until that add is done, so
    /// the add is counted in the part it belongs to.
    pub fn project(&self, x: &Tensor, module: profiler::Scope) -> Result<Projected<'_>> {
        Ok(Projected {
            product: self.matmul(x)?,
            linear: self,
            _module: module,
        })
    }
}

/// A projection's product whose bias is added with the residual it joins: `&x + projected` is
/// `x + product + bias`.
pub struct Projected<'a> {
    product: Tensor,
    linear: &'a Linear,
    _module: profiler::Scope,
}

impl std::ops::Add<Projected<'_>> for &Tensor {
    type Output = Result<Tensor>;

    fn add(self, p: Projected<'_>) -> Result<Tensor> {
        match &p.linear.bias {
            Some(b) => ops::bias_residual_add(p.product, b, self, p.linear.path),
            None => ops::residual_add(p.product, self, p.linear.path),
        }
    }
}
