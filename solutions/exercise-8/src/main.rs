//! Exercise 8: Your own model — exercise 3's questions, asked of a model you pick.
//!
//! Loads a Llama-family checkpoint (a Hugging Face Hub repository, a folder, or a synthetic one
//! with a real model's shapes), runs forward passes under the profiler on the course's own
//! engine, prints the top-ops table with each op's roofline against this machine's ceilings, and
//! saves the profile to results/report.json, which `course check 8` grades your answers against.
//!
//! Before the profile runs, in a terminal, it asks for your prediction (which op will top the
//! table of YOUR model, and its share) when answers.toml holds none yet.
//!
//! Solution: the same program with the reference's TODO bodies. Without a terminal (the test
//! command) `predict` records the reference guess; after the run `fill_in_answers` fills in
//! answers.toml from its own results/report.json with the grader's reader and rule
//! (`course_model::top_ops_reference`, as solution 3 does): the top three rows and their shares, and
//! the plan the course's rule prefers on this model, on this machine.

use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use course_model::exercise;
use engine::profile::{profile_forward, write_exports, ForwardProfile, ScheduleArgs};
use engine::run_args::RunArgs;
use engine::CausalLm;
use llama::source::{self, Source, DEFAULT_MODEL};
use profiler::{CudaTiming, SortBy, TableOptions};

/// Counts allocations, so that a profile can record memory (the profiler's memory columns).
#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

#[derive(Parser)]
#[command(
    about = "Exercise 8: profile a model of your own choosing, print its top ops and write results/report.json",
    long_about = "Exercise 8: Your own model.\n\n\
        Supported: the Llama family, on the course's own engine, every op in its own row with its work count and \
        roofline (the first tier): config.json's model_type llama (Llama 2, 3, 3.1, 3.2, SmolLM, SmolLM2, \
        TinyLlama), mistral, qwen2 (Qwen2, Qwen2.5) and qwen3, from safetensors checkpoints, in f32, bf16 or f16. \
        The second tier: a GGUF file (--model FILE.gguf) whose general.architecture is llama or qwen2 (run by \
        candle-transformers' quantized_llama or quantized_qwen2), or a checkpoint whose model_type is phi3 or gemma \
        (its phi3 and gemma models), profiled through the tracing spans those models open: the rows are those \
        spans, without work counts (so no roofline), and the time no span covers is one row, outside_any_span. \
        Other model types are refused with what was found.\n\n\
        --model takes a Hub repository id (downloaded once into the Hugging Face cache; offline, the cache), a \
        folder holding config.json and model.safetensors (or an index and its shards), or a synthetic checkpoint \
        with a real model's shapes (synthetic-smollm2-135m, synthetic-llama-tiny). A model needs about twice its \
        weights in free memory while it loads (parameters × 4 bytes in f32, × 2 in bf16); a larger one is refused \
        before anything is read.\n\n\
        Before the profile, in a terminal, it asks for your prediction of the table's top op when answers.toml \
        holds none yet. Then fill in answers.toml from the table and run `course check 8`."
)]
struct Args {
    /// The model: a Hub repository id, a checkpoint folder, synthetic-smollm2-135m /
    /// synthetic-llama-tiny (offline, the default falls back to synthetic-smollm2-135m), or a
    /// GGUF file (the second tier).
    #[arg(long, default_value = DEFAULT_MODEL, value_name = "ID|DIR|synthetic-NAME|FILE.gguf")]
    model: String,
    #[command(flatten)]
    run: RunArgs,
    /// Rows printed (results/report.json holds every row).
    #[arg(long, default_value_t = 12)]
    row_limit: usize,
    #[command(flatten)]
    schedule: ScheduleArgs,
}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), run)
}

fn run(args: Args, dir: &Path) -> Result<()> {
    predict(dir)?;

    let spec = args.schedule.profile(false, CudaTiming::Events);
    let started = std::time::Instant::now();
    let device = args.run.open_device()?;
    let profile = match args.model.ends_with(".gguf") {
        true => through_its_spans(Path::new(&args.model), &args.model, &device, &args, &spec)?,
        false => {
            // Found or fetched first; its config.json says which tier runs it.
            let checkpoint = source::resolve(
                &Source::parse(&args.model)?,
                args.run.dtype,
                &mut |notice| eprintln!("{notice}"),
            )?;
            match llama::config::family_of_file(&checkpoint.dir.join("config.json"))? {
                Some(_) => in_the_engine(&checkpoint, &device, &args, &spec)?,
                None => {
                    through_its_spans(&checkpoint.dir, &checkpoint.name, &device, &args, &spec)?
                }
            }
        }
    };
    let on_cuda = device.is_cuda();
    let options = TableOptions::top(SortBy::self_time(on_cuda), args.row_limit);
    println!("{spec}");
    print!("{}", profile.table(options));
    let files = write_exports(&profile, options, &dir.join("results"))?;
    println!(
        "(from the command to the table: {:.1} s)",
        started.elapsed().as_secs_f64()
    );

    println!("\n{}", files.listing("graded by `course check 8`"));
    fill_in_answers(&files.report, dir, on_cuda)
}

/// Your prediction, before the profile runs: asked in a terminal when answers.toml holds none
/// yet, and recorded there with the time (without a terminal it says how to make one).
fn predict(dir: &Path) -> Result<()> {
    // Asked in a terminal as the exercise asks; without one, the reference guess.
    course_model::top_ops_reference::predict(dir)
}

/// The answers: the top three rows with their shares, and the plan.
fn fill_in_answers(report: &Path, dir: &Path, on_cuda: bool) -> Result<()> {
    let _ = on_cuda;
    course_model::top_ops_reference::fill_answers(report, &dir.join("answers.toml"))?;
    println!("Next: `course check 8`.");
    Ok(())
}

/// The first tier: a Llama-family checkpoint on the course's engine, every op in its own row.
fn in_the_engine(
    checkpoint: &source::Checkpoint,
    device: &candle_core::Device,
    args: &Args,
    spec: &ForwardProfile,
) -> Result<profiler::Profile> {
    // ANCHOR: load
    // Your model, on the course's engine. Its config.json was read first: a model too large for
    // this machine's free memory was refused before any weight was read or downloaded.
    let model = llama::weights::load(
        &checkpoint.dir,
        device,
        args.run.dtype,
        args.run.kernel_path()?,
    )
    .with_context(|| format!("cannot load {}", checkpoint.name))?;
    let cfg = model.config();
    println!(
        "{}: {} ({:.1} M parameters, {} layers, {} query heads over {} key/value heads), {} weights, kernels {}",
        checkpoint.name,
        cfg.family.model_type(),
        cfg.parameters() as f64 / 1e6,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        args.run.dtype.as_str(),
        model.kernels()
    );
    if checkpoint.synthetic {
        println!("(synthetic weights: every timing is real, the model's outputs are not)");
    }
    // ANCHOR_END: load

    let mut profile = profile_forward(&model, spec)?;
    profile.environment.model = Some(checkpoint.name.clone());
    profile.environment.tier = Some("engine".into());
    Ok(profile)
}

/// The second tier: a GGUF file, or a checkpoint of another model type, run by
/// candle-transformers and profiled through the tracing spans it opens.
fn through_its_spans(
    path: &Path,
    name: &str,
    device: &candle_core::Device,
    args: &Args,
    spec: &ForwardProfile,
) -> Result<profiler::Profile> {
    let (profile, line) = traced_models::profile_model(path, name, device, args.run.dtype, spec)
        .context("exercise 8 runs the Llama family on the course's engine, and phi3, gemma and GGUF files through their spans (--help)")?;
    println!("{line}");
    Ok(profile)
}
