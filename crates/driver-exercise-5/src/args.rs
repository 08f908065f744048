//! Exercise 5's command line.

use clap::Parser;
use gpt2::cli::ModelArgs;

/// Exercise 5's command line: the model, the profiled pass, the benchmark and its judgement.
#[derive(Parser)]
#[command(
    about = "Exercise 5: predict, fuse, measure, fix the kernel, measure, judge: your fused bias-add + GELU, profiled and benchmarked",
    long_about = "Exercise 5: Fuse, then judge.\n\n\
        1. Checks your two ops (src/fused.rs: stage 1, the fusion; stage 2, the kernel fix) against candle's unfused \
        broadcast_add + gelu and writes the largest differences to results/fused_check.json (each at most 1e-5). \
        Stage 2 may still be unwritten: then the run shows stage 1 only. On a GPU both stages launch the same kernel, so stage 1 alone runs there.\n\
        2. Profiles a GPT-2 forward pass with the stock, unfused ops (results/unfused/), with stage 1 in the MLP \
        (results/stage1/) and with stage 2 (results/stage2/), and prints what moved in the roofline columns.\n\
        3. Benchmarks generation end to end, your final op against the unfused ops, and compares output tokens per \
        second with a 95% interval over the timed repeats (results/bench.json, results/latency.svg).\n\n\
        Then fill in answers.toml and run `course check 5`.\n\n\
        The ops run on the CPU, and on a GPU when the exercise is built with `--features cuda` (their kernel is \
        src/fused_bias_gelu.cu): `cargo run -p exercise-5 --features cuda -- --device cuda`."
)]
pub struct Args {
    #[command(flatten)]
    pub model: ModelArgs,
    /// Tokens per sequence in the profiled forward pass.
    #[arg(long, default_value_t = 8)]
    pub seq: usize,
    /// Forwards recorded in each profile.
    #[arg(long, default_value_t = 5)]
    pub active: usize,
    /// Batch size of the end-to-end benchmark.
    #[arg(long, default_value_t = 8)]
    pub batch: usize,
    /// Prompt length of the benchmark, in tokens.
    #[arg(long, default_value_t = 16)]
    pub prompt_len: usize,
    /// Tokens generated per sequence in the benchmark.
    #[arg(long, default_value_t = 8)]
    pub output_len: usize,
    /// Untimed benchmark batches first, each way.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Timed benchmark batches each way: independent repeats, the interval is taken over them.
    #[arg(long, default_value_t = 8)]
    pub repeats: usize,
    /// The smallest relative change worth acting on (0.05: 5%).
    #[arg(long, visible_alias = "threshold", default_value_t = 0.05)]
    pub min_effect: f64,
    /// Seed of the prompts.
    #[arg(long, default_value_t = 5)]
    pub seed: u64,
}
