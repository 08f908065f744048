//! `gpt2 bench`: the engine's speed on the shapes that matter, in a JSON that compares by name
//! with `scripts/torch-reference.py` (PyTorch eager on the same machine).
//!
//! Each case is warmed up, then timed over repeats; the report gives median, min and max.
//! Times are host wall clock around work that has finished (the device is synchronised
//! before the clock stops), so they are right on CUDA too.

use std::time::Instant;

use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use crate::cpu::KernelPath;
use crate::error::Result;
use crate::linear::{Layout, Linear};
use crate::model::{Logits, Model, Segment};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseResult {
    pub name: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub repeats: usize,
}

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

/// Times `f` `warmup` times untimed, then `repeats` times.
pub fn time_case(name: &str, device: &Device, warmup: usize, repeats: usize, mut f: impl FnMut() -> Result<()>) -> Result<CaseResult> {
    for _ in 0..warmup {
        f()?;
    }
    device.synchronize()?;
    let mut ms = Vec::with_capacity(repeats);
    for _ in 0..repeats.max(1) {
        let start = Instant::now();
        f()?;
        device.synchronize()?;
        ms.push(start.elapsed().as_secs_f64() * 1e3);
    }
    let median = median(&mut ms);
    Ok(CaseResult { name: name.to_string(), median_ms: median, min_ms: ms[0], max_ms: ms[ms.len() - 1], repeats: ms.len() })
}

/// The median of a non-empty sample (sorts it in place).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Seeded ids that exist in any vocabulary of at least 256 tokens.
fn ids(batch: usize, seq: usize, vocab: usize) -> Vec<Vec<u32>> {
    (0..batch).map(|b| (0..seq).map(|t| ((b * 7919 + t * 104_729) % vocab) as u32).collect()).collect()
}

/// The engine benchmark: (a) forward B=1 T=8 with logits for every position, (b) prefill
/// B=1 T=128, (c) one KV-cache decode step at context 32 for B = 1, 8, 16.
pub fn run_model_cases(model: &Model, warmup: usize, repeats: usize, mut progress: impl FnMut(&str)) -> Result<Vec<CaseResult>> {
    let vocab = model.config().vocab_size;
    let dev = model.device();
    let mut results = Vec::new();

    progress("forward_b1_t8");
    let x = ids(1, 8, vocab).remove(0);
    results.push(time_case("forward_b1_t8", dev, warmup, repeats, || {
        model.forward_one(&x, &mut model.new_cache(8), Logits::AllPositions).map(drop)
    })?);

    progress("prefill_b1_t128");
    let x = ids(1, 128, vocab).remove(0);
    results.push(time_case("prefill_b1_t128", dev, warmup, repeats, || {
        model.forward_one(&x, &mut model.new_cache(128), Logits::LastPosition).map(drop)
    })?);

    for batch in [1, 8, 16] {
        let name = format!("decode_b{batch}_ctx32");
        progress(&name);
        let mut filled = model.new_caches(batch, 33);
        model.forward(&mut Segment::rows(&ids(batch, 32, vocab), &mut filled, Logits::LastPosition)?)?;
        let step = ids(batch, 1, vocab);
        // Each repeat decodes column 33 from a copy of the same 32-column cache.
        results.push(time_case(&name, dev, warmup, repeats, || {
            model.forward(&mut Segment::rows(&step, &mut filled.clone(), Logits::LastPosition)?).map(drop)
        })?);
    }
    Ok(results)
}

/// The memory read bandwidth, measured where the profile's ceilings are (one measurement).
pub use crate::ceilings::memory_read_bandwidth;

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
        for (name, ms) in [("(in,out)", Some(self.in_out_ms)), ("packed", self.packed_ms)] {
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
pub fn run_layout_cases(device: &Device, kernels: KernelPath, warmup: usize, repeats: usize) -> Result<Vec<LayoutResult>> {
    let shapes = [("c_attn", 768, 2304), ("attn.c_proj", 768, 768), ("c_fc", 768, 3072), ("mlp.c_proj", 3072, 768), ("lm_head", 768, 50257)];
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
                ms.push(time_case(matrix, device, warmup, repeats, || lin.matmul(&x).map(drop))?.median_ms);
            }
            let (out_in_ms, in_out_ms, packed_ms) = (ms[0], ms[1], ms.get(2).copied());
            rows.push(LayoutResult { matrix: matrix.to_string(), m, in_dim: din, out_dim: dout, out_in_ms, in_out_ms, packed_ms });
        }
    }
    Ok(rows)
}
