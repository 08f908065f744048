//! Are the learner's fused ops correct? Each written stage against candle's unfused ops, on the
//! device the model runs on, before anything is measured: a wrong op stops the run before GPT-2
//! is even downloaded.

use crate::{Learner, Stage, NOT_WRITTEN};
use anyhow::{bail, Context, Result};
use candle_core::{DType, Device, Tensor};
use engine::ops::BiasActivation;
use std::path::Path;

/// The most a fused op may differ from the unfused ops.
pub const LIMIT: f32 = 1e-5;

/// The device as results files name it.
pub fn device_name(device: &Device) -> &'static str {
    if device.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

/// Compares each written stage with the unfused ops on random f32 inputs of GPT-2 small's MLP
/// shapes on `device`, and writes the largest differences; refuses to go on when stage 1 is
/// unwritten or a stage is over the limit. Returns the stages that ran, with their errors.
pub fn check(learner: &Learner, device: &Device, path: &Path) -> Result<Vec<(Stage, f32)>> {
    let (source, test) = if device.is_cuda() {
        (
            "src/fused_bias_gelu.cu",
            "cargo test -p exercise-5 --features cuda",
        )
    } else {
        ("src/fused.rs", "cargo test -p exercise-5")
    };
    let candidates = [
        Stage {
            label: "stage 1, the fusion",
            op: learner.stage1.clone(),
            dir: "stage1",
        },
        Stage {
            label: "stage 2, the kernel fix",
            op: learner.stage2.clone(),
            dir: "stage2",
        },
    ];
    let mut checked = Vec::new();
    let mut json = Vec::new();
    for stage in candidates {
        // Stage 2 rewrites the CPU loop only: on a GPU both stages launch the same kernel, so
        // there is nothing more to check or profile, and stage 2 is not required there.
        if device.is_cuda() && !checked.is_empty() {
            println!(
                "{} ({}): not run on a GPU, where it launches the same kernel as stage 1 (stage 2 is not required there)",
                stage.label,
                stage.op.name()
            );
            continue;
        }
        let mut worst = 0f32;
        let mut unwritten = false;
        for tokens in [1, 8, 64] {
            // Drawn on the CPU, so both devices check the same numbers.
            let x = Tensor::randn(0f32, 3.0, (tokens, 3072), &Device::Cpu)?.to_device(device)?;
            let bias = Tensor::randn(0f32, 1.0, 3072, &Device::Cpu)?.to_device(device)?;
            let err = match max_abs_error(stage.op.as_ref(), &x, &bias) {
                Ok(err) => err,
                Err(e) if e.to_string().contains(NOT_WRITTEN) && !checked.is_empty() => {
                    unwritten = true;
                    break;
                }
                Err(e) => {
                    return Err(e).with_context(|| {
                        format!(
                            "{}: the op failed on a {tokens}x3072 input; fix {source} (`{test}`)",
                            stage.label
                        )
                    })
                }
            };
            if err.is_nan() {
                bail!("{}: your op produced NaN on a {tokens}x3072 input where the unfused ops did not: fix {source} (`{test}`)", stage.label);
            }
            worst = worst.max(err);
        }
        if unwritten {
            println!("{} ({}): not written yet", stage.label, stage.op.name());
            continue;
        }
        println!(
            "{} ({}): largest difference from broadcast_add + gelu {worst:e} (limit {LIMIT:e})",
            stage.label,
            stage.op.name()
        );
        if worst > LIMIT {
            bail!("{} differs from the unfused ops by {worst:e}, over the limit of {LIMIT:e}: fix {source} before measuring it (`{test}`)", stage.label);
        }
        json.push(serde_json::json!({ "op": stage.op.name(), "max_abs_error": worst }));
        checked.push((stage, worst));
    }
    let worst = checked.iter().map(|(_, e)| *e).fold(0.0, f32::max);
    let file = serde_json::json!({
        "schema": "fused-check/2",
        "max_abs_error": worst,
        "limit": LIMIT,
        "shape": [64, 3072],
        "device": device_name(device),
        "stages": json,
    });
    std::fs::write(path, serde_json::to_string_pretty(&file)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {}", path.display());
    Ok(checked)
}

/// The largest absolute difference between `op` and candle's unfused ops (`broadcast_add`,
/// then `gelu`) on `x` and `bias`, on whichever device they are.
pub fn max_abs_error(
    op: &dyn BiasActivation,
    x: &Tensor,
    bias: &Tensor,
) -> candle_core::Result<f32> {
    let unfused = x.broadcast_add(bias)?.gelu()?;
    largest_difference(&op.forward(x, bias)?, &unfused)
}

/// The largest absolute difference between two tensors of one shape, in f32, on whichever device
/// they are.
pub fn largest_difference(a: &Tensor, b: &Tensor) -> candle_core::Result<f32> {
    let diff: Vec<f32> = (a.to_dtype(DType::F32)? - b.to_dtype(DType::F32)?)?
        .abs()?
        .flatten_all()?
        .to_vec1()?;
    // A NaN anywhere is the worst error of all: keep it rather than let `max` skip it.
    Ok(diff.into_iter().fold(0.0, |worst, d| {
        if d.is_nan() || worst.is_nan() {
            f32::NAN
        } else {
            worst.max(d)
        }
    }))
}
