//! Exercise 8: Your own model — exercise 3's questions, asked of a model you pick.
//!
//! Loads a Llama-family model (a Hugging Face Hub repository, a folder, a synthetic checkpoint
//! with a real model's shapes, or a GGUF file with its weights as stored), runs forward passes under the profiler on the course's own
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
//! the plan the course's rule prefers on this model, on this machine. Before the profile,
//! `predict_memory` writes the memory prediction the course's arithmetic gives from the config.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use course_model::exercise;
use engine::profile::{
    machine_ceilings, profile_forward, profile_forward_with_memory, profile_generation_memory,
    write_exports, ForwardProfile, ScheduleArgs,
};
use engine::run_args::RunArgs;
use engine::CausalLm;
use llama::source::{self, Source, DEFAULT_MODEL};
use profiler::{CudaTiming, SortBy, TableOptions};
use serde_json::json;

/// Counts allocations, so that a profile can record memory (the profiler's memory columns).
#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

#[derive(Parser)]
#[command(
    about = "Exercise 8: profile a model of your own choosing, print its top ops and write results/report.json",
    long_about = "Exercise 8: Your own model.\n\n\
        Supported: the Llama family, on the course's own engine, every op in its own row with its work count and \
        roofline (the first tier): config.json's model_type llama (Llama 2, 3, 3.1, 3.2, SmolLM, SmolLM2, \
        TinyLlama), mistral, qwen2 (Qwen2, Qwen2.5) and qwen3, from safetensors checkpoints in f32, bf16 or f16, \
        and GGUF files whose general.architecture is llama, qwen2 or qwen3, their matrices kept in the types the \
        file stores (q8_0, q4_0, q1_0, q4_k, q6_k, f16, bf16; --dtype does not apply), each quantized matmul in \
        its own row with its kernel and its work counted at the stored width. \
        The second tier: a checkpoint whose model_type is phi3 or gemma (candle-transformers' phi3 and gemma \
        models), or a GGUF file the engine does not read (run by candle-transformers' quantized_llama or \
        quantized_qwen2 where it can), profiled through the tracing spans those models open: the rows are those \
        spans, without work counts (so no roofline), and the time no span covers is one row, outside_any_span. \
        Other model types are refused with what was found.\n\n\
        --model takes a Hub repository id (downloaded once into the Hugging Face cache; offline, the cache), a \
        folder holding config.json and model.safetensors (or an index and its shards), a synthetic checkpoint \
        with a real model's shapes (synthetic-smollm2-135m, synthetic-llama-tiny), a GGUF file, or a Hub \
        repository of GGUF files (--file NAME picks one; else its only one, else its one Q8_0 file). A model \
        needs about twice its weights in free memory while it loads (parameters × 4 bytes in f32, × 2 in bf16; a \
        GGUF file's bytes as stored); a larger one is refused before anything is read.\n\n\
        Before the profile, in a terminal, it asks for your prediction of the table's top op when answers.toml \
        holds none yet, and, for a safetensors checkpoint on the first tier, your memory prediction ([memory]: \
        parameters × bytes per weight does not count a GGUF file's quantized blocks, so a GGUF is not asked it). \
        Then fill in answers.toml from the table and run `course check 8`."
)]
struct Args {
    /// The model: a Hub repository id (of a safetensors checkpoint or of GGUF files), a
    /// checkpoint folder, synthetic-smollm2-135m / synthetic-llama-tiny (offline, the default
    /// falls back to synthetic-smollm2-135m), or a GGUF file (llama, qwen2 and qwen3 on the first
    /// tier, their weights as stored; another architecture on the second).
    #[arg(long, default_value = DEFAULT_MODEL, value_name = "ID|DIR|synthetic-NAME|FILE.gguf")]
    model: String,
    /// Which GGUF file of a Hub repository of several (e.g. model-Q4_0.gguf).
    #[arg(long, value_name = "NAME")]
    file: Option<String>,
    #[command(flatten)]
    run: RunArgs,
    /// Rows printed (results/report.json holds every row).
    #[arg(long, default_value_t = 12)]
    row_limit: usize,
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Record memory too (PyTorch's `profile_memory=True`): CPU Mem, Self CPU Mem and the
    /// allocations of every row, the step's peak under the table and in results/report.json;
    /// then a generation of --memory-batch sequences filling --memory-context positions, whose
    /// measured peak results/memory.json holds beside the config your prediction is graded
    /// against (the first tier from safetensors, on a CPU).
    #[arg(long)]
    profile_memory: bool,
    /// Your memory prediction's sequences (answers.toml's [memory] batch).
    #[arg(long, default_value_t = 4, value_name = "N")]
    memory_batch: usize,
    /// Your memory prediction's context: the positions each sequence's KV cache holds, prompt
    /// and generated tokens together (answers.toml's [memory] context).
    #[arg(long, default_value_t = 256, value_name = "TOKENS")]
    memory_context: usize,
}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), run)
}

fn run(args: Args, dir: &Path) -> Result<()> {
    predict(dir)?;
    // A memory record from an earlier run describes that run's model: a safetensors checkpoint
    // on the first tier writes this run's, a GGUF file and the second tier none.
    let stale = dir.join("results/memory.json");
    if stale.exists() {
        std::fs::remove_file(&stale)
            .with_context(|| format!("cannot remove {}", stale.display()))?;
    }
    if args.profile_memory {
        // Counting starts before the load, so that the weights are counted (in their own category).
        profiler::alloc::enable();
    }

    let spec = args.schedule.profile(false, CudaTiming::Events);
    let started = std::time::Instant::now();
    let device = args.run.open_device()?;
    // A GGUF file (or a Hub repository of them) goes to the engine when its architecture is one
    // the engine's Llama model reads; a checkpoint is found or fetched first, and its
    // config.json says which tier runs it.
    let profile = match source::gguf_of(&args.model, args.file.as_deref())? {
        Some(path) if llama::gguf::runs_on_engine(&path)? => {
            let model = load(
                FirstTier::Gguf(gguf_name(&args.model, &path), path),
                &device,
                &args,
            )?;
            in_the_engine(&model, &device, &args, &spec, dir)?
        }
        Some(path) => {
            through_its_spans(&path, &gguf_name(&args.model, &path), &device, &args, &spec)?
        }
        None => {
            let checkpoint = source::resolve(
                &Source::parse(&args.model)?,
                args.run.dtype,
                &mut |notice| eprintln!("{notice}"),
            )?;
            match llama::config::family_of_file(&checkpoint.dir.join("config.json"))? {
                Some(_) => {
                    let model = load(FirstTier::Checkpoint(checkpoint), &device, &args)?;
                    in_the_engine(&model, &device, &args, &spec, dir)?
                }
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

/// Your memory prediction, before the profile runs: the peak of a generation at the given batch
/// and context, by the course's arithmetic on the config printed above (results/memory.json
/// holds it too).
fn predict_memory(given: &MemoryGiven, dir: &Path) -> Result<()> {
    // The weights once; K and V for every layer, key/value head, position and sequence.
    let weights = given.parameters * given.weights_dtype.size_in_bytes();
    let kv_cache = 2
        * given.layers
        * given.kv_heads
        * given.head_dim
        * given.kv_dtype.size_in_bytes()
        * given.context
        * given.batch;
    // Activations at their largest, the prefill of every sequence, one layer at a time: the
    // residual stream, q, k, v and the attention's output (5 × hidden), the MLP's gate, up and
    // product (3 × intermediate), and each position's attention scores (heads × context).
    let per_token =
        5 * given.hidden_size + 3 * given.intermediate_size + given.heads * given.context;
    let activations = given.batch * given.context * per_token * given.kv_dtype.size_in_bytes();
    let answers = [
        ("memory.weights_bytes", weights),
        ("memory.kv_cache_bytes", kv_cache),
        ("memory.peak_bytes", weights + kv_cache + activations),
    ];
    answers_file::fill_answers::fill(
        &dir.join("answers.toml"),
        &answers.map(|(path, bytes)| (path.to_string(), (bytes as f64).into())),
    )
}

/// Where the first tier's model comes from: a safetensors checkpoint, or a GGUF file the
/// engine's Llama model reads (its name in the report, its path).
enum FirstTier {
    Checkpoint(source::Checkpoint),
    Gguf(String, PathBuf),
}

/// A model loaded on the first tier, with what the run says of it.
struct Loaded {
    model: llama::Model,
    /// What the learner asked for: a repository id, a folder, a file.
    name: String,
    /// The weights' types: `--dtype`'s for a checkpoint; for a GGUF file the types it stores
    /// its matrices in (`q8_0`, or `q8_0+q4_0+f16+bf16` for a mixed file).
    dtype: String,
    /// From a GGUF file, weights as stored: parameters × bytes per weight does not count
    /// quantized blocks (their scales are bytes too), so the memory prediction is not asked.
    gguf: bool,
}

/// What a GGUF file is called in the report: the path given, or the Hub repository and the
/// file picked from it (`owner/name/model-Q8_0.gguf`).
fn gguf_name(model: &str, path: &Path) -> String {
    match path.file_name() {
        Some(file) if !model.ends_with(".gguf") => format!("{model}/{}", file.to_string_lossy()),
        _ => model.to_string(),
    }
}

// ANCHOR: load
/// Your model, on the course's engine. One too large for this machine's free memory is refused
/// before its weights are read: a checkpoint from its config.json (before they are downloaded),
/// a GGUF file from its header.
fn load(from: FirstTier, device: &candle_core::Device, args: &Args) -> Result<Loaded> {
    let _weights = args
        .profile_memory
        .then(|| profiler::alloc::category(profiler::Category::Weights));
    let kernels = args.run.kernel_path()?;
    let (model, name, dtype, synthetic, gguf) = match from {
        FirstTier::Checkpoint(checkpoint) => (
            llama::weights::load(&checkpoint.dir, device, args.run.dtype, kernels)
                .with_context(|| format!("cannot load {}", checkpoint.name))?,
            checkpoint.name,
            args.run.dtype.as_str().to_string(),
            checkpoint.synthetic,
            false,
        ),
        // Each matrix stays in the type the file stores it in: a quantized one is multiplied
        // by the engine's kernel for that type, in its own row.
        FirstTier::Gguf(name, path) => (
            llama::gguf::load_quantized(&path, device, kernels)
                .with_context(|| format!("cannot load {name}"))?,
            name,
            llama::gguf::stored_types(&path)?,
            false,
            true,
        ),
    };
    drop(_weights);
    let cfg = model.config();
    println!(
        "{name}: {} ({:.1} M parameters, {} layers, {} query heads over {} key/value heads), {dtype} weights{}, kernels {}",
        cfg.family.model_type(),
        cfg.parameters() as f64 / 1e6,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        if gguf { " as stored" } else { "" },
        model.kernels()
    );
    if synthetic {
        println!("(synthetic weights: every timing is real, the model's outputs are not)");
    }
    Ok(Loaded {
        model,
        name,
        dtype,
        gguf,
    })
}
// ANCHOR_END: load

/// The first tier: a Llama-family model on the course's engine, every op in its own row.
fn in_the_engine(
    loaded: &Loaded,
    device: &candle_core::Device,
    args: &Args,
    spec: &ForwardProfile,
    dir: &Path,
) -> Result<profiler::Profile> {
    let model = &loaded.model;
    // Your memory prediction comes before the profile: the given batch and context, and the
    // config values the course's arithmetic reads, recorded for `course check 8`.
    let mut memory = match loaded.gguf {
        false => {
            let memory = MemoryGiven::of(model, &loaded.name, args, device)?;
            memory.write(dir)?;
            predict_memory(&memory, dir)?;
            Some(memory)
        }
        true => {
            println!(
                "(no memory prediction for a GGUF file: parameters × bytes per weight does not count its quantized \
                 blocks, so `course check 8` leaves [memory] out; a safetensors checkpoint is asked it{})",
                match args.profile_memory {
                    true => ", and --profile-memory measures the generation beside it",
                    false => "",
                }
            );
            None
        }
    };

    let mut profile = match args.profile_memory {
        true => profile_forward_with_memory(model, spec, machine_ceilings(model, false))?,
        false => profile_forward(model, spec)?,
    };
    profile.environment.model = Some(loaded.name.clone());
    profile.environment.tier = Some("engine".into());
    // The weights' types as held (the profile names the activations' for a GGUF model).
    profile.environment.dtype = loaded.dtype.clone();
    if let (true, Some(memory)) = (args.profile_memory, memory.as_mut()) {
        memory.measure(model, spec, dir)?;
    }
    Ok(profile)
}

/// Decode steps of the measured generation: the rest of the context is its prompt, prefilled
/// at once (the largest activations a generation holds).
const MEMORY_NEW_TOKENS: usize = 16;

/// Your memory prediction's givens, written to results/memory.json: the batch and context, the
/// config values the course's arithmetic reads, and, after a `--profile-memory` run, the peak a
/// generation at that batch and context measured. `course check 8` recomputes your `[memory]`
/// answers from this config, never from the measurement.
struct MemoryGiven {
    model: String,
    batch: usize,
    context: usize,
    parameters: usize,
    layers: usize,
    kv_heads: usize,
    head_dim: usize,
    heads: usize,
    hidden_size: usize,
    intermediate_size: usize,
    vocab_size: usize,
    weights_dtype: candle_core::DType,
    /// The KV cache's: the activations' type, f32 on the CPU's packed kernels whatever the
    /// weights' type.
    kv_dtype: candle_core::DType,
    measured: Option<serde_json::Value>,
}

impl MemoryGiven {
    fn of(
        model: &llama::Model,
        name: &str,
        args: &Args,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let cfg = model.config();
        let batch = args.memory_batch;
        if batch == 0 || args.memory_context < 2 || cfg.max_positions < 2 {
            anyhow::bail!(
                "--memory-batch {batch} --memory-context {}: the prediction needs at least one sequence \
                 and a context of at least 2 positions",
                args.memory_context
            );
        }
        // A model whose longest sequence is shorter than the context asked for is predicted at
        // its longest (the default context suits real models, not the tests' tiny ones).
        let context = args.memory_context.min(cfg.max_positions);
        if context < args.memory_context {
            println!(
                "(--memory-context {}: {} holds at most {context} positions, so the prediction is at {context})",
                args.memory_context, name
            );
        }
        let given = Self {
            model: name.to_string(),
            batch,
            context,
            parameters: cfg.parameters(),
            layers: cfg.num_hidden_layers,
            kv_heads: cfg.num_key_value_heads,
            head_dim: cfg.head_dim,
            heads: cfg.num_attention_heads,
            hidden_size: cfg.hidden_size,
            intermediate_size: cfg.intermediate_size,
            vocab_size: cfg.vocab_size,
            weights_dtype: args.run.dtype,
            kv_dtype: args.run.kernel_path()?.activations(device, args.run.dtype),
            measured: None,
        };
        println!(
            "Your memory prediction ([memory] in answers.toml): {batch} sequences whose KV caches hold {context} \
             positions each. The config: {} parameters, weights in {} ({} bytes each); {} layers, {} key/value \
             heads of {} dimensions; the KV cache in {} ({} bytes each).",
            given.parameters,
            given.weights_dtype.as_str(),
            given.weights_dtype.size_in_bytes(),
            given.layers,
            given.kv_heads,
            given.head_dim,
            given.kv_dtype.as_str(),
            given.kv_dtype.size_in_bytes()
        );
        Ok(given)
    }

    /// results/memory.json, and the batch and context in answers.toml's `[memory]`.
    fn write(&self, dir: &Path) -> Result<()> {
        let results = dir.join("results");
        std::fs::create_dir_all(&results)
            .with_context(|| format!("cannot create {}", results.display()))?;
        let record = json!({
            "schema": "memory-prediction/1",
            "model": self.model,
            "batch": self.batch,
            "context": self.context,
            "config": {
                "parameters": self.parameters,
                "layers": self.layers,
                "kv_heads": self.kv_heads,
                "head_dim": self.head_dim,
                "heads": self.heads,
                "hidden_size": self.hidden_size,
                "intermediate_size": self.intermediate_size,
                "vocab_size": self.vocab_size,
                "weights_dtype": self.weights_dtype.as_str(),
                "weight_bytes": self.weights_dtype.size_in_bytes(),
                "kv_dtype": self.kv_dtype.as_str(),
                "kv_bytes": self.kv_dtype.size_in_bytes(),
            },
            "measured": self.measured,
        });
        let path = results.join("memory.json");
        let text = serde_json::to_string_pretty(&record)?;
        std::fs::write(&path, text + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
        answers_file::fill_answers::set_in_table(
            &dir.join("answers.toml"),
            "memory",
            &[
                ("batch".to_string(), (self.batch as f64).into()),
                ("context".to_string(), (self.context as f64).into()),
            ],
        )
    }

    /// A generation at the given batch and context, recorded with memory: its peak, and the
    /// categories at the highest sample, into results/memory.json beside the config.
    fn measure(&mut self, model: &llama::Model, spec: &ForwardProfile, dir: &Path) -> Result<()> {
        if model.device().is_cuda() {
            println!(
                "(--profile-memory on CUDA: the counting allocator sees host memory only, so the generation's \
                 device peak is not measured; results/memory.json says so)"
            );
            self.measured =
                Some(json!({ "not_measured": "the device is CUDA: host allocations only" }));
            return self.write(dir);
        }
        let new_tokens = MEMORY_NEW_TOKENS.min(self.context - 1);
        let prefill = ForwardProfile {
            batch: self.batch,
            seq: self.context - new_tokens,
            ..spec.clone()
        };
        let (generation, _) = profile_generation_memory(model, &prefill, new_tokens)?;
        let Some(timeline) = generation.memory_timeline() else {
            self.measured = Some(json!({ "not_measured": "no allocation was counted" }));
            return self.write(dir);
        };
        let highest = timeline
            .points
            .iter()
            .max_by_key(|p| p.live)
            .map_or([0; 4], |p| p.by_category);
        let svg = dir.join("results/memory-timeline-generate.svg");
        let title = format!(
            "Live bytes over a generation: {} sequences, a prefill of {} tokens, then {new_tokens} decode steps",
            self.batch, prefill.seq
        );
        generation.memory_timeline_svg(&svg, &title, None)?;
        println!(
            "the generation's measured peak: {} in step {}, during {} ({})",
            profiler::format_bytes(timeline.peak.bytes),
            timeline.peak.step,
            timeline.peak.during,
            svg.display()
        );
        self.measured = Some(json!({
            "peak_bytes": timeline.peak.bytes,
            "peak_step": timeline.peak.step,
            "peak_during": timeline.peak.during,
            "prefill_tokens": prefill.seq,
            "new_tokens": new_tokens,
            "at_highest_sample": {
                "weights_bytes": highest[0],
                "kv_cache_bytes": highest[1],
                "activations_bytes": highest[2],
                "temporaries_bytes": highest[3],
            },
        }));
        self.write(dir)
    }
}

/// The second tier: a checkpoint of another model type, or a GGUF file the engine does not
/// read, run by candle-transformers and profiled through the tracing spans it opens.
fn through_its_spans(
    path: &Path,
    name: &str,
    device: &candle_core::Device,
    args: &Args,
    spec: &ForwardProfile,
) -> Result<profiler::Profile> {
    if args.profile_memory {
        println!(
            "(--profile-memory: the second tier's models are not the course's ops, so memory and the memory \
             prediction are for the first tier only)"
        );
    }
    let (profile, line) = traced_models::profile_model(path, name, device, args.run.dtype, spec)
        .context("exercise 8 runs the Llama family (safetensors or GGUF) on the course's engine, and phi3 and gemma checkpoints through their spans (--help)")?;
    println!("{line}");
    Ok(profile)
}
