//! Picking the next token from one row of logits: greedy, or a seeded draw at a temperature,
//! optionally cut to the `top_k` most likely tokens and then to the smallest set whose
//! probability reaches `top_p` (nucleus sampling).
//!
//! Written here rather than taken from candle-transformers' `LogitsProcessor` because that
//! crate is the largest in a learner's first build (77 s of 411 s of CPU for
//! `cargo run -p exercise-3` on the 2-core machine, on its critical path, with a second
//! `tokenizers` behind it) and this engine needs nothing else from it. The draw itself is rand's
//! `WeightedIndex`; a seed gives the same tokens on every run of one build.

use candle_core::{DType, Tensor, D};
use rand::distr::weighted::WeightedIndex;
use rand::distr::Distribution;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::error::{Error, Result};

/// Below this temperature a draw is an argmax (dividing by it would overflow the softmax).
const GREEDY_BELOW: f64 = 1e-7;

/// One sequence's sampler: its strategy and its own random stream.
pub struct Sampler {
    temperature: f64,
    top_k: Option<usize>,
    top_p: Option<f64>,
    rng: StdRng,
}

impl Sampler {
    /// A sampler for these settings; the caller has checked their ranges.
    pub fn new(temperature: f64, top_k: Option<usize>, top_p: Option<f64>, seed: u64) -> Self {
        Self {
            temperature,
            top_k,
            top_p,
            rng: StdRng::seed_from_u64(seed),
        }
    }

    /// The next token for `logits`, a vector over the vocabulary.
    pub fn next(&mut self, logits: &Tensor) -> Result<u32> {
        if self.temperature < GREEDY_BELOW {
            return Ok(logits.argmax(D::Minus1)?.to_scalar::<u32>()?);
        }
        let scaled: Vec<f32> = logits.to_dtype(DType::F32)?.to_vec1()?;
        let candidates = self.candidates(&scaled);
        let weights = WeightedIndex::new(candidates.iter().map(|&(_, p)| p))
            .map_err(|e| Error::Input(format!("cannot sample from these logits: {e}")))?;
        Ok(candidates[weights.sample(&mut self.rng)].0)
    }

    /// The tokens a draw may pick, with their (unnormalised) probabilities.
    fn candidates(&self, logits: &[f32]) -> Vec<(u32, f32)> {
        // Softmax at the temperature, shifted by the largest logit so exp never overflows;
        // WeightedIndex normalises, so the sum is not divided out.
        let inv_t = (1.0 / self.temperature) as f32;
        let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let mut tokens: Vec<(u32, f32)> = logits
            .iter()
            .enumerate()
            .map(|(i, &l)| (i as u32, ((l - max) * inv_t).exp()))
            .collect();
        let by_probability = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1);
        if let Some(k) = self.top_k.filter(|&k| k < tokens.len()) {
            tokens.select_nth_unstable_by(k - 1, by_probability);
            tokens.truncate(k);
        }
        if let Some(p) = self.top_p.filter(|&p| p < 1.0) {
            tokens.sort_unstable_by(by_probability);
            let total: f32 = tokens.iter().map(|t| t.1).sum();
            let goal = p as f32 * total;
            // Keep the most likely tokens until their mass reaches the goal (always one).
            let mut mass = 0.0;
            let keep = tokens.iter().take_while(|t| {
                let before = mass;
                mass += t.1;
                before < goal
            });
            let keep = keep.count().max(1);
            tokens.truncate(keep);
        }
        tokens
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;

    fn logits(values: &[f32]) -> Tensor {
        Tensor::new(values, &Device::Cpu).unwrap()
    }

    #[test]
    fn greedy_picks_the_largest_logit() {
        let mut s = Sampler::new(0.0, None, None, 1);
        assert_eq!(s.next(&logits(&[0.1, 3.0, -2.0, 2.9])).unwrap(), 1);
    }

    #[test]
    fn top_k_and_top_p_keep_only_the_most_likely_tokens() {
        let row = [0.0, 5.0, 1.0, 4.0, -1.0];
        let kept = |k, p| {
            let mut t: Vec<u32> = Sampler::new(1.0, k, p, 0)
                .candidates(&row)
                .iter()
                .map(|c| c.0)
                .collect();
            t.sort();
            t
        };
        assert_eq!(kept(Some(2), None), [1, 3]);
        assert_eq!(
            kept(None, Some(1e-9)),
            [1],
            "a tiny top_p still keeps the most likely token"
        );
        // exp(0) and exp(-1) of 5, 4: the two largest hold about 95% of the mass.
        assert_eq!(kept(None, Some(0.9)), [1, 3]);
        assert_eq!(kept(None, None).len(), 5);
    }

    #[test]
    fn draws_follow_the_probabilities_and_the_seed() {
        // Two tokens at logits 0 and ln 3 at temperature 1: the second is drawn about 3 times in 4.
        let row = logits(&[0.0, 3f32.ln()]);
        let mut s = Sampler::new(1.0, None, None, 42);
        let ones = (0..4000).filter(|_| s.next(&row).unwrap() == 1).count();
        assert!((2800..3200).contains(&ones), "{ones} of 4000");
        let draw = |seed| {
            let mut s = Sampler::new(1.0, None, None, seed);
            (0..32).map(|_| s.next(&row).unwrap()).collect::<Vec<_>>()
        };
        assert_eq!(draw(5), draw(5));
        assert_ne!(draw(5), draw(6));
    }
}
