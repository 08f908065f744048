//! The command line of exercise 2's program.

use clap::Parser;
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    about = "Exercise 2: find where batch 8 and 16 saturate, then compare the server at both below and above saturation",
    long_about = "Exercise 2: Batch 8 versus 16.\n\n\
        Starts `serve` (the binary built beside this one; GPT-2's shapes with synthetic weights by default, no download; \
        --model runs your own model) at \
        --max-batch-size 8 and 16 and measures the rate each sustains with twice its batch in flight (its saturation). \
        Then it sends the same open-loop traffic (Poisson arrivals, --replicates runs of --requests requests of \
        --max-tokens tokens) at 0.6 times batch 8's saturation and at twice the larger saturation, to both. At each \
        rate it compares batch 16 with batch 8 on output tokens/s, P90 TTFT and P90 TPOT with your percentile \
        and your verdict (src/stats.rs), and writes results/bench.json and results/latency.svg.\n\n\
        Then fill in answers.toml and run `course check 2`."
)]
pub(crate) struct Args {
    /// The checkpoint `serve` loads: `synthetic` (GPT-2's shapes, random weights, real timings,
    /// no download), `gpt2`, a Hub id or folder of the Llama family (your own model, as in
    /// exercise 8), `synthetic-smollm2-135m`, or a GGUF file.
    #[arg(long, default_value = "synthetic")]
    pub(crate) model: String,
    /// The device `serve` runs on: cpu, cuda or auto.
    #[arg(long, default_value = "auto")]
    pub(crate) device: String,
    /// The baseline batch size (A).
    #[arg(long, default_value_t = 8)]
    pub(crate) batch_a: u16,
    /// The batch size compared with it (B).
    #[arg(long, default_value_t = 16)]
    pub(crate) batch_b: u16,
    /// The two open-loop rates, below and above saturation, in requests per second [default: 0.6
    /// times batch A's saturation, and twice the larger of the two saturations].
    #[arg(long, value_delimiter = ',', num_args = 2, value_names = ["BELOW", "ABOVE"])]
    pub(crate) rates: Option<Vec<f64>>,
    /// Requests of each calibration (closed loop, twice the batch in flight).
    #[arg(long, default_value_t = 40)]
    pub(crate) calibration_requests: usize,
    /// Requests in each replicate at each rate.
    #[arg(long, default_value_t = 32)]
    pub(crate) requests: usize,
    /// Independent replicates at each rate and batch size (fresh arrivals each). Five, not the
    /// bench's default three: a P90's interval needs about 70 independent-looking samples a side
    /// to close at 4 degrees of freedom, about 170 at 2.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) replicates: u16,
    /// Tokens generated per request (the server is asked to ignore end-of-text).
    #[arg(long, default_value_t = 16)]
    pub(crate) max_tokens: usize,
    /// Words per prompt (seeded, different for every request, the same at both batch sizes).
    #[arg(long, default_value_t = 16)]
    pub(crate) prompt_words: usize,
    /// The smallest relative change worth acting on (0.05: 5%).
    #[arg(long, visible_alias = "threshold", default_value_t = 0.05)]
    pub(crate) min_effect: f64,
    /// Seed of the arrivals and the prompts: both batch sizes get the same (replicate k: seed + k).
    #[arg(long, default_value_t = 2)]
    pub(crate) seed: u64,
    /// Seconds before a request is given up.
    #[arg(long, default_value_t = 180.0)]
    pub(crate) timeout: f64,
    /// The `serve` program to start [default: the one beside this program].
    #[arg(long, value_name = "PATH")]
    pub(crate) server: Option<PathBuf>,
    /// Hide the progress bars.
    #[arg(long)]
    pub(crate) no_progress: bool,
}
