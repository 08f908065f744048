//! Exercise 3's command line.

use clap::Parser;
use engine::profile::ScheduleArgs;
use gpt2::cli::ModelArgs;

/// The flags `cargo run -p exercise-3 -- ...` takes (`--exercise-dir` is added by
/// `course_model::exercise::main`).
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
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    /// Rows printed (results/report.json holds every row).
    #[arg(long, default_value_t = 10)]
    pub row_limit: usize,
    /// Record memory too (PyTorch's `profile_memory=True`): CPU Mem, Self CPU Mem and the
    /// allocations of every row, the step's peak under the table and in results/report.json, and
    /// results/memory-timeline.svg (live bytes by category: weights, KV cache, activations,
    /// temporaries).
    #[arg(long)]
    pub profile_memory: bool,
}
