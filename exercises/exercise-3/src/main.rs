//! Exercise 3: Profile a forward pass — the PyTorch Profiler recipe's "try it", in candle.
//!
//! Loads GPT-2 (the real checkpoint by default; offline, the synthetic one with GPT-2 small's
//! shapes, with a notice), runs forward passes under the profiler, prints the top-ops table
//! sorted by self CPU time (self CUDA time on a GPU) with each op's roofline (against this
//! machine's measured ceilings) and saves the profile to results/report.json, the file
//! `course check 3` grades your answers against.
//!
//! Before the profile runs, in a terminal, it asks for your prediction (which op will top the
//! table, and its share) when answers.toml holds none yet, and records it there with the time.
//!
//! TODO (you): run it (`cargo run -p exercise-3`), read the table, and fill in answers.toml:
//! the three ops with the largest self time with their shares, and your plan to cut the step
//! time by 10%: the op to attack, the cut you expect, the mechanism, and why.

use anyhow::{Context, Result};
use clap::Parser;
use engine::profile::{
    machine_ceilings, profile_forward, profile_forward_with_memory, write_exports, ForwardProfile,
    ScheduleArgs,
};
use gpt2::cli::ModelArgs;
use gpt2::MlpActivation;
use profiler::{CudaTiming, SortBy, TableOptions};
use std::path::Path;
use std::process::ExitCode;

use course_model::exercise;

/// Counts allocations, so that a profile can record memory (the profiler's memory columns).
#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

#[derive(Parser)]
#[command(
    about = "Exercise 3: profile a GPT-2 forward pass, print the top ops and write results/report.json",
    long_about = "Exercise 3: Profile a forward pass.\n\n\
        Loads GPT-2 (--model gpt2 downloads openai-community/gpt2 once; offline it falls back to a synthetic \
        checkpoint with the same shapes, whose timings are just as real), runs warm-up forwards, then profiles \
        forward passes op by op. Prints the table sorted by self CPU time (self CUDA time on a GPU), with each \
        op's roofline against this machine's ceilings (memory bandwidth and peak matmul throughput, measured \
        once and cached; `gpt2 profile --remeasure-ceilings` measures them again), and writes \
        results/report.json, trace.json (open it in ui.perfetto.dev), stacks.folded and flamegraph.svg.\n\n\
        Before all that, in a terminal, it asks for your prediction of the table's top op when answers.toml holds \
        none yet (without a terminal it says how to make one). Then fill in answers.toml from the table and run \
        `course check 3`."
)]
struct Args {
    #[command(flatten)]
    model: ModelArgs,
    #[command(flatten)]
    schedule: ScheduleArgs,
    /// Rows printed (results/report.json holds every row).
    #[arg(long, default_value_t = 10)]
    row_limit: usize,
    /// Record memory too (PyTorch's `profile_memory=True`): CPU Mem, Self CPU Mem and the
    /// allocations of every row, the step's peak under the table and in results/report.json, and
    /// results/memory-timeline.svg (live bytes by category: weights, KV cache, activations,
    /// temporaries).
    #[arg(long)]
    profile_memory: bool,
}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), run)
}

fn run(args: Args, dir: &Path) -> Result<()> {
    let results = dir.join("results");
    predict(dir)?;

    if args.profile_memory {
        // Counting starts before the load, so that the weights are counted (in their own category).
        profiler::alloc::enable();
    }
    // ANCHOR: load
    // GPT-2 small from the hub (or its cache); offline, the synthetic checkpoint, with a notice.
    let loaded = {
        let _weights = args
            .profile_memory
            .then(|| profiler::alloc::category(profiler::Category::Weights));
        args.model.load().context("cannot load GPT-2")?
    };
    let mut model = loaded.model;
    // Candle's own ops for the MLP's bias add and GELU, one after the other: the unfused
    // starting point that exercises 4 and 5 work on.
    model.set_mlp_activation(MlpActivation::Stock);
    if loaded.checkpoint.synthetic {
        println!("(synthetic weights: every timing is real, the model's outputs are not)");
    }
    // ANCHOR_END: load

    // ANCHOR: profile
    // Like PyTorch's `schedule(wait=0, warmup=2, active=5)`: warm-up forwards are run and
    // thrown away, then the active ones are recorded, op by op. The profile also carries this
    // machine's ceilings (measured once, then read from the course's cache), so each op that
    // declares its work gets a roofline: its GFLOP/s and GB/s, the % of what it could reach
    // at its arithmetic intensity, and whether memory or compute bounds it.
    let spec = ForwardProfile {
        batch: args.schedule.batch,
        seq: args.schedule.seq,
        warmup: args.schedule.warmup,
        active: args.schedule.active,
        record_shapes: true,
        with_flops: false,
        cuda_timing: CudaTiming::Events,
    };
    // With --profile-memory every row also gets what it allocated (PyTorch's `profile_memory`).
    let profile = match args.profile_memory {
        true => profile_forward_with_memory(&model, &spec, machine_ceilings(&model, false))?,
        false => profile_forward(&model, &spec)?,
    };

    // On a GPU the kernels run asynchronously: rank by the time they took on the device.
    let on_cuda = model.device().is_cuda();
    let options = TableOptions::top(SortBy::self_time(on_cuda), args.row_limit);
    println!("{spec}");
    print!("{}", profile.table(options));
    let files = write_exports(&profile, options, &results)?;
    // ANCHOR_END: profile

    println!("\n{}", files.listing("graded by `course check 3`"));
    fill_in_answers(&files.report, dir, on_cuda)
}

/// Your prediction, before the profile runs: asked in a terminal when answers.toml holds none
/// yet, and recorded there with the time (without a terminal it says how to make one).
fn predict(dir: &Path) -> Result<()> {
    // TODO: you type your prediction when asked (or run `course run 3`, which asks too).
    answers_file::prediction::top_op_first(dir, "exercise-3", 3);
    Ok(())
}

/// The answers: the top three rows with their shares, and the plan.
fn fill_in_answers(report: &Path, dir: &Path, on_cuda: bool) -> Result<()> {
    // TODO: you fill in answers.toml from the table (this program leaves it to you).
    let _ = (report, dir);
    println!(
        "Next: copy the first three rows' names and {} shares into answers.toml; for your plan, read the \
         op's Roofline % and Reading before you choose a mechanism; then `course check 3`.",
        if on_cuda { "Self CUDA %" } else { "Self CPU %" }
    );
    Ok(())
}
