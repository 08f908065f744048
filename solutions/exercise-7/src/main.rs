//! Exercise 7: Double the traffic. Does the P90 TTFT target still hold at twice the rate?
//!
//! A benchmarking question against a real HTTP server (`gpt2 serve`, or any OpenAI-compatible
//! server): the same open-loop load (Poisson arrivals, seeded prompts, fixed output length) at a
//! rate R and at 2R, one variable changed. Each run writes its bench.json into
//! results/rate-1x/ and results/rate-2x/.
//!
//! Solution: the same program; after the two runs it fills in answers.toml: the exercise
//! page's target, both P90 TTFTs, and whether the target holds at 2R.

use grader::fill_answers as answers;

use anyhow::{bail, Context, Result};
use bench::environment::{Environment, Target};
use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::metrics::Slo;
use bench::report::{Report, Run};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    about = "Exercise 7: load a server at a rate R and at 2R (open loop) and write both bench.json files",
    long_about = "Exercise 7: Double the traffic.\n\n\
        Start the server first, in another terminal:\n\n    \
        cargo run --release -p gpt2 -- serve --max-batch-size 8 --port 8000\n\n\
        Then this sends the same open-loop load (Poisson arrivals at --rate requests/s, seeded prompts, \
        --max-tokens tokens each) at R and at 2R, prints each run's results table (P90 TTFT with its interval) \
        and writes results/rate-1x/bench.json and results/rate-2x/bench.json.\n\n\
        Then fill in answers.toml and run `course check 7`."
)]
struct Args {
    /// The server's address (any OpenAI-compatible /v1/completions server).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    base_url: String,
    /// The model name to send [default: the first model the server lists at /v1/models].
    #[arg(long)]
    served_model: Option<String>,
    /// The rate R, in requests per second; the second run uses 2R.
    #[arg(long, default_value_t = 2.0)]
    rate: f64,
    /// Requests sent in each run.
    #[arg(long, default_value_t = 40)]
    requests: usize,
    /// Tokens generated per request (the server is asked to ignore end-of-text).
    #[arg(long, default_value_t = 16)]
    max_tokens: usize,
    /// Words per prompt (seeded, different for every request).
    #[arg(long, default_value_t = 16)]
    prompt_words: usize,
    /// Seed of the arrivals and of the prompts: both runs use the same.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Seconds before a request is given up.
    #[arg(long, default_value_t = 120.0)]
    timeout: f64,
    /// Hide the progress bars.
    #[arg(long)]
    no_progress: bool,
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

/// The target stated on the exercise page (book/src/exercises/exercise-7.md).
const TARGET_P90_TTFT_MS: f64 = 500.0;

const START_SERVER: &str = "start it first, in another terminal: cargo run --release -p gpt2 -- serve --max-batch-size 8 --port 8000 (or pass --base-url)";

/// The first model the server lists at `GET /v1/models`.
async fn served_model(base_url: &str) -> Result<String> {
    let base = base_url.trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    let url = format!("{base}/v1/models");
    let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build()?;
    let response = client.get(&url).send().await.with_context(|| format!("no server answers at {base}: {START_SERVER}"))?;
    if !response.status().is_success() {
        bail!("GET {url} answered {}: is this an OpenAI-compatible server? Pass --served-model to name the model yourself", response.status());
    }
    let body: serde_json::Value = response.json().await.with_context(|| format!("GET {url} did not answer JSON"))?;
    body["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("GET {url} lists no model; pass --served-model to name it"))
}

fn run(args: Args) -> Result<()> {
    if !(args.rate.is_finite() && args.rate > 0.0) {
        bail!("--rate must be a positive number of requests per second; got {}", args.rate);
    }
    let dir = args.exercise_dir.clone().unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let results = dir.join("results");
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    let model = match &args.served_model {
        Some(name) => name.clone(),
        None => runtime.block_on(served_model(&args.base_url))?,
    };

    let mut p90 = Vec::new();
    for (label, rate, folder) in [("rate-1x", args.rate, "rate-1x"), ("rate-2x", 2.0 * args.rate, "rate-2x")] {
        println!(
            "\n{label}: {} requests to {} ({model}) at {rate} req/s, open loop: about {:.0} s of arrivals",
            args.requests,
            args.base_url,
            args.requests as f64 / rate
        );
        let config = LoadConfig {
            base_url: args.base_url.clone(),
            model: model.clone(),
            traffic: Traffic::OpenLoop { rate, seed: args.seed },
            bound: Bound::Requests(args.requests),
            prompt: Prompt::RandomWords { words: args.prompt_words, seed: args.seed },
            max_tokens: args.max_tokens,
            ignore_eos: true,
            include_usage: true,
            temperature: 0.0,
            warmup: 2,
            timeout_s: args.timeout,
            api_key: None,
            progress: !args.no_progress,
        };
        let outcome = runtime.block_on(load::run(&config)).map_err(|e| anyhow::anyhow!("{e:#}\n{START_SERVER}"))?;
        let run = bench::cli::load_run(format!("{label} ({rate} req/s)"), &config, &Slo::default(), args.seed, outcome)?;
        print!("{}", bench::report::table(&run));
        if run.metrics.completed == 0 {
            bail!("every request of {label} failed; the table above shows why");
        }
        p90.push(run.metrics.ttft_ms.as_ref().map(|s| s.p90));
        write(&results.join(folder), run)?;
    }
    let show = |v: Option<f64>| v.map_or("n/a".to_string(), |ms| format!("{ms:.1} ms"));
    println!("\nP90 TTFT at R = {} req/s: {}; at 2R = {} req/s: {}.", args.rate, show(p90[0]), 2.0 * args.rate, show(p90[1]));
    let (Some(at_rate), Some(at_double)) = (p90[0], p90[1]) else {
        bail!("a run has no TTFT figures (did every request fail?), so there is nothing to answer");
    };
    let holds = at_double <= TARGET_P90_TTFT_MS;
    println!("The target is {TARGET_P90_TTFT_MS} ms: at 2R it {}.", if holds { "holds" } else { "does not hold" });
    answers::fill(
        &dir.join("answers.toml"),
        &[
            ("target_p90_ttft_ms".into(), TARGET_P90_TTFT_MS.into()),
            ("p90_ttft_ms_at_rate".into(), at_rate.into()),
            ("p90_ttft_ms_at_double".into(), at_double.into()),
            ("target_holds_at_double".into(), if holds { "yes" } else { "no" }.into()),
        ],
    )?;
    println!("Next: `course check 7`.");
    Ok(())
}

fn write(dir: &Path, run: Run) -> Result<()> {
    let target = Target { device: Some("server".into()), ..Target::default() };
    let report = Report::new(Environment::capture(target), vec![run]);
    report.write(&dir.join("bench.json"))?;
    bench::plot::write_latency_cdf(&dir.join("latency.svg"), &[&report.runs[0]])?;
    println!("wrote {}", dir.join("bench.json").display());
    Ok(())
}
