//! Exercise 2: Batch 8 versus 16. Is batch size 16 faster than batch size 8?
//!
//! A benchmarking question, answered properly: GPT-2 generation is measured in process at both
//! batch sizes with everything else held fixed (prompts, prompt length, output length, model,
//! threads), after warm-up, over several repeats; then the two samples are compared with a
//! noise bound. The percentile and the verdict are yours to write (src/stats.rs); the results
//! go to results/bench.json (the bench crate's `bench-report/1`) and results/latency.svg.
//!
//! Solution: src/stats.rs is written, and this run fills in answers.toml from its own results.

use grader::fill_answers as answers;
mod generation;
mod stats;

use anyhow::{Context, Result};
use bench::environment::{Environment, Target};
use bench::inprocess::{self, InProcessConfig};
use bench::metrics::Slo;
use bench::report::{Report, Run};
use bench::stats::Better;
use clap::Parser;
use gpt2::cli::ModelArgs;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    // The synthetic checkpoint times exactly like the real one and needs no download.
    mut_arg("model", |a| a.default_value("synthetic")),
    about = "Exercise 2: measure GPT-2 generation at batch 8 and 16 and compare them with a noise bound",
    long_about = "Exercise 2: Batch 8 versus 16.\n\n\
        Measures in-process GPT-2 generation at two batch sizes (8 and 16 unless you say otherwise) with the same \
        prompts and lengths: warm-up batches first, then timed repeats. Compares the output tokens per second of \
        the two with your percentile and your verdict (src/stats.rs), prints both results tables and the verdict, \
        and writes results/bench.json and results/latency.svg.\n\n\
        Then copy the ratio and the verdict into answers.toml and run `course check 2`."
)]
struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// The baseline batch size (A).
    #[arg(long, default_value_t = 8)]
    batch_a: usize,
    /// The batch size compared with it (B).
    #[arg(long, default_value_t = 16)]
    batch_b: usize,
    /// Prompt length in tokens (seeded random ids).
    #[arg(long, default_value_t = 16)]
    prompt_len: usize,
    /// Tokens generated per sequence (end-of-text ignored, so every repeat does the same work).
    #[arg(long, default_value_t = 8)]
    output_len: usize,
    /// Untimed batches first, for each batch size.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Timed batches for each batch size: the samples the comparison resamples.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Relative difference treated as noise (0.05: a 5% difference is not a difference).
    #[arg(long, default_value_t = 0.05)]
    threshold: f64,
    /// Seed of the prompts and of the bootstrap.
    #[arg(long, default_value_t = 2)]
    seed: u64,
    /// The exercise folder whose results/ receives bench.json [default: this exercise's folder].
    #[arg(long, value_name = "DIR")]
    exercise_dir: Option<PathBuf>,
}

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    // Fail fast, before minutes of measuring, if src/stats.rs still has its TODOs.
    let _ = stats::percentile(&[1.0, 2.0], 50.0);
    let _ = stats::verdict(1.0, 1.0, 0.05, Better::Higher);
    if !(0.0..1.0).contains(&args.threshold) {
        anyhow::bail!("--threshold is a fraction in [0, 1), e.g. 0.05 for 5%; got {}", args.threshold);
    }
    let dir = args.exercise_dir.clone().unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let results = dir.join("results");

    let loaded = args.model.load().context("cannot load GPT-2")?;
    let model = loaded.model;
    let config = |batch_size: usize| InProcessConfig {
        batch_size,
        prompt_len: args.prompt_len,
        output_len: args.output_len,
        warmup: args.warmup,
        repeats: args.repeats,
        vocab_size: model.config().vocab_size as u32,
        seed: args.seed,
    };

    // One batch of A, untimed, to say how long the whole run will take.
    let probe = config(args.batch_a);
    let started = Instant::now();
    generation::generate_fixed(&model, &probe.prompts(), args.output_len, &mut |_| {})?;
    let batch_a_s = started.elapsed().as_secs_f64();
    let batches = (args.warmup + args.repeats) as f64;
    let estimate_s = batches * batch_a_s * (1.0 + args.batch_b as f64 / args.batch_a as f64);
    println!(
        "one batch of {} took {batch_a_s:.2} s; measuring {} warm-up + {} timed batches at each batch size takes about {estimate_s:.0} s",
        args.batch_a, args.warmup, args.repeats
    );

    let measure = |batch: usize| -> Result<Run> {
        println!("measuring batch size {batch}…");
        inprocess::run(&config(batch), &format!("batch-{batch}"), &Slo::default(), |prompts, max_tokens, on_token| {
            generation::generate_fixed(&model, prompts, max_tokens, on_token)
        })
    };
    let run_a = measure(args.batch_a)?;
    let run_b = measure(args.batch_b)?;

    for run in [&run_a, &run_b] {
        print!("\n{}", bench::report::table(run));
        let ttft: Vec<f64> = run.requests.iter().map(|r| r.ttft_ms).collect();
        if let Some(p90) = stats::percentile(&ttft, 90.0) {
            println!("{}: P90 TTFT by your percentile: {p90:.1} ms", run.label);
        }
    }

    // Throughput: the samples are the timed repeats, each an independent measurement.
    let comparison = stats::compare(
        "output_tokens_per_s.p50",
        &run_a.repeat_tokens_per_s,
        &run_b.repeat_tokens_per_s,
        50.0,
        Better::Higher,
        args.threshold,
        args.seed,
    )
    .context("cannot compare the two runs: a run has no samples or a median of zero tokens/s")?;
    println!("\n{}", bench::report::comparison_text(&comparison, &run_a.label, &run_b.label));

    let device = if model.device().is_cuda() { "cuda" } else { "cpu" };
    let target = Target {
        device: Some(device.to_string()),
        cargo_features: if cfg!(feature = "cuda") { vec!["cuda".to_string()] } else { vec![] },
        dtype: Some(format!("{:?}", model.dtype()).to_lowercase()),
    };
    let mut report = Report::new(Environment::capture(target), vec![run_a, run_b]);
    report.comparison = Some(comparison.clone());
    let json = results.join("bench.json");
    report.write(&json)?;
    let svg = results.join("latency.svg");
    bench::plot::write_latency_cdf(&svg, &[&report.runs[0], &report.runs[1]])?;
    println!("wrote {} and {}", json.display(), svg.display());
    // The answers: the comparison's ratio and its verdict, as read from the printed comparison.
    answers::fill(
        &dir.join("answers.toml"),
        &[("comparison.ratio".into(), comparison.ratio.into()), ("comparison.verdict".into(), comparison.verdict.as_str().into())],
    )?;
    println!("Next: `course check 2`.");
    Ok(())
}
