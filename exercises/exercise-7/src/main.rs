//! Exercise 7: Double the traffic. Does the P90 TTFT target still hold at twice the rate?
//!
//! A benchmarking question against a real HTTP server (`gpt2 serve`, or any OpenAI-compatible
//! server), in two steps:
//!
//! 1. **Calibrate.** A few requests one at a time give a lone request's TTFT
//!    (`results/lone/`); the target is the exercise page's rule, 4 × its median (or
//!    `--target-ms`, when your instructor sets one). A short sweep (open-loop runs at rising
//!    rates, stopping at the first that breaks the target) finds the knee: the highest rate at
//!    which P90 TTFT still meets the target, with its 95% interval. `results/sweep/` gets its
//!    bench.json and sweep.svg.
//! 2. **Ask the question.** R is the highest rate at which the calibration sweep's target held,
//!    so that 2R is above it ([`RATE_RULE`], the rule `course check 7` checks the runs by; with
//!    the sweep's doubling rates 2R is the first rate that failed). Then the same load (Poisson
//!    arrivals, seeded prompts, fixed output length) runs at R and at 2R, one variable changed.
//!    Each run writes its bench.json into results/rate-1x/ and results/rate-2x/.
//!
//! TODO (you): start the server, run this, and fill in answers.toml: the target, the knee, both
//! P90 TTFTs, and at each rate whether the target holds, fails, or cannot be told apart from it
//! at this sample size (read the 95% interval of each P90, not just the number).

use anyhow::{bail, Context, Result};
use bench::environment::{Environment, Target};
use bench::intervals::Interval;
use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::metrics::Slo;
use bench::report::{Report, Run};
use bench::sweep::{self, Sweep};
use clap::Parser;
use course_model::traffic::{target_for, RateRule, RATE_RULE, TARGET_PER_LONE_TTFT};
use std::path::Path;
use std::process::ExitCode;

use course_model::exercise;
use std::time::Duration;

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
struct Args {
    /// The server's address (any OpenAI-compatible /v1/completions server).
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    base_url: String,
    /// The model name to send [default: the first model the server lists at /v1/models]. To ask
    /// the question of your own model, serve it (`cargo run -p serve -- --model ID
    /// --max-batch-size 8 --port 8000`) and name it here.
    #[arg(long, visible_alias = "model")]
    served_model: Option<String>,
    /// The P90 TTFT target, ms [default: the exercise page's rule, 4 × a lone request's median
    /// TTFT]; give it only when your instructor sets one.
    #[arg(long)]
    target_ms: Option<f64>,
    /// The rate R, in requests per second [default: the highest rate at which the calibration
    /// sweep's target held]; the second run uses 2R. A lower R must keep 2R above that rate.
    #[arg(long)]
    rate: Option<f64>,
    /// The rates the calibration sweep tries, in order, until the target fails [default: 1, 2,
    /// 4, … 32 times half the rate one request at a time could sustain, rounded].
    #[arg(long, value_delimiter = ',')]
    sweep_rates: Option<Vec<f64>>,
    /// Requests sent at each rate of the calibration sweep.
    #[arg(long, default_value_t = 30)]
    sweep_requests: usize,
    /// Requests sent in each replicate of the two runs (R and 2R).
    #[arg(long, default_value_t = 40)]
    requests: usize,
    /// Independent replicates of each of the two runs (fresh arrivals each): their intervals
    /// see how much the next run would differ (1: an interval that covers that run only).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    replicates: u16,
    /// Tokens generated per request (the server is asked to ignore end-of-text).
    #[arg(long, default_value_t = 16)]
    max_tokens: usize,
    /// Words per prompt (seeded, different for every request).
    #[arg(long, default_value_t = 16)]
    prompt_words: usize,
    /// Seed of the arrivals and of the prompts: every run uses the same.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Seconds before a request is given up.
    #[arg(long, default_value_t = 120.0)]
    timeout: f64,
    /// Hide the progress bars.
    #[arg(long)]
    no_progress: bool,
}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), run)
}

const START_SERVER: &str = "start it first, in another terminal: cargo run -p gpt2 -- serve --max-batch-size 8 --port 8000 (or pass --base-url)";

/// The first model the server lists at `GET /v1/models`.
async fn served_model(base_url: &str) -> Result<String> {
    let base = base_url.trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    let url = format!("{base}/v1/models");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let response = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("no server answers at {base}: {START_SERVER}"))?;
    if !response.status().is_success() {
        bail!("GET {url} answered {}: is this an OpenAI-compatible server? Pass --served-model to name the model yourself", response.status());
    }
    let body: serde_json::Value = response
        .json()
        .await
        .with_context(|| format!("GET {url} did not answer JSON"))?;
    body["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("GET {url} lists no model; pass --served-model to name it"))
}

/// The same load for every run; only the arrivals (and the request count) change.
fn load_config(args: &Args, model: &str, traffic: Traffic, requests: usize) -> LoadConfig {
    LoadConfig {
        base_url: args.base_url.clone(),
        model: model.to_string(),
        traffic,
        bound: Bound::Requests(requests),
        prompt: Prompt::RandomWords {
            words: args.prompt_words,
            seed: args.seed,
        },
        max_tokens: args.max_tokens,
        ignore_eos: true,
        include_usage: true,
        temperature: 0.0,
        warmup: 2,
        timeout_s: args.timeout,
        api_key: None,
        progress: !args.no_progress,
    }
}

/// R by the exercise's rule ([`RATE_RULE`]): the highest rate at which the sweep's target held,
/// or `--rate` where it keeps to the rule (at or below that rate, with 2R above it).
fn pick_rate(args: &Args, knee: &Sweep) -> Result<f64> {
    let rule = RateRule::from_sweep(knee.points.iter().map(|p| (p.rate, p.holds)))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let rate = args.rate.unwrap_or_else(|| rule.rate());
    if let Err(e) = rule.check(rate, 2.0 * rate) {
        bail!(
            "--rate {rate}: {e}. The exercise's rule: {RATE_RULE}; give a rate above {} and at most {} req/s, or leave --rate out",
            rule.rate() / 2.0,
            rule.rate()
        );
    }
    Ok(rate)
}

fn run(args: Args, dir: &Path) -> Result<()> {
    if let Some(rate) = args.rate {
        if !(rate.is_finite() && rate > 0.0) {
            bail!("--rate must be a positive number of requests per second; got {rate}");
        }
    }
    if let Some(t) = args.target_ms.filter(|t| !(t.is_finite() && *t > 0.0)) {
        bail!("--target-ms must be a positive number of milliseconds; got {t}");
    }
    let results = dir.join("results");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let model = match &args.served_model {
        Some(name) => name.clone(),
        None => runtime.block_on(served_model(&args.base_url))?,
    };

    // 1. Calibrate: how long does one request take alone, and where does this server, on this
    //    machine, stop meeting the target?
    println!("calibration: 8 requests one at a time");
    let lone_config = load_config(&args, &model, Traffic::ClosedLoop { concurrency: 1 }, 8);
    let outcome = runtime
        .block_on(load::run(&lone_config))
        .map_err(|e| anyhow::anyhow!("{e:#}\n{START_SERVER}"))?;
    let lone = Run::from_load("lone".into(), &lone_config, &Slo::default(), outcome)?;
    print!("{}", bench::report::table(&lone));
    let (Some(ttft), Some(e2el)) = (lone.metrics.ttft_ms.clone(), lone.metrics.e2el_ms.clone())
    else {
        bail!("no lone request completed; the table above shows why");
    };
    write(&results.join("lone"), lone)?;
    let target = args.target_ms.unwrap_or_else(|| target_for(ttft.median));
    if args.target_ms.is_none() {
        println!("target: P90 TTFT ≤ {target} ms ({TARGET_PER_LONE_TTFT} × the lone median TTFT of {:.1} ms)", ttft.median);
    }
    // One request at a time sustains 1 / E2EL requests per second; batching sustains more.
    let base = 0.5 * 1000.0 / e2el.median;
    // Doubling from one rounded rate, so that 2R (R one of these) is the next rate tried.
    let rates = args.sweep_rates.clone().unwrap_or_else(|| {
        let first = load::round_rate(base);
        (0..6).map(|i| first * f64::from(1 << i)).collect()
    });
    let slo = Slo {
        ttft_ms: Some(target),
        ..Slo::default()
    };
    let bounds = sweep::Bound::from_slo(&slo, 90.0)?;
    println!("calibration: a sweep of {} requests per rate at {rates:?} req/s against P90 TTFT ≤ {target} ms", args.sweep_requests);
    let first = rates.first().copied().unwrap_or(1.0);
    let config = load_config(
        &args,
        &model,
        Traffic::OpenLoop {
            rate: first,
            seed: args.seed,
        },
        args.sweep_requests,
    );
    let (runs, knee) = sweep::run(&runtime, &config, &rates, &bounds, &slo)
        .map_err(|e| anyhow::anyhow!("{e:#}\n{START_SERVER}"))?;
    print!("{}", knee.text());
    let sweep_dir = results.join("sweep");
    let mut report = Report::new(
        Environment::capture(server_target()),
        runs.into_iter().map(|(_, run)| run).collect(),
    );
    report.sweep = Some(knee.clone());
    report.write(&sweep_dir.join("bench.json"))?;
    knee.write_svg(&sweep_dir.join("sweep.svg"))?;
    println!(
        "wrote {} and sweep.svg",
        sweep_dir.join("bench.json").display()
    );

    // 2. The question, at R and 2R.
    let rate = pick_rate(&args, &knee)?;
    println!(
        "\nR = {rate} req/s{}; 2R = {} req/s. The rule: {RATE_RULE}.",
        if args.rate.is_some() { " (--rate)" } else { "" },
        2.0 * rate
    );
    let mut p90 = Vec::new();
    for (label, rate) in [("rate-1x", rate), ("rate-2x", 2.0 * rate)] {
        println!(
            "\n{label}: {} × {} requests to {} ({model}) at {rate} req/s, open loop: about {:.0} s of arrivals",
            args.replicates,
            args.requests,
            args.base_url,
            f64::from(args.replicates) * args.requests as f64 / rate
        );
        let config = load_config(
            &args,
            &model,
            Traffic::OpenLoop {
                rate,
                seed: args.seed,
            },
            args.requests,
        );
        let outcome = runtime
            .block_on(load::run_replicates(&config, usize::from(args.replicates)))
            .map_err(|e| anyhow::anyhow!("{e:#}\n{START_SERVER}"))?;
        let run = Run::from_load(format!("{label} ({rate} req/s)"), &config, &slo, outcome)?;
        print!("{}", bench::report::table(&run));
        if run.metrics.completed == 0 {
            bail!("every request of {label} failed; the table above shows why");
        }
        p90.push(
            run.metrics
                .ttft_ms
                .as_ref()
                .and_then(|s| Some((s.p90, s.ci95_p90.clone()?))),
        );
        write(&results.join(label), run)?;
    }
    let show = |v: &Option<(f64, Interval)>| {
        v.as_ref().map_or("n/a".to_string(), |(ms, ci)| {
            format!("{ms:.1} ms [95% CI {}]", ci.brackets(1))
        })
    };
    println!(
        "\nP90 TTFT at R = {rate} req/s: {}; at 2R = {} req/s: {}.",
        show(&p90[0]),
        2.0 * rate,
        show(&p90[1])
    );
    fill_in_answers(target, &knee, &p90, dir)
}

/// The answers: the target, the knee, both P90 TTFTs, and at each rate what its 95% interval
/// says against the target.
fn fill_in_answers(
    target: f64,
    knee: &Sweep,
    p90: &[Option<(f64, Interval)>],
    dir: &Path,
) -> Result<()> {
    // TODO: you compare each interval with the target and fill in answers.toml.
    let _ = (target, knee, p90, dir);
    println!(
        "Next: compare each interval with the target, fill in answers.toml, then `course check 7`."
    );
    Ok(())
}

fn server_target() -> Target {
    Target {
        device: Some("server".into()),
        ..Target::default()
    }
}

fn write(dir: &Path, run: Run) -> Result<()> {
    let report = Report::new(Environment::capture(server_target()), vec![run]);
    report.write(&dir.join("bench.json"))?;
    bench::plot::write_latency_cdf(&dir.join("latency.svg"), &[&report.runs[0]])?;
    println!("wrote {}", dir.join("bench.json").display());
    Ok(())
}
