//! One run of exercise 8: the prediction, the model on its tier, the table and the files, the
//! answers.

use std::path::Path;

use anyhow::{Context, Result};
use engine::profile::{
    machine_ceilings, profile_forward, profile_forward_with_memory, write_exports, ForwardProfile,
};
use llama::source::{self, Source};
use profiler::{CudaTiming, SortBy, TableOptions};

use crate::args::Args;
use crate::load::{gguf_name, load, FirstTier, Loaded};
use crate::memory::MemoryGiven;
use crate::Learner;

/// The whole run in `dir` (the exercise's folder), calling the `learner`'s functions before
/// anything loads, before the profile (the memory prediction) and after its files are written.
pub fn run(args: Args, dir: &Path, learner: Learner) -> Result<()> {
    (learner.predict)(dir)?;
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
            in_the_engine(&model, &device, &args, &spec, dir, learner)?
        }
        Some(path) => {
            through_its_spans(&path, &gguf_name(&args.model, &path), &device, &args, &spec)?
        }
        None => {
            let checkpoint = source::resolve(
                &Source::parse(&args.model)?,
                args.run.dtype.dense(),
                &mut |notice| eprintln!("{notice}"),
            )?;
            match llama::config::family_of_file(&checkpoint.dir.join("config.json"))? {
                Some(_) => {
                    let model = load(FirstTier::Checkpoint(checkpoint), &device, &args)?;
                    in_the_engine(&model, &device, &args, &spec, dir, learner)?
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
    (learner.fill_in_answers)(&files.report, dir, on_cuda)
}

/// The first tier: a Llama-family model on the course's engine, every op in its own row.
pub fn in_the_engine(
    loaded: &Loaded,
    device: &candle_core::Device,
    args: &Args,
    spec: &ForwardProfile,
    dir: &Path,
    learner: Learner,
) -> Result<profiler::Profile> {
    let model = &loaded.model;
    // Your memory prediction comes before the profile: the given batch and context, and the
    // config values the course's arithmetic reads, recorded for `course check 8`.
    let mut memory = match loaded.gguf {
        false => {
            let memory = MemoryGiven::of(model, &loaded.name, args, device)?;
            memory.write(dir)?;
            (learner.predict_memory)(&memory, dir)?;
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

/// The second tier: a checkpoint of another model type, or a GGUF file the engine does not
/// read, run by candle-transformers and profiled through the tracing spans it opens.
pub fn through_its_spans(
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
    let (profile, line) = traced_models::profile_model(
        path,
        name,
        device,
        args.run.dtype.dense_only("second-tier (candle-transformers)")?,
        spec,
    )
        .context("exercise 8 runs the Llama family (safetensors or GGUF) on the course's engine, and phi3 and gemma checkpoints through their spans (--help)")?;
    println!("{line}");
    Ok(profile)
}
