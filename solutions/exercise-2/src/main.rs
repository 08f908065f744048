//! Exercise 2: Batch 8 versus 16. Is batch size 16 faster than batch size 8 for my traffic?
//!
//! A benchmarking question against a real server: this program starts `gpt2 serve` itself, at
//! `--max-batch-size 8` and then at 16 (the most sequences decoding together; the server batches
//! continuously), and sends each the same open-loop traffic with the bench crate's load client,
//! as `course bench` does: Poisson arrivals at `--rate`, seeded prompts, `--max-tokens` tokens
//! each. Only the batch size changes. Then batch 16 is compared with batch 8 three ways, by
//! your percentile and your verdict (src/stats.rs): output tokens per second (throughput), and
//! P90 TTFT and P90 TPOT (what each request waits), each a ratio with a 95% bootstrap interval
//! against a noise threshold. Everything goes to results/bench.json and results/latency.svg.
//!
//! Solution: src/stats.rs is written, and this run fills in answers.toml from its own results.

use grader::fill_answers as answers;
mod stats;

use anyhow::{bail, Context, Result};
use bench::compare::MetricChoice;
use bench::environment::{Environment, Target};
use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::metrics::Slo;
use bench::report::{Report, Run};
use bench::server::LocalServer;
use bench::stats::{Better, Comparison};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    about = "Exercise 2: start gpt2 serve at batch 8 and at 16, send both the same traffic, compare throughput and latency",
    long_about = "Exercise 2: Batch 8 versus 16.\n\n\
        Starts `gpt2 serve` (the binary built beside this one; synthetic weights by default, no download) at \
        --max-batch-size 8, sends it open-loop traffic (Poisson arrivals at --rate, --requests requests of \
        --max-tokens tokens), stops it, and does the same at 16. Prints both results tables, then compares batch \
        16 with batch 8 on output tokens/s, P90 TTFT and P90 TPOT with your percentile and your verdict \
        (src/stats.rs), and writes results/bench.json and results/latency.svg.\n\n\
        Then fill in answers.toml and run `course check 2`."
)]
struct Args {
    /// The checkpoint `gpt2 serve` loads: `synthetic` (random weights, real timings, no
    /// download), `gpt2`, or a folder.
    #[arg(long, default_value = "synthetic")]
    model: String,
    /// The device `gpt2 serve` runs on: cpu, cuda or auto.
    #[arg(long, default_value = "auto")]
    device: String,
    /// The baseline batch size (A).
    #[arg(long, default_value_t = 8)]
    batch_a: u16,
    /// The batch size compared with it (B).
    #[arg(long, default_value_t = 16)]
    batch_b: u16,
    /// Arrivals per second (open loop: requests arrive whether or not earlier ones finished).
    #[arg(long, default_value_t = 4.0)]
    rate: f64,
    /// Requests sent to each batch size.
    #[arg(long, default_value_t = 40)]
    requests: usize,
    /// Tokens generated per request (the server is asked to ignore end-of-text).
    #[arg(long, default_value_t = 16)]
    max_tokens: usize,
    /// Words per prompt (seeded, different for every request, the same at both batch sizes).
    #[arg(long, default_value_t = 16)]
    prompt_words: usize,
    /// Relative difference treated as noise (0.05: a 5% difference is not a difference).
    #[arg(long, default_value_t = 0.05)]
    threshold: f64,
    /// Seed of the arrivals, the prompts and the bootstrap: both batch sizes get the same.
    #[arg(long, default_value_t = 2)]
    seed: u64,
    /// Seconds before a request is given up.
    #[arg(long, default_value_t = 120.0)]
    timeout: f64,
    /// The `gpt2` program to start [default: the one beside this program].
    #[arg(long, value_name = "PATH")]
    gpt2: Option<PathBuf>,
    /// Hide the progress bars.
    #[arg(long)]
    no_progress: bool,
    /// The exercise folder whose results/ receives the files [default: this exercise's folder].
    #[arg(long, value_name = "DIR")]
    exercise_dir: Option<PathBuf>,
}

/// The three comparisons of batch 16 against batch 8: the metric (as `course bench --compare
/// --metric` names it) and which direction is better.
const COMPARED: [(&str, Better); 3] =
    [("output_tokens_per_s", Better::Higher), ("ttft_ms.p90", Better::Lower), ("tpot_ms.p90", Better::Lower)];

fn main() -> ExitCode {
    match run(Args::parse()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: Args) -> Result<()> {
    // Fail fast, before a minute of measuring, if src/stats.rs still has its TODOs.
    let _ = stats::percentile(&[1.0, 2.0], 50.0);
    let _ = stats::verdict(1.0, 1.0, 0.05, Better::Higher);
    if !(0.0..1.0).contains(&args.threshold) {
        bail!("--threshold is a fraction in [0, 1), e.g. 0.05 for 5%; got {}", args.threshold);
    }
    if !(args.rate.is_finite() && args.rate > 0.0) {
        bail!("--rate must be a positive number of requests per second; got {}", args.rate);
    }
    let dir = args.exercise_dir.clone().unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")));
    let results = dir.join("results");
    let gpt2 = gpt2_program(args.gpt2.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;

    let run_a = measure(&args, &gpt2, args.batch_a, &results, &runtime)?;
    let run_b = measure(&args, &gpt2, args.batch_b, &results, &runtime)?;

    for run in [&run_a, &run_b] {
        let ttft: Vec<f64> = run.requests.iter().filter(|r| r.ok).map(|r| r.ttft_ms).collect();
        if let (Some(yours), Some(table)) = (stats::percentile(&ttft, 90.0), run.metrics.ttft_ms.as_ref()) {
            println!("{}: P90 TTFT by your percentile {yours:.2} ms, by the table {:.2} ms", run.label, table.p90);
        }
    }
    let mut comparisons = Vec::new();
    for (metric, better) in COMPARED {
        let choice = MetricChoice::parse(metric)?;
        let (a, b) = (choice.samples(&run_a), choice.samples(&run_b));
        let comparison = stats::compare(&choice.name(), &a, &b, choice.stat, better, args.threshold)
            .with_context(|| format!("cannot compare {metric}: a run has no samples of it, or batch {}'s is zero", args.batch_a))?;
        println!("\n{}", bench::report::comparison_text(&comparison, &run_a.label, &run_b.label));
        comparisons.push(comparison);
    }
    print!("{}", summary(&comparisons, &run_a.label, &run_b.label));

    let target = Target { device: Some("server".into()), ..Target::default() };
    let mut report = Report::new(Environment::capture(target), vec![run_a, run_b]);
    report.comparisons = comparisons;
    let json = results.join("bench.json");
    report.write(&json)?;
    let svg = results.join("latency.svg");
    bench::plot::write_latency_cdf(&svg, &[&report.runs[0], &report.runs[1]])?;
    println!("wrote {} and {}", json.display(), svg.display());
    // The answers, as read from the printed comparisons. The decision is about throughput:
    // the question a batch-size limit is usually raised for (more tokens per second).
    let [throughput, ttft, tpot] = [0, 1, 2].map(|i| &report.comparisons[i]);
    answers::fill(
        &dir.join("answers.toml"),
        &[
            ("throughput.ratio".into(), throughput.ratio.into()),
            ("throughput.verdict".into(), throughput.verdict.as_str().into()),
            ("latency.ttft_p90_verdict".into(), ttft.verdict.as_str().into()),
            ("latency.tpot_p90_verdict".into(), tpot.verdict.as_str().into()),
            ("decision.meaning".into(), "throughput".into()),
            ("decision.answer".into(), throughput.verdict.as_str().into()),
        ],
    )?;
    println!("Next: `course check 2`.");
    Ok(())
}

/// Start `gpt2 serve` at `batch`, send it the traffic, stop it.
fn measure(args: &Args, gpt2: &Path, batch: u16, results: &Path, runtime: &tokio::runtime::Runtime) -> Result<Run> {
    let label = format!("batch-{batch}");
    let serve: Vec<String> = ["serve", "--model", &args.model, "--device", &args.device, "--port", "0", "--max-batch-size", &batch.to_string()]
        .map(String::from)
        .to_vec();
    let log = results.join(format!("serve-{label}.log"));
    println!("\n{label}: starting {} {} (its output: {})", gpt2.display(), serve.join(" "), log.display());
    let server = LocalServer::start(gpt2, &serve, Some(&log), Duration::from_secs(600))?;
    println!(
        "{label}: {} requests to {} at {} req/s, open loop: about {:.0} s of arrivals",
        args.requests,
        server.base_url,
        args.rate,
        args.requests as f64 / args.rate
    );
    let config = LoadConfig {
        base_url: server.base_url.clone(),
        // gpt2 serve answers to the --model value unless told another name.
        model: args.model.clone(),
        traffic: Traffic::OpenLoop { rate: args.rate, seed: args.seed },
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
    let outcome = runtime.block_on(load::run(&config)).with_context(|| format!("{label}: the load run failed; the server's output is in {}", log.display()))?;
    server.stop();
    let mut run = Run::from_load(label.clone(), &config, &Slo::default(), outcome)?;
    // The one variable this comparison changes, recorded beside the traffic that stayed fixed.
    run.config["server"] = serde_json::json!({ "program": "gpt2 serve", "model": args.model, "device": args.device, "max_batch_size": batch });
    print!("{}", bench::report::table(&run));
    if run.metrics.completed == 0 {
        bail!("every request of {label} failed; the table above shows why, and {} the server's side", log.display());
    }
    Ok(run)
}

/// The `gpt2` program: `--gpt2`, or the one cargo built beside this program.
fn gpt2_program(given: Option<&Path>) -> Result<PathBuf> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => bench::server::sibling_program("gpt2")?,
    };
    if !path.is_file() {
        // Cargo puts release builds in target/release and dev builds in target/debug.
        let profile = match path.parent().and_then(|d| d.file_name()).and_then(|n| n.to_str()) {
            Some("release") => " --release",
            _ => "",
        };
        bail!("{} does not exist: build the server first with `cargo build{profile} -p gpt2`, or pass --gpt2 PATH", path.display());
    }
    Ok(path)
}

/// The three verdicts side by side: which "faster" is which.
fn summary(comparisons: &[Comparison], label_a: &str, label_b: &str) -> String {
    let mut out = format!("\n{label_b} against {label_a} (B/A with its 95% interval):\n");
    for c in comparisons {
        let meaning = if c.better == Better::Higher { "throughput" } else { "latency" };
        out.push_str(&format!(
            "  {meaning:<11} {:<20} {:>7.3}  [{:.3}, {:.3}]  {}\n",
            c.metric,
            c.ratio,
            c.ci_low,
            c.ci_high,
            c.verdict.as_str()
        ));
    }
    out.push_str("\"Faster\" means one of these; answers.toml asks which one your answer is about.\n");
    out
}
