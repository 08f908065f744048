//! The judge: generation timed end to end, an op in the MLP against another.

use crate::Args;
use anyhow::Result;
use bench::inprocess::{self, InProcessConfig};
use bench::metrics::Slo;
use bench::report::Run;
use gpt2::generate::generate_fixed;
use gpt2::{MlpActivation, Model};
use std::time::Instant;

/// Times generation with `activation` in the MLP.
pub fn benchmark(
    model: &mut Model,
    activation: MlpActivation,
    label: &str,
    args: &Args,
) -> Result<Run> {
    model.set_mlp_activation(activation);
    let model = &*model;
    let config = InProcessConfig {
        batch_size: args.batch,
        prompt_len: args.prompt_len,
        output_len: args.output_len,
        warmup: args.warmup,
        repeats: args.repeats,
        vocab_size: model.config().vocab_size as u32,
        seed: args.seed,
    };
    let started = Instant::now();
    generate_fixed(model, &config.prompts(), args.output_len, &mut |_| {})?;
    let one = started.elapsed().as_secs_f64();
    println!(
        "{label}: one batch takes {one:.2} s; {} warm-up + {} timed batches take about {:.0} s",
        args.warmup,
        args.repeats,
        one * (args.warmup + args.repeats) as f64
    );
    inprocess::run(
        &config,
        label,
        &Slo::default(),
        |prompts, max_tokens, on_token| Ok(generate_fixed(model, prompts, max_tokens, on_token)?),
    )
}
