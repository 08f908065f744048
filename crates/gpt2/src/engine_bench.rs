//! `gpt2 bench`: the engine's speed on the shapes that matter, in a JSON that compares by name
//! with `scripts/torch-reference.py` (PyTorch eager on the same machine).
//! The cases themselves are the engine's (`engine::model_cases`, any model); this adds the
//! report and GPT-2's weight-layout cases (`gpt2 bench --layouts`).

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use engine::cpu::KernelPath;
use engine::error::Result;
use engine::linear::{Layout, Linear};
pub use engine::model_cases::{median, run_model_cases, time_case, CaseResult};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Report {
    pub threads: usize,
    pub device: String,
    pub dtype: String,
    /// The CPU kernel path (`avx512`, `avx2`, `portable`), or `cuda`.
    #[serde(default)]
    pub kernels: String,
    pub synthetic_weights: bool,
    pub results: Vec<CaseResult>,
    /// Memory read bandwidth measured on this machine, and the decode floor it implies
    /// (every weight byte read once per step). CPU only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory_read_gb_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decode_floor_ms: Option<f64>,
}

/// The memory read bandwidth, measured where the profile's ceilings are (one measurement).
pub use engine::ceilings::memory_read_bandwidth;

/// One row of `gpt2 bench --layouts`: a GPT-2 weight shape at one batch size, timed with
/// each memory layout.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LayoutResult {
    pub matrix: String,
    pub m: usize,
    pub in_dim: usize,
    pub out_dim: usize,
    pub out_in_ms: f64,
    pub in_out_ms: f64,
    /// The packed kernel's panels (AVX-512 or AVX2, the run's path); absent on the `portable`
    /// path, and on CUDA.
    pub packed_ms: Option<f64>,
}

impl LayoutResult {
    /// The fastest layout's name, as `gpt2 bench --layouts` prints it.
    pub fn fastest(&self) -> &'static str {
        let mut best = ("(out,in)", self.out_in_ms);
        for (name, ms) in [
            ("(in,out)", Some(self.in_out_ms)),
            ("packed", self.packed_ms),
        ] {
            if let Some(ms) = ms.filter(|&ms| ms < best.1) {
                best = (name, ms);
            }
        }
        best.0
    }
}

/// Times `x (m × in) · W (in × out)` with W stored (out, in) and used transposed, with W
/// stored contiguous (in, out), and (f32 on the `avx512` or `avx2` path) with W packed, for each GPT-2 small
/// matrix at the batch sizes generation and prefill use, with the kernels the model would use
/// for each (see `linear`).
pub fn run_layout_cases(
    device: &Device,
    kernels: KernelPath,
    warmup: usize,
    repeats: usize,
) -> Result<Vec<LayoutResult>> {
    let shapes = [
        ("c_attn", 768, 2304),
        ("attn.c_proj", 768, 768),
        ("c_fc", 768, 3072),
        ("mlp.c_proj", 3072, 768),
        ("lm_head", 768, 50257),
    ];
    let mut rows = Vec::new();
    for (matrix, din, dout) in shapes {
        let w = Tensor::randn(0f32, 0.02, (din, dout), device)?;
        let layout = |l| Linear::with_layout(w.clone(), None, l, kernels);
        let mut by_layout = vec![layout(Layout::OutIn)?, layout(Layout::InOut)?];
        if Layout::for_device(kernels, device, w.dtype()) == Layout::Packed {
            by_layout.push(layout(Layout::Packed)?);
        }
        for m in [1, 8, 16, 128] {
            let x = Tensor::randn(0f32, 1.0, (m, din), device)?;
            let mut ms = Vec::new();
            for lin in &by_layout {
                ms.push(
                    time_case(matrix, device, warmup, repeats, || lin.matmul(&x).map(drop))?
                        .median_ms,
                );
            }
            let (out_in_ms, in_out_ms, packed_ms) = (ms[0], ms[1], ms.get(2).copied());
            rows.push(LayoutResult {
                matrix: matrix.to_string(),
                m,
                in_dim: din,
                out_dim: dout,
                out_in_ms,
                in_out_ms,
                packed_ms,
            });
        }
    }
    Ok(rows)
}
