//! In-process benchmark: time a generation function directly, with no HTTP in the way.
//!
//! The caller supplies the generation as a closure, so this crate needs neither candle nor the
//! model: `generate(prompts, max_tokens, on_token)` must decode every prompt of the batch
//! together for exactly `max_tokens` tokens (EOS ignored) and call `on_token(row)` as each
//! token of each row is produced. The same metrics as a load run come out (TTFT, TPOT, ITL,
//! E2EL per row, output tokens/s), so "is batch 16 faster than 8?" has one answer format.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

use crate::metrics::{self, RequestRecord, Slo};
use crate::run::Run;

/// What one in-process benchmark holds fixed.
#[derive(Debug, Clone, Serialize)]
pub struct InProcessConfig {
    pub batch_size: usize,
    /// Prompt length in tokens; prompts are seeded random token ids below `vocab_size`.
    pub prompt_len: usize,
    /// Tokens generated per row (fixed: EOS is ignored).
    pub output_len: usize,
    /// Untimed batches run first (caches, allocator, thread pool start-up).
    pub warmup: usize,
    /// Timed batches.
    pub repeats: usize,
    pub vocab_size: u32,
    pub seed: u64,
}

/// The per-token callback handed to the generation function: call it with the row index.
pub type OnToken<'a> = dyn FnMut(usize) + 'a;

impl InProcessConfig {
    /// The batch of prompts every repeat decodes.
    pub fn prompts(&self) -> Vec<Vec<u32>> {
        let mut rng = StdRng::seed_from_u64(self.seed);
        (0..self.batch_size)
            .map(|_| {
                (0..self.prompt_len)
                    .map(|_| rng.random_range(0..self.vocab_size))
                    .collect()
            })
            .collect()
    }

    fn validate(&self) -> Result<()> {
        if self.batch_size == 0 || self.prompt_len == 0 || self.output_len == 0 {
            bail!("batch size, prompt length and output length must each be at least 1");
        }
        if self.repeats == 0 {
            bail!("repeats must be at least 1: a benchmark needs timed runs");
        }
        if self.vocab_size == 0 {
            bail!("vocab_size must be at least 1 to draw prompt tokens");
        }
        Ok(())
    }
}

/// Run `warmup` untimed and `repeats` timed batches of `generate`, returning a labelled [`Run`]
/// with one request record per row per repeat.
pub fn run<G>(config: &InProcessConfig, label: &str, slo: &Slo, mut generate: G) -> Result<Run>
where
    G: FnMut(&[Vec<u32>], usize, &mut OnToken<'_>) -> Result<()>,
{
    config.validate()?;
    let prompts = config.prompts();
    for i in 0..config.warmup {
        time_batch(config, &prompts, &mut generate)
            .with_context(|| format!("warm-up batch {} of {}", i + 1, config.warmup))?;
    }
    let mut records = Vec::with_capacity(config.batch_size * config.repeats);
    let mut repeat_tokens_per_s = Vec::with_capacity(config.repeats);
    let mut durations_s = Vec::with_capacity(config.repeats);
    for i in 0..config.repeats {
        let (rows, wall_s) = time_batch(config, &prompts, &mut generate)
            .with_context(|| format!("timed batch {} of {}", i + 1, config.repeats))?;
        // Each repeat is an independent replicate of the batch (crate::intervals).
        records.extend(
            rows.into_iter()
                .map(|r| RequestRecord { replicate: i, ..r }),
        );
        repeat_tokens_per_s.push((config.batch_size * config.output_len) as f64 / wall_s);
        durations_s.push(wall_s);
    }
    let mut m = metrics::compute(&records, &durations_s, slo);
    // Repeats, not time windows, are the samples of throughput here.
    let repeats: Vec<Vec<f64>> = repeat_tokens_per_s.iter().map(|&x| vec![x]).collect();
    m.ci95_output_tokens_per_s = crate::intervals::mean(&repeats).map(|e| e.interval);
    Ok(Run {
        label: label.to_string(),
        config: serde_json::json!({ "mode": "in_process", "in_process": config }),
        metrics: m,
        requests: records,
        repeat_tokens_per_s,
        server_metrics: None,
    })
}

/// Decode one batch and turn its token timestamps into one record per row.
fn time_batch<G>(
    config: &InProcessConfig,
    prompts: &[Vec<u32>],
    generate: &mut G,
) -> Result<(Vec<RequestRecord>, f64)>
where
    G: FnMut(&[Vec<u32>], usize, &mut OnToken<'_>) -> Result<()>,
{
    let mut arrivals: Vec<Vec<Instant>> =
        vec![Vec::with_capacity(config.output_len); prompts.len()];
    let mut stray_row = None;
    let start = Instant::now();
    generate(
        prompts,
        config.output_len,
        &mut |row: usize| match arrivals.get_mut(row) {
            Some(times) => times.push(Instant::now()),
            None => stray_row = Some(row),
        },
    )?;
    let wall_s = start.elapsed().as_secs_f64();
    if let Some(row) = stray_row {
        bail!(
            "the generation function reported a token for row {row}, but the batch has {} rows",
            prompts.len()
        );
    }
    let ms = |t: Instant| (t - start).as_secs_f64() * 1000.0;
    let mut records = Vec::with_capacity(prompts.len());
    for (row, times) in arrivals.iter().enumerate() {
        if times.len() != config.output_len {
            bail!(
                "row {row} produced {} tokens, expected exactly {}: the in-process benchmark needs \
                 fixed-length generation (EOS ignored)",
                times.len(),
                config.output_len
            );
        }
        records.push(RequestRecord {
            ok: true,
            ttft_ms: ms(times[0]),
            e2el_ms: ms(times[times.len() - 1]),
            itl_ms: times
                .windows(2)
                .map(|w| (w[1] - w[0]).as_secs_f64() * 1000.0)
                .collect(),
            output_tokens: times.len(),
            prompt_tokens: Some(prompts[row].len()),
            ..Default::default()
        });
    }
    Ok((records, wall_s))
}
