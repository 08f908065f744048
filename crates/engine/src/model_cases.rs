//! The engine benchmark's cases, for any model ([`crate::CausalLm`]): each case is warmed up,
//! then timed over repeats; a result gives median, min and max. Times are host wall clock
//! around work that has finished (the device is synchronised before the clock stops), so they
//! are right on CUDA too.

use std::time::Instant;

use candle_core::Device;
use serde::{Deserialize, Serialize};

use crate::causal_lm::CausalLm;
use crate::error::Result;
use crate::pass::{Logits, Segment};

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct CaseResult {
    pub name: String,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    pub repeats: usize,
}

/// Times `f` `warmup` times untimed, then `repeats` times.
pub fn time_case(
    name: &str,
    device: &Device,
    warmup: usize,
    repeats: usize,
    mut f: impl FnMut() -> Result<()>,
) -> Result<CaseResult> {
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
    Ok(CaseResult {
        name: name.to_string(),
        median_ms: median,
        min_ms: ms[0],
        max_ms: ms[ms.len() - 1],
        repeats: ms.len(),
    })
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
    (0..batch)
        .map(|b| {
            (0..seq)
                .map(|t| ((b * 7919 + t * 104_729) % vocab) as u32)
                .collect()
        })
        .collect()
}

/// The engine benchmark: (a) forward B=1 T=8 with logits for every position, (b) prefill
/// B=1 of T=8 and of T=128, logits for the last position only (what a prompt costs before its
/// first token; llama-bench's pp8 and pp128 are these), (c) one KV-cache decode step at
/// context 32 for B = 1, 8, 16.
/// Each case runs on the compute pool ([`crate::cpu::on_pool`]), as generation does.
pub fn run_model_cases(
    model: &dyn CausalLm,
    warmup: usize,
    repeats: usize,
    mut progress: impl FnMut(&str) + Send,
) -> Result<Vec<CaseResult>> {
    crate::cpu::on_pool(move || cases(model, warmup, repeats, &mut progress))
}

fn cases(
    model: &dyn CausalLm,
    warmup: usize,
    repeats: usize,
    progress: &mut (impl FnMut(&str) + Send),
) -> Result<Vec<CaseResult>> {
    let vocab = model.vocab_size();
    let dev = model.device();
    let mut results = Vec::new();

    progress("forward_b1_t8");
    let x = ids(1, 8, vocab).remove(0);
    results.push(time_case("forward_b1_t8", dev, warmup, repeats, || {
        model
            .forward_one(&x, &mut model.new_cache(8), Logits::AllPositions)
            .map(drop)
    })?);

    for tokens in [8, 128] {
        let name = format!("prefill_b1_t{tokens}");
        progress(&name);
        let x = ids(1, tokens, vocab).remove(0);
        results.push(time_case(&name, dev, warmup, repeats, || {
            model
                .forward_one(&x, &mut model.new_cache(tokens), Logits::LastPosition)
                .map(drop)
        })?);
    }

    for batch in [1, 8, 16] {
        let name = format!("decode_b{batch}_ctx32");
        progress(&name);
        let mut filled = model.new_caches(batch, 33);
        model.forward(&mut Segment::rows(
            &ids(batch, 32, vocab),
            &mut filled,
            Logits::LastPosition,
        )?)?;
        let step = ids(batch, 1, vocab);
        // Each repeat decodes column 33 from a copy of the same 32-column cache.
        results.push(time_case(&name, dev, warmup, repeats, || {
            model
                .forward(&mut Segment::rows(
                    &step,
                    &mut filled.clone(),
                    Logits::LastPosition,
                )?)
                .map(drop)
        })?);
    }
    Ok(results)
}
