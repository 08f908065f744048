//! Exercise 5: Fuse, then judge.
//!
//! The whole story in one run: check your fused bias-add + GELU (src/fused.rs) against candle's
//! unfused ops; profile a forward pass with the stock, unfused ops and with yours (the
//! activation line should shrink); then benchmark generation end to end both ways and let the
//! noise-bounded comparison judge whether the fix made the system faster.
//!
//! TODO (you): the fused op in src/fused.rs, then run this and fill in answers.toml.

mod fused;

use anyhow::{bail, Context, Result};
use bench::compare::{compare_runs, MetricChoice};
use bench::environment::{Environment, Target};
use bench::inprocess::{self, InProcessConfig};
use bench::metrics::Slo;
use bench::report::{Report, Run};
use candle_core::{Device, Tensor};
use clap::Parser;
use gpt2::cli::ModelArgs;
use gpt2::profile::{profile_forward, write_exports, ForwardProfile};
use gpt2::generate::generate_fixed;
use gpt2::{MlpActivation, Model};
use profiler::{CudaTiming, SortBy, TableOptions};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Instant;

/// The most the fused op may differ from the unfused ops.
const LIMIT: f32 = 1e-5;

#[derive(Parser)]
#[command(
    about = "Exercise 5: check your fused bias-add + GELU, profile before and after, then benchmark end to end",
    long_about = "Exercise 5: Fuse, then judge.\n\n\
        1. Compares your fused op (src/fused.rs) with candle's unfused broadcast_add + gelu on random inputs and \
        writes the largest difference to results/fused_check.json (it must be at most 1e-5).\n\
        2. Profiles a GPT-2 forward pass with the stock, unfused ops (results/unfused/) and with your op plugged \
        into the MLP (results/fused/), and prints the difference.\n\
        3. Benchmarks generation end to end both ways and compares output tokens per second with a noise bound \
        (results/bench.json, results/latency.svg).\n\n\
        Then fill in answers.toml and run `course check 5`.\n\n\
        The fused op runs on the CPU, and on a GPU when the exercise is built with `--features cuda` (its kernel is \
        src/fused_bias_gelu.cu): `cargo run -p exercise-5 --features cuda -- --device cuda`."
)]
struct Args {
    #[command(flatten)]
    model: ModelArgs,
    /// Tokens per sequence in the profiled forward pass.
    #[arg(long, default_value_t = 8)]
    seq: usize,
    /// Forwards recorded in each profile.
    #[arg(long, default_value_t = 5)]
    active: usize,
    /// Batch size of the end-to-end benchmark.
    #[arg(long, default_value_t = 8)]
    batch: usize,
    /// Prompt length of the benchmark, in tokens.
    #[arg(long, default_value_t = 16)]
    prompt_len: usize,
    /// Tokens generated per sequence in the benchmark.
    #[arg(long, default_value_t = 8)]
    output_len: usize,
    /// Untimed benchmark batches first, each way.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Timed benchmark batches each way: the samples the comparison resamples.
    #[arg(long, default_value_t = 5)]
    repeats: usize,
    /// Relative difference treated as noise in the comparison.
    #[arg(long, default_value_t = 0.05)]
    threshold: f64,
    /// Seed of the prompts and of the bootstrap.
    #[arg(long, default_value_t = 5)]
    seed: u64,
    /// The exercise folder whose results/ receives the files [default: this exercise's folder].
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
    let results = args.exercise_dir.clone().unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR"))).join("results");
    std::fs::create_dir_all(&results).with_context(|| format!("cannot create {}", results.display()))?;

    // Your op is compiled in this package: the root Cargo.toml's dev profile optimises it as it
    // does candle's ops (no `--release` needed), so the comparison is fair in the learner's build.
    // The op is checked first, on the device the model will run on (the op the profile and the
    // benchmark time), so a wrong op stops the run before GPT-2 is even downloaded.
    let device = args.model.device.open().context("cannot open the device")?;
    let on_cuda = device.is_cuda();
    println!("1. Is the fused op correct? (on the {})", if on_cuda { "GPU: src/fused_bias_gelu.cu" } else { "CPU" });
    check_correctness(&device, &results.join("fused_check.json"))?;

    let loaded = args.model.load().context("cannot load GPT-2")?;
    let mut model = loaded.model;
    if loaded.checkpoint.synthetic {
        println!("(synthetic weights: every timing is real, the model's outputs are not)");
    }
    let stock = MlpActivation::Stock;
    let fused = MlpActivation::Custom(Arc::new(fused::FusedBiasGelu));

    println!("\n2. Profile before and after (forward pass B=1 T={}, {} recorded):", args.seq, args.active);
    let before = profile(&mut model, &stock, &args, &results.join("unfused"))?;
    let after = profile(&mut model, &fused, &args, &results.join("fused"))?;
    print!("{}", profiler::compare(&before, &after));
    print_moved(&before, &after, "gelu", fused::NAME, on_cuda);

    println!("\n3. Benchmark end to end: generation at batch {}, unfused against fused.", args.batch);
    let run_a = benchmark(&mut model, stock, "unfused", &args)?;
    let run_b = benchmark(&mut model, fused, "fused", &args)?;
    for run in [&run_a, &run_b] {
        print!("\n{}", bench::report::table(run));
    }
    let metric = MetricChoice::parse("output_tokens_per_s")?;
    let comparison = compare_runs(&run_a, &run_b, metric, args.threshold)?;
    println!("\n{}", bench::report::comparison_text(&comparison, &run_a.label, &run_b.label));
    let target = Target {
        device: Some(device_name(model.device()).into()),
        cargo_features: if cfg!(feature = "cuda") { vec!["cuda".into()] } else { vec![] },
        dtype: Some(format!("{:?}", model.dtype()).to_lowercase()),
    };
    let mut report = Report::new(Environment::capture(target), vec![run_a, run_b]);
    report.comparison = Some(comparison);
    report.write(&results.join("bench.json"))?;
    bench::plot::write_latency_cdf(&results.join("latency.svg"), &[&report.runs[0], &report.runs[1]])?;
    println!("wrote {}/: fused_check.json, unfused/report.json, fused/report.json, bench.json", results.display());
    println!("Next: fill in answers.toml from those files, then `course check 5`.");
    Ok(())
}

/// The device as results files name it.
fn device_name(device: &Device) -> &'static str {
    if device.is_cuda() {
        "cuda"
    } else {
        "cpu"
    }
}

/// Compares the fused op with the unfused ops on random f32 inputs of GPT-2 small's MLP shapes
/// on `device`, and writes the largest difference; refuses to go on when it is over the limit.
fn check_correctness(device: &Device, path: &Path) -> Result<()> {
    let (source, test) = if device.is_cuda() {
        ("src/fused_bias_gelu.cu", "cargo test -p exercise-5 --features cuda")
    } else {
        ("src/fused.rs", "cargo test -p exercise-5")
    };
    let mut worst = 0f32;
    for tokens in [1, 8, 64] {
        // Drawn on the CPU, so both devices check the same numbers.
        let x = Tensor::randn(0f32, 3.0, (tokens, 3072), &Device::Cpu)?.to_device(device)?;
        let bias = Tensor::randn(0f32, 1.0, 3072, &Device::Cpu)?.to_device(device)?;
        let err = fused::max_abs_error(&x, &bias)?;
        if err.is_nan() {
            bail!("your fused op produced NaN on a {tokens}x3072 input where the unfused ops did not: fix {source} (`{test}`)");
        }
        worst = worst.max(err);
    }
    let json = serde_json::json!({
        "schema": "fused-check/1",
        "op": fused::NAME,
        "max_abs_error": worst,
        "limit": LIMIT,
        "shape": [64, 3072],
        "device": device_name(device),
    });
    std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n").with_context(|| format!("cannot write {}", path.display()))?;
    println!("largest difference from broadcast_add + gelu: {worst:e} (limit {LIMIT:e}); wrote {}", path.display());
    if worst > LIMIT {
        bail!("your fused op differs from the unfused ops by {worst:e}, over the limit of {LIMIT:e}: fix {source} before measuring it (`{test}`)");
    }
    Ok(())
}

/// Profiles a forward pass with `activation` in the MLP, prints the top rows and writes the
/// exports into `dir`.
fn profile(model: &mut Model, activation: &MlpActivation, args: &Args, dir: &Path) -> Result<profiler::Report> {
    model.set_mlp_activation(activation.clone());
    let spec = ForwardProfile { batch: 1, seq: args.seq, warmup: 2, active: args.active, record_shapes: true, with_flops: false, cuda_timing: CudaTiming::Events };
    let profile = profile_forward(model, &spec)?;
    // A GPU's question is where its time goes: sort by self CUDA time there.
    let sort_by = if model.device().is_cuda() { SortBy::SelfCudaTimeTotal } else { SortBy::SelfCpuTimeTotal };
    let options = TableOptions { sort_by, row_limit: Some(8), ..TableOptions::default() };
    println!("\n{}:", dir.display());
    print!("{}", profile.table(options));
    let files = write_exports(&profile, options, dir)?;
    profiler::Report::read_json(&files.report).map_err(|e| anyhow::anyhow!("{e}"))
}

/// What moved in the roofline columns from the unfused activation's row to the fused op's:
/// the rates, the % of the roofline, the bound and the kernel. On a CPU the stock GELU is far
/// below its roofline (a slow per-element tanh); on a GPU it is near its memory roofline, and
/// fusing removes a pass over memory instead.
fn print_moved(before: &profiler::Report, after: &profiler::Report, from: &str, to: &str, on_cuda: bool) {
    let share = |row: &profiler::ReportRow| if on_cuda { row.self_cuda_pct.unwrap_or(0.0) } else { row.self_cpu_pct };
    let (Some(a), Some(b)) = (before.rows.iter().find(|r| r.name == from), after.rows.iter().find(|r| r.name == to)) else {
        println!("(no `{from}` row before or no `{to}` row after: nothing to compare)");
        return;
    };
    println!("\nWhat moved, `{from}` (unfused) → `{to}` (fused):");
    println!("  share of the step   {:>9.2}% → {:.2}%", share(a), share(b));
    match (&a.roofline, &b.roofline) {
        (Some(ra), Some(rb)) => {
            println!("  GB/s                {:>10.3} → {:.3}", ra.gbytes_per_s, rb.gbytes_per_s);
            println!("  GFLOP/s             {:>10.3} → {:.3}", ra.gflops_per_s, rb.gflops_per_s);
            println!("  % of roofline       {:>9.1}% → {:.1}%", ra.pct_of_roofline, rb.pct_of_roofline);
            println!("  % of memory roofline{:>9.1}% → {:.1}%", ra.pct_of_memory_roofline, rb.pct_of_memory_roofline);
            println!("  bound               {:>10} → {}", ra.bound.as_str(), rb.bound.as_str());
        }
        _ => println!("  (no roofline columns: a row declared no work, or the run measured no ceilings)"),
    }
    let kernel = |r: &profiler::ReportRow| r.kernel.clone().unwrap_or_else(|| "unlabelled".into());
    println!("  kernel              {:>10} → {}", kernel(a), kernel(b));
}

/// Times generation with `activation` in the MLP.
fn benchmark(model: &mut Model, activation: MlpActivation, label: &str, args: &Args) -> Result<Run> {
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
    println!("{label}: one batch takes {one:.2} s; {} warm-up + {} timed batches take about {:.0} s", args.warmup, args.repeats, one * (args.warmup + args.repeats) as f64);
    inprocess::run(&config, label, &Slo::default(), |prompts, max_tokens, on_token| Ok(generate_fixed(model, prompts, max_tokens, on_token)?))
}
