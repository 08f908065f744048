//! The command line of exercise 7's program.

use clap::Parser;

#[derive(Parser)]
#[command(
    about = "Exercise 7: find the server's knee, then load it at a rate R below it and at 2R (open loop)",
    long_about = "Exercise 7: Double the traffic.\n\n\
        Start the server first, in another terminal:\n\n    \
        cargo run -p gpt2 -- serve --max-batch-size 8 --port 8000\n\n\
        (or your own model: cargo run -p serve -- --model ID --max-batch-size 8 --port 8000, then --model ID here).\n\n\
        Then this (1) times a lone request (the target is 4 × its median TTFT, the exercise page's rule) and \
        sweeps the open-loop rate until P90 TTFT breaks the target, which gives the knee with its interval (results/sweep/bench.json and sweep.svg), (2) picks R by the exercise's rule: R is the highest rate at which the calibration sweep's target held, so that 2R is above it; then \
        sends the same load at R and at 2R, printing each run's results table (P90 TTFT with its 95% interval) \
        and writing results/rate-1x/bench.json and results/rate-2x/bench.json.\n\n\
        Then fill in answers.toml and run `course check 7`."
)]
pub(crate) struct Args {
    /// The server's address (any OpenAI-compatible /v1/completions server).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    pub(crate) base_url: String,
    /// The model name to send [default: the first model the server lists at /v1/models]. To ask
    /// the question of your own model, serve it (`cargo run -p serve -- --model ID
    /// --max-batch-size 8 --port 8000`) and name it here.
    #[arg(long, visible_alias = "model")]
    pub(crate) served_model: Option<String>,
    /// The P90 TTFT target, ms [default: the exercise page's rule, 4 × a lone request's median
    /// TTFT]; give it only when your instructor sets one.
    #[arg(long)]
    pub(crate) target_ms: Option<f64>,
    /// The rate R, in requests per second [default: the highest rate at which the calibration
    /// sweep's target held]; the second run uses 2R. A lower R must keep 2R above that rate.
    #[arg(long)]
    pub(crate) rate: Option<f64>,
    /// The rates the calibration sweep tries, in order, until the target fails [default: 1, 2,
    /// 4, … 32 times half the rate one request at a time could sustain, rounded].
    #[arg(long, value_delimiter = ',')]
    pub(crate) sweep_rates: Option<Vec<f64>>,
    /// Requests sent at each rate of the calibration sweep.
    #[arg(long, default_value_t = 30)]
    pub(crate) sweep_requests: usize,
    /// Requests sent in each replicate of the two runs (R and 2R).
    #[arg(long, default_value_t = 40)]
    pub(crate) requests: usize,
    /// Independent replicates of each of the two runs (fresh arrivals each): their intervals
    /// see how much the next run would differ (1: an interval that covers that run only).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub(crate) replicates: u16,
    /// Tokens generated per request (the server is asked to ignore end-of-text).
    #[arg(long, default_value_t = 16)]
    pub(crate) max_tokens: usize,
    /// Words per prompt (seeded, different for every request).
    #[arg(long, default_value_t = 16)]
    pub(crate) prompt_words: usize,
    /// Seed of the arrivals and of the prompts: every run uses the same.
    #[arg(long, default_value_t = 7)]
    pub(crate) seed: u64,
    /// Seconds before a request is given up.
    #[arg(long, default_value_t = 120.0)]
    pub(crate) timeout: f64,
    /// Hide the progress bars.
    #[arg(long)]
    pub(crate) no_progress: bool,
}
