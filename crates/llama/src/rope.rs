//! The rotary embedding's angle tables: `cos` and `sin` of `position · inv_freq[i]` for every
//! position the model can see and each of the `head_dim / 2` frequencies, computed once at load.
//!
//! Frequency `i` is `theta^(-2i / head_dim)`, as in RoFormer (Su et al., 2021); the scalings
//! change the frequencies, never the positions' count. Llama 3.1's scaling (its
//! `rope_type: "llama3"`) leaves wavelengths shorter than `original / high_freq_factor` alone,
//! divides those longer than `original / low_freq_factor` by `factor`, and blends the two in
//! between, linearly in `original / wavelength`. A GGUF file stores a scaling as one divisor
//! per frequency (`rope_freqs.weight`, llama.cpp's `freq_factors`: its rotation divides frequency
//! `i` by divisor `i`), which for Llama 3.1 the converter computes by the same rule.

use candle_core::{DType, Device, Tensor};

use crate::config::{Config, RopeScaling};
use engine::Result;

pub struct Tables {
    pub cos: Tensor,
    pub sin: Tensor,
}

/// The model's frequencies, in f32 as transformers computes them.
pub fn inverse_frequencies(cfg: &Config) -> Vec<f32> {
    let d = cfg.head_dim;
    let base: Vec<f64> = (0..d / 2)
        .map(|i| 1.0 / cfg.rope_theta.powf((2 * i) as f64 / d as f64))
        .collect();
    match cfg.rope_scaling {
        RopeScaling::None => base.iter().map(|&f| f as f32).collect(),
        RopeScaling::Linear { factor } => base.iter().map(|&f| (f / factor) as f32).collect(),
        RopeScaling::Divisors(ref divisors) => base
            .iter()
            .zip(divisors)
            .map(|(&f, &d)| (f / d) as f32)
            .collect(),
        RopeScaling::Llama3 {
            factor,
            low_freq_factor,
            high_freq_factor,
            original_max_position_embeddings: original,
        } => base
            .iter()
            .map(|&f| {
                let wavelength = 2.0 * std::f64::consts::PI / f;
                if wavelength < original / high_freq_factor {
                    f
                } else if wavelength > original / low_freq_factor {
                    f / factor
                } else {
                    let smooth = (original / wavelength - low_freq_factor)
                        / (high_freq_factor - low_freq_factor);
                    (1.0 - smooth) * f / factor + smooth * f
                }
            })
            .map(|f| f as f32)
            .collect(),
    }
}

impl Tables {
    /// `[max_positions, head_dim / 2]` each, in `dtype` on `device`.
    pub fn new(cfg: &Config, dtype: DType, device: &Device) -> Result<Self> {
        let inv = inverse_frequencies(cfg);
        let half = inv.len();
        // The angle in f32, as transformers multiplies it, then its cosine and sine.
        let angles: Vec<f32> = (0..cfg.max_positions)
            .flat_map(|p| inv.iter().map(move |&f| p as f32 * f))
            .collect();
        let table = |f: fn(f32) -> f32| -> Result<Tensor> {
            let values: Vec<f32> = angles.iter().map(|&a| f(a)).collect();
            Ok(Tensor::from_vec(values, (cfg.max_positions, half), device)?.to_dtype(dtype)?)
        };
        Ok(Tables {
            cos: table(f32::cos)?,
            sin: table(f32::sin)?,
        })
    }
}
