//! The `gpt2` command: generate text, print logits, and benchmark the engine.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::builder::TypedValueParser as _;
use clap::{Parser, Subcommand};
use engine::profile::ScheduleArgs;
use gpt2::cli::ModelArgs;
use gpt2::engine_bench;
// `gpt2 serve`'s flags (the model's and the server's), in a build with the `serve` feature.
#[cfg(feature = "serve")]
use gpt2::serve::ServeArgs;
use gpt2::CausalLm;
use gpt2::{Flow, Logits, Request, Sampling};
use indicatif::{ProgressBar, ProgressStyle};
use profiler::{CudaTiming, SortBy, TableOptions, View};

/// Counts allocations for `gpt2 profile --profile-memory` (off, one relaxed load an
/// allocation, unless that flag is given).
#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

#[derive(Parser)]
#[command(name = "gpt2", version, about = "GPT-2 in candle: generate, inspect logits, benchmark", long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Continue a prompt, printing tokens as they are generated.
    Generate(GenerateArgs),
    /// Print the logits of every position for a list of token ids (parity checks against
    /// other implementations).
    Logits(LogitsArgs),
    /// Time forward, prefill and decode steps (or, with --layouts, each weight layout).
    Bench(BenchArgs),
    /// Profile a forward pass: print the top-ops table and write report.json, trace.json
    /// and flamegraph.svg.
    Profile(ProfileArgs),
    #[command(about = SERVE_ABOUT)]
    Serve(ServeArgs),
}

#[cfg(feature = "serve")]
const SERVE_ABOUT: &str = "Serve an OpenAI-compatible API (/v1/completions, \
    /v1/chat/completions, /v1/models, /health) with continuous batching.";

/// Without the `serve` feature (scripts/test-aarch64.sh builds gpt2 so, to leave the HTTP stack
/// out) the subcommand is still there, so that `gpt2 serve ...` says what is missing instead of
/// clap's "unrecognized subcommand": it takes any flags and answers [`no_server`].
#[cfg(not(feature = "serve"))]
#[derive(clap::Args)]
#[command(disable_help_flag = true)]
struct ServeArgs {
    /// Whatever was given after `serve`: this build has no server to give it to.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _given: Vec<std::ffi::OsString>,
}
#[cfg(not(feature = "serve"))]
const SERVE_ABOUT: &str = "Not in this build (built without the `serve` feature): \
    `cargo run -p gpt2 -- serve` or `cargo run -p serve` has the OpenAI-compatible server.";

#[derive(clap::Args)]
struct ProfileArgs {
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Sort key, as in PyTorch: self_cpu_time_total, cpu_time_total, self_cuda_time_total,
    /// cuda_time_total or count; with --profile-memory also self_cpu_memory_usage,
    /// cpu_memory_usage, self_cuda_memory_usage or self_device_memory_usage
    /// [default: self_cuda_time_total on CUDA, else self_cpu_time_total].
    #[arg(long)]
    sort_by: Option<SortBy>,
    /// Record memory too (PyTorch's `profile_memory=True`): CPU Mem, Self CPU Mem and the
    /// allocations per row, the peak in the footer, memory-timeline.svg (the recorded forwards)
    /// and memory-timeline-generate.svg (a short generation) beside flamegraph.svg. With
    /// --overhead: a third forward each round, profiled with memory.
    #[arg(long)]
    profile_memory: bool,
    /// With --profile-memory: the tokens the short generation decodes after its prefill.
    #[arg(long, default_value_t = 16, value_name = "N")]
    memory_new_tokens: usize,
    /// Rows shown (report.json always holds every row).
    #[arg(long, default_value_t = 10)]
    row_limit: usize,
    /// Rows per op (`op`), per module (`module`: block, attn, mlp), or both (`all`).
    #[arg(long, default_value = "op")]
    view: View,
    /// One row per op and input shape.
    #[arg(long)]
    group_by_input_shape: bool,
    /// Show achieved GFLOP/s and GB/s per op (always shown, with the roofline columns, when
    /// this machine's ceilings are known: they are measured once and cached).
    #[arg(long)]
    with_flops: bool,
    /// On CUDA: time ops with CUDA events (default) or by synchronising around each op.
    #[arg(long, default_value_t = CudaTiming::Events, value_parser = cuda_timing_values())]
    cuda_timing: CudaTiming,
    /// Folder for report.json, trace.json, stacks.folded and flamegraph.svg.
    #[arg(long, default_value = "target/profile")]
    out: PathBuf,
    /// The MLP's bias + GELU: candle's stock ops one after the other (the default: the rows
    /// exercise 3 profiles and exercise 5 replaces), or the engine's fused kernel.
    #[arg(long, value_enum, default_value_t = Mlp::Stock)]
    mlp: Mlp,
    /// Instead of profiling, compare two report.json files: each op's self time before and
    /// after, and the change (e.g. without and with a fused kernel).
    #[arg(long, num_args = 2, value_names = ["BEFORE", "AFTER"])]
    compare: Option<Vec<PathBuf>>,
    /// Instead of a table, measure the profiler's own cost: N forwards with and N without
    /// recording, alternating, and compare their medians.
    #[arg(long, value_name = "N")]
    overhead: Option<usize>,
    /// Measure this machine's ceilings (memory bandwidth, peak matmul throughput) again
    /// instead of reading them from the cache (e.g. after measuring on a busy machine).
    #[arg(long)]
    remeasure_ceilings: bool,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(clap::Args)]
struct GenerateArgs {
    /// The text to continue.
    #[arg(long)]
    prompt: String,
    /// How many tokens to generate at most.
    #[arg(long, default_value_t = 32)]
    max_tokens: usize,
    /// Sampling temperature; 0 picks the most likely token every time (greedy).
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    /// Sample only among the k most likely tokens.
    #[arg(long)]
    top_k: Option<usize>,
    /// Sample only among the most likely tokens whose probabilities add up to p.
    #[arg(long)]
    top_p: Option<f64>,
    /// Seed of the sampler: the same seed gives the same text.
    #[arg(long, default_value_t = 299_792_458)]
    seed: u64,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(clap::Args)]
struct LogitsArgs {
    /// Comma-separated token ids, e.g. 464,2068,7586.
    #[arg(long, value_delimiter = ',', required = true)]
    ids: Vec<u32>,
    /// Print every logit as JSON ([position][vocab]) instead of the top five per position.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    model: ModelArgs,
}

#[derive(clap::Args)]
struct BenchArgs {
    /// Untimed runs before timing each case.
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Timed runs per case (the report gives their median, min and max).
    #[arg(long, default_value_t = 10)]
    repeats: usize,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Time each GPT-2 weight shape with both memory layouts instead of the model cases.
    #[arg(long)]
    layouts: bool,
    #[command(flatten)]
    model: ModelArgs,
}

fn main() -> ExitCode {
    // `gpt2 bench | head`: the reader leaving ends the program quietly, status 0.
    output::pipe::end_quietly_when_closed();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Generate(args) => generate(args),
        Command::Logits(args) => logits(args),
        Command::Bench(args) => bench_cmd(args),
        Command::Profile(args) => profile_cmd(args),
        #[cfg(feature = "serve")]
        Command::Serve(args) => gpt2::serve::run(args),
        #[cfg(not(feature = "serve"))]
        Command::Serve(_) => return no_server(),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if output::pipe::is_broken_pipe(e.as_ref()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `gpt2 serve` in a build without the server: what is missing and the two commands that have
/// it; status 2, as for a command line this program cannot run.
#[cfg(not(feature = "serve"))]
fn no_server() -> ExitCode {
    eprintln!(
        "error: this gpt2 was built without its HTTP server (the `serve` feature, which the \
         default features turn on).\n\
         For the OpenAI-compatible server: `cargo run -p gpt2 -- serve ...` (default features), \
         or `cargo run -p serve -- --model gpt2 ...` (any model the engine runs, GPT-2 included)."
    );
    ExitCode::from(2)
}

fn generate(args: GenerateArgs) -> Result<()> {
    let loaded = args.model.load()?;
    let Some(tokenizer) = loaded.tokenizer else {
        bail!(
            "{} has no {}, so text cannot be encoded; use `gpt2 logits --ids ...` with token ids, or a checkpoint that ships a tokenizer",
            loaded.checkpoint.path().display(),
            match loaded.checkpoint.gguf {
                Some(_) => "tokenizer in its metadata (tokenizer.ggml.*)",
                None => "tokenizer.json",
            }
        );
    };
    let prompt = tokenizer.encode(&args.prompt)?;
    let request = Request {
        prompt,
        max_tokens: args.max_tokens,
        sampling: Sampling {
            temperature: args.temperature,
            top_k: args.top_k,
            top_p: args.top_p,
            seed: args.seed,
        },
        stop_at_eos: true,
    };
    let mut out = std::io::stdout().lock();
    write!(out, "{}", args.prompt)?;
    let mut stream = tokenizer.stream();
    let mut failure = None;
    gpt2::generate(
        &loaded.model,
        &[request],
        &mut |event| match stream.push(event.token) {
            Ok(Some(text)) => {
                let _ = write!(out, "{text}").and_then(|_| out.flush());
                Flow::Continue
            }
            Ok(None) => Flow::Continue,
            Err(e) => {
                failure = Some(e);
                Flow::Stop
            }
        },
    )?;
    writeln!(out)?;
    if let Some(e) = failure {
        return Err(e.into());
    }
    Ok(())
}

fn logits(args: LogitsArgs) -> Result<()> {
    let loaded = args.model.load()?;
    let model = &loaded.model;
    let logits = model.forward_one(
        &args.ids,
        &mut model.new_cache(args.ids.len()),
        Logits::AllPositions,
    )?;
    let rows: Vec<Vec<f32>> = logits.to_vec2()?;
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer(&mut out, &rows)?;
        writeln!(out)?;
        return Ok(());
    }
    for (pos, (id, row)) in args.ids.iter().zip(&rows).enumerate() {
        let mut order: Vec<usize> = (0..row.len()).collect();
        order.sort_by(|&a, &b| row[b].total_cmp(&row[a]));
        let top: Vec<String> = order
            .iter()
            .take(5)
            .map(|&i| format!("{i}:{:.4}", row[i]))
            .collect();
        writeln!(out, "position {pos} (id {id}): top ids {}", top.join("  "))?;
    }
    Ok(())
}

fn bench_cmd(args: BenchArgs) -> Result<()> {
    let loaded = args.model.load()?;
    let model = &loaded.model;
    let device = model.device().clone();
    let threads = candle_core::utils::get_num_threads();
    if args.layouts {
        let rows = engine_bench::run_layout_cases(
            &device,
            model.kernel_path(),
            args.warmup,
            args.repeats,
        )?;
        println!(
            "{:<12} {:>4} {:>12} {:>12} {:>12} {:>12}  fastest",
            "matrix", "M", "in x out", "(out,in) ms", "(in,out) ms", "packed ms"
        );
        for r in &rows {
            let packed = r.packed_ms.map_or("-".to_string(), |ms| format!("{ms:.3}"));
            let shape = format!("{}x{}", r.in_dim, r.out_dim);
            println!(
                "{:<12} {:>4} {shape:>12} {:>12.3} {:>12.3} {packed:>12}  {}",
                r.matrix,
                r.m,
                r.out_in_ms,
                r.in_out_ms,
                r.fastest()
            );
        }
        if let Some(path) = &args.json {
            std::fs::write(path, serde_json::to_string_pretty(&rows)?)
                .with_context(|| format!("cannot write {}", path.display()))?;
        }
        return Ok(());
    }
    let bar =
        ProgressBar::new(5).with_style(ProgressStyle::with_template("{bar:30} {pos}/{len} {msg}")?);
    let results = engine_bench::run_model_cases(model, args.warmup, args.repeats, |name| {
        bar.set_message(name.to_string());
        bar.inc(1);
    })?;
    bar.finish_and_clear();
    let (bandwidth, floor) = if device.is_cpu() {
        let gbps = engine_bench::memory_read_bandwidth(threads, 3);
        let weight_bytes = match &loaded.checkpoint.gguf {
            Some(file) => gpt2::gguf::weight_bytes(file)? as usize,
            None => model_weight_bytes(model, args.model.run.dtype.quantized()),
        };
        (Some(gbps), Some(weight_bytes as f64 / (gbps * 1e9) * 1e3))
    } else {
        (None, None)
    };
    let report = engine_bench::Report {
        threads,
        device: format!("{:?}", device.location()),
        // Quantized matrices in their types (`q8_0`, a GGUF's `q4_0+q8_0`), not the f32 the
        // rest loads as.
        dtype: match &loaded.quantized_as {
            Some(types) => types.clone(),
            None => format!("{:?}", model.dtype()).to_lowercase(),
        },
        kernels: model.kernels().to_string(),
        synthetic_weights: loaded.checkpoint.synthetic,
        results,
        memory_read_gb_per_s: bandwidth,
        decode_floor_ms: floor,
    };
    println!(
        "gpt2 bench: {} threads, {}, {}, {} kernels{}",
        report.threads,
        report.device,
        report.dtype,
        report.kernels,
        if report.synthetic_weights {
            ", synthetic weights"
        } else {
            ""
        }
    );
    println!(
        "{:<20} {:>11} {:>11} {:>11}",
        "case", "median ms", "min ms", "max ms"
    );
    for r in &report.results {
        println!(
            "{:<20} {:>11.2} {:>11.2} {:>11.2}",
            r.name, r.median_ms, r.min_ms, r.max_ms
        );
    }
    if let (Some(gbps), Some(floor)) = (bandwidth, floor) {
        println!("memory read {gbps:.1} GB/s → decode floor (all weights read once) {floor:.1} ms");
    }
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Bytes of weights a decode step reads: every parameter once (the head shares `wte`;
/// of `wpe` only one row is read, so it is left out), each at its stored width: the matrices
/// in the weights' type, the LayerNorm gains and the biases in the activations' (f32 beside
/// half-type matrices on the CPU's packed paths).
fn model_weight_bytes(model: &gpt2::Model, quantized: Option<engine::gguf::GgmlType>) -> usize {
    let c = model.config();
    let (e, inner) = (c.n_embd, c.inner_dim());
    let matrices = c.vocab_size * e + c.n_layer * (e * 3 * e + e * e + e * inner + inner * e);
    let vectors = c.n_layer * (4 * e + 3 * e + e + inner + e) + 2 * e;
    let matrix_bytes = match quantized {
        // Quantized at load: whole blocks along every row, scales included.
        Some(ty) => matrices / ty.block_size() * ty.type_size(),
        None => matrices * model.dtype().size_in_bytes(),
    };
    matrix_bytes + vectors * model.activation_dtype().size_in_bytes()
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Mlp {
    Fused,
    Stock,
}

fn profile_cmd(args: ProfileArgs) -> Result<()> {
    if let Some(paths) = &args.compare {
        let before = profiler::Report::read_json(&paths[0])?;
        let after = profiler::Report::read_json(&paths[1])?;
        print!("{}", profiler::compare(&before, &after));
        return Ok(());
    }
    if args.profile_memory {
        // From before the load, so that the weights are counted (in their own category).
        profiler::alloc::enable();
    }
    let mut loaded = {
        let _weights = args
            .profile_memory
            .then(|| profiler::alloc::category(profiler::Category::Weights));
        args.model.load()?
    };
    loaded.model.set_mlp_activation(match args.mlp {
        Mlp::Fused => gpt2::MlpActivation::Fused,
        Mlp::Stock => gpt2::MlpActivation::Stock,
    });
    let model = &loaded.model;
    let on_cuda = model.device().is_cuda();
    let spec = args.schedule.profile(args.with_flops, args.cuda_timing);
    if let Some(repeats) = args.overhead {
        let o = if args.profile_memory {
            engine::profile::measure_overhead_with_memory(model, &spec, repeats)?
        } else {
            engine::profile::measure_overhead(model, &spec, repeats)?
        };
        println!(
            "forward B={} T={}: unprofiled median {:.3} ms, profiled median {:.3} ms over {} alternating repeats: overhead {:+.2}%",
            spec.batch, spec.seq, o.plain_ms, o.profiled_ms, o.repeats, o.percent()
        );
        if let (Some(ms), Some(pct)) = (o.with_memory_ms, o.with_memory_percent()) {
            println!(
                "profiled with memory (counting allocator on): median {ms:.3} ms: overhead {pct:+.2}% \
                 (the unprofiled forwards run with counting off)"
            );
        }
        return Ok(());
    }
    if args.sort_by.is_some_and(SortBy::is_memory) && !args.profile_memory {
        bail!(
            "--sort-by {} sorts by a memory column: add --profile-memory",
            args.sort_by.unwrap_or_default()
        );
    }
    let ceilings = engine::profile::machine_ceilings(model, args.remeasure_ceilings);
    let mut profile = if args.profile_memory {
        engine::profile::profile_forward_with_memory(model, &spec, ceilings)?
    } else {
        engine::profile::profile_forward_with(model, &spec, ceilings)?
    };
    if let Some(types) = &loaded.quantized_as {
        // The matrices' quantized types (a GGUF's as stored, or --dtype q8_0's); the profile
        // names the activations' f32 otherwise.
        profile.environment.dtype = types.clone();
    }
    let default_sort = SortBy::self_time(on_cuda);
    let options = TableOptions {
        sort_by: args.sort_by.unwrap_or(default_sort),
        row_limit: Some(args.row_limit),
        group_by_input_shape: args.group_by_input_shape,
        view: args.view,
        with_flops: args.with_flops,
    };
    if loaded.checkpoint.synthetic {
        println!("(synthetic weights: timings are real, the model's outputs are not)");
    }
    println!("{spec}");
    print!("{}", profile.table(options));
    let out = engine::profile::write_exports(&profile, options, &args.out)?;
    println!(
        "\n{}",
        out.listing("read by `gpt2 profile --compare` and the grader")
    );
    if args.profile_memory && profile.has_memory() {
        let (gen, positions) =
            engine::profile::profile_generation_memory(model, &spec, args.memory_new_tokens)?;
        let capacity = spec.seq + args.memory_new_tokens;
        let series = engine::profile::kv_in_use_series(&gen, &positions, capacity);
        let path = args.out.join("memory-timeline-generate.svg");
        let title = format!(
            "Live bytes over a generation: B={} prefill of {} tokens, then {} decode steps",
            spec.batch, spec.seq, args.memory_new_tokens
        );
        gen.memory_timeline_svg(&path, &title, Some(("KV positions in use", &series)))?;
        if let Some((bytes, step, during)) = gen.memory_peak() {
            println!(
                "      {} (the generation's peak: {} in step {step}, during {during})",
                path.display(),
                profiler::format_bytes(bytes)
            );
        }
    }
    // Written first, so the failed run's report (with its warnings) can be read.
    engine::profile::check_device_timing(&profile)?;
    Ok(())
}

/// `--cuda-timing`'s values, the profiler's names for them (its enum has no clap derive: the
/// profiler does not depend on clap).
fn cuda_timing_values() -> impl clap::builder::TypedValueParser<Value = CudaTiming> {
    clap::builder::PossibleValuesParser::new(CudaTiming::ALL.map(CudaTiming::as_str))
        .try_map(|s| s.parse::<CudaTiming>())
}
