//! `course bench` (and the standalone `bench` binary): the load client and `--compare`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::budget::{self, BudgetArgs};
use crate::compare::{compare_runs, MetricChoice};
use crate::environment::{Environment, Target};
use crate::load::{self, Bound, LoadConfig, Prompt, Traffic};
use crate::metrics::Slo;
use crate::plot;
use crate::report::{self, Report, Run};
use crate::scrape::{metrics_url, Scraper};
use crate::sweep;

/// Measure an OpenAI-compatible server under load, or compare two saved results.
///
/// Load run: sends streamed `POST {base-url}/v1/completions` requests, either as Poisson
/// arrivals at `--rate` requests/s (open loop: how real users arrive) or with `--concurrency`
/// requests always in flight (closed loop), until `--requests` have been sent or `--duration`
/// seconds have passed. Prints a results table with 95% intervals and writes
/// `<out>/bench.json` and `<out>/latency.svg`.
///
/// Works unchanged against `gpt2 serve`, vLLM, SGLang, TGI (its OpenAI endpoint) and
/// llama.cpp's server.
///
/// Examples:
///   course bench --base-url http://127.0.0.1:8000 --model gpt2 --rate 4 --requests 200 --out b8
///   course bench --compare b8/bench.json b16/bench.json --metric ttft_ms.p90
///   course bench --model gpt2 --sweep 0.5,1,2,4 --slo-ttft-ms 500 --requests 60 --out knee
///   course bench budget --report target/profile/report.json --svg budget.svg
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment, args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    pub command: Option<BenchCommand>,

    /// Compare two bench.json files instead of running: prints B/A with its 95% interval and a
    /// verdict (faster, slower, same, inconclusive).
    #[arg(long, num_args = 2, value_names = ["A_JSON", "B_JSON"], help_heading = "Compare")]
    pub compare: Option<Vec<PathBuf>>,
    /// Metric to compare: ttft_ms, tpot_ms, itl_ms or e2el_ms with .mean/.median/.p90/.p99,
    /// or output_tokens_per_s.
    #[arg(long, default_value = "ttft_ms.p90", help_heading = "Compare")]
    pub metric: String,
    /// The smallest relative change worth acting on (0.05 = 5%): faster or slower needs the
    /// whole 95% interval of B/A beyond 1 ± it, same needs it inside. A choice, not a
    /// measurement of noise.
    #[arg(
        long,
        visible_alias = "threshold",
        default_value_t = 0.05,
        help_heading = "Compare"
    )]
    pub min_effect: f64,

    /// Server root; `/v1/completions` is appended (or `/v1/chat/completions` with
    /// --endpoint chat). A URL that already ends in `/completions` is used as it is.
    #[arg(long, default_value = "http://127.0.0.1:8000")]
    pub base_url: String,
    /// Which OpenAI endpoint to drive: `completions` (the prompt as `prompt`) or `chat` (the
    /// prompt as one user message, `/v1/chat/completions`).
    #[arg(long, value_enum, default_value_t = EndpointArg::Completions)]
    pub endpoint: EndpointArg,
    /// Model name sent in every request (GET {base-url}/v1/models lists what a server serves).
    #[arg(long, default_value = "gpt2")]
    pub model: String,
    /// Open loop: Poisson arrivals at this many requests per second (seeded by --seed).
    #[arg(long, conflicts_with = "concurrency")]
    pub rate: Option<f64>,
    /// Closed loop: keep this many requests in flight.
    #[arg(long)]
    pub concurrency: Option<usize>,
    /// Stop after sending this many requests [default: 100 when --duration is not given].
    #[arg(long, conflicts_with = "duration")]
    pub requests: Option<usize>,
    /// Stop sending after this many seconds (requests in flight still finish).
    #[arg(long)]
    pub duration: Option<f64>,
    /// Tokens to generate per request.
    #[arg(long, default_value_t = 64)]
    pub max_tokens: usize,
    /// Send `ignore_eos: true` (vLLM, SGLang and gpt2 serve honour it) so every request
    /// produces exactly --max-tokens tokens.
    #[arg(long)]
    pub ignore_eos: bool,
    /// Use this prompt for every request instead of random words (servers with prefix caching
    /// will answer repeats faster).
    #[arg(long)]
    pub prompt: Option<String>,
    /// Length of the random prompts, in words (about one token each for GPT-2).
    #[arg(long, default_value_t = 32)]
    pub prompt_words: usize,
    /// Sampling temperature sent with each request.
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f64,
    /// Do not send `stream_options.include_usage` (for servers that reject it); tokens are then
    /// counted as streamed chunks.
    #[arg(long)]
    pub no_usage: bool,
    /// Seed for arrivals and prompts (replicate k uses seed + k).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Independent runs of the load, one after another, each with fresh arrivals (seed + k),
    /// each of --requests requests. The intervals are taken over them, so they see how much the
    /// next run would differ; with 1, an interval covers that run only (see crates/bench/README.md).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u16).range(1..))]
    pub replicates: u16,
    /// Untimed requests sent first; the first one also checks the URL and model.
    #[arg(long, default_value_t = 1)]
    pub warmup: usize,
    /// Per-request timeout in seconds.
    #[arg(long, default_value_t = 300.0)]
    pub timeout: f64,
    /// Read the server's `GET /metrics` (Prometheus text) every --scrape-interval seconds during
    /// the run and record its gauges in bench.json (requests running and waiting, KV cache in use,
    /// tokens processed, resident memory; our names or vLLM's, see crates/bench/README.md). A
    /// server without /metrics is recorded as such and the run goes on.
    #[arg(long, conflicts_with_all = ["sweep", "compare"], help_heading = "Server metrics")]
    pub scrape_metrics: bool,
    /// Seconds between two scrapes of /metrics.
    #[arg(long, default_value_t = 1.0, help_heading = "Server metrics")]
    pub scrape_interval: f64,
    /// Bearer token, for servers that want one.
    #[arg(long, env = "OPENAI_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,

    /// Sweep: one open-loop run per rate (comma-separated, increasing), stopping after the first
    /// rate where the target (the --slo-* bounds at --slo-percentile) fails; reports the knee,
    /// the highest rate at which the target holds, with a 95% interval (where the ends of the
    /// margins' intervals cross 1), and draws <out>/sweep.svg.
    #[arg(long, value_delimiter = ',', num_args = 1.., conflicts_with_all = ["rate", "concurrency", "compare"], help_heading = "Sweep")]
    pub sweep: Option<Vec<f64>>,
    /// Sweep: the percentile the --slo-* bounds apply to (90: P90 TTFT ≤ --slo-ttft-ms).
    #[arg(long, default_value_t = 90.0, help_heading = "Sweep")]
    pub slo_percentile: f64,

    /// Goodput SLO: a request is good only if its TTFT is at most this many ms.
    #[arg(long, help_heading = "SLO (goodput)")]
    pub slo_ttft_ms: Option<f64>,
    /// Goodput SLO on TPOT (ms).
    #[arg(long, help_heading = "SLO (goodput)")]
    pub slo_tpot_ms: Option<f64>,
    /// Goodput SLO on end-to-end latency (ms).
    #[arg(long, help_heading = "SLO (goodput)")]
    pub slo_e2el_ms: Option<f64>,

    /// Folder for bench.json and latency.svg [default: bench-results; with --compare, nothing
    /// is written unless given].
    #[arg(long, help_heading = "Output")]
    pub out: Option<PathBuf>,
    /// Name of this run in tables and plots [default: from the traffic shape].
    #[arg(long, help_heading = "Output")]
    pub label: Option<String>,
    /// The server's device, as you know it (recorded in the environment; the client cannot see it).
    #[arg(long, help_heading = "Output")]
    pub device: Option<String>,
    /// The server's dtype, as you know it.
    #[arg(long, help_heading = "Output")]
    pub dtype: Option<String>,
    /// Cargo features the server was built with, as you know them (comma-separated).
    #[arg(long, value_delimiter = ',', help_heading = "Output")]
    pub features: Vec<String>,
    /// Hide the progress bar.
    #[arg(long, help_heading = "Output")]
    pub no_progress: bool,
}

/// `--endpoint`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndpointArg {
    Completions,
    Chat,
}

/// What `course bench` does besides measuring a server.
#[derive(Subcommand, Debug, Clone)]
pub enum BenchCommand {
    // No doc comment here: BudgetArgs' own doc is the subcommand's help.
    Budget(BudgetArgs),
}

/// Run `course bench` with parsed arguments. Errors are for people: they say what to do next.
pub fn run(args: BenchArgs) -> Result<ExitCode> {
    if let Some(BenchCommand::Budget(budget_args)) = &args.command {
        return budget::run(budget_args);
    }
    match (&args.compare, &args.sweep) {
        (Some(paths), _) => run_compare(&args, paths),
        (None, Some(rates)) => run_sweep(&args, rates),
        (None, None) => run_load(&args),
    }
}

fn run_compare(args: &BenchArgs, paths: &[PathBuf]) -> Result<ExitCode> {
    let [a_path, b_path] = paths else {
        bail!("--compare takes exactly two files: --compare a/bench.json b/bench.json");
    };
    let choice = MetricChoice::parse(&args.metric)?;
    let a = Report::read(a_path)?;
    let b = Report::read(b_path)?;
    let (run_a, run_b) = (&a.runs[0], &b.runs[0]);
    let comparison = compare_runs(run_a, run_b, choice, args.min_effect)?;
    let label = |run: &Run, path: &PathBuf| format!("{} ({})", run.label, path.display());
    print!(
        "{}",
        report::comparison_text(&comparison, &label(run_a, a_path), &label(run_b, b_path))
    );
    if let Some(out) = &args.out {
        let mut combined = Report::new(
            Environment::capture(target(args)),
            vec![run_a.clone(), run_b.clone()],
        );
        combined.comparison = Some(comparison);
        let json = out.join("bench.json");
        combined.write(&json)?;
        plot::write_latency_cdf(&out.join("latency.svg"), &[run_a, run_b])?;
        println!(
            "wrote {} and {}",
            json.display(),
            out.join("latency.svg").display()
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn target(args: &BenchArgs) -> Target {
    Target {
        device: args.device.clone(),
        cargo_features: args.features.clone(),
        dtype: args.dtype.clone(),
    }
}

/// `--sweep`: one open-loop run per rate until the target fails, then the knee.
fn run_sweep(args: &BenchArgs, rates: &[f64]) -> Result<ExitCode> {
    let slo = Slo {
        ttft_ms: args.slo_ttft_ms,
        tpot_ms: args.slo_tpot_ms,
        e2el_ms: args.slo_e2el_ms,
    };
    let bounds = sweep::Bound::from_slo(&slo, args.slo_percentile)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    let Some(&lowest) = rates.first() else {
        bail!("--sweep needs at least one rate, e.g. --sweep 0.5,1,2,4")
    };
    let mut first = args.clone();
    first.rate = Some(lowest);
    let (runs, result) = sweep::run(&runtime, &load_config(&first)?, rates, &bounds, &slo)?;
    print!("{}", result.text());
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench-results"));
    let mut report = Report::new(
        Environment::capture(target(args)),
        runs.into_iter().map(|(_, run)| run).collect(),
    );
    report.sweep = Some(result);
    let json = out.join("bench.json");
    report.write(&json)?;
    let svg = out.join("sweep.svg");
    if let Some(s) = &report.sweep {
        s.write_svg(&svg)?;
    }
    println!("wrote {} and {}", json.display(), svg.display());
    Ok(ExitCode::SUCCESS)
}

/// Turn flags into a load configuration, refusing contradictory or missing choices.
pub fn load_config(args: &BenchArgs) -> Result<LoadConfig> {
    let traffic = match (args.rate, args.concurrency) {
        (Some(rate), _) => Traffic::OpenLoop {
            rate,
            seed: args.seed,
        },
        (None, Some(concurrency)) => Traffic::ClosedLoop { concurrency },
        (None, None) => bail!(
            "choose a traffic shape: --rate R (Poisson arrivals, R requests/s) or --concurrency C \
             (C requests always in flight)"
        ),
    };
    let bound = match (args.requests, args.duration) {
        (_, Some(d)) => Bound::DurationS(d),
        (Some(n), None) => Bound::Requests(n),
        (None, None) => Bound::Requests(100),
    };
    let prompt = match &args.prompt {
        Some(text) => Prompt::Fixed(text.clone()),
        None if args.prompt_words == 0 => bail!("--prompt-words must be at least 1"),
        None => Prompt::RandomWords {
            words: args.prompt_words,
            seed: args.seed,
        },
    };
    if !(args.timeout.is_finite() && args.timeout > 0.0) {
        bail!(
            "--timeout must be a positive number of seconds; got {}",
            args.timeout
        );
    }
    let base_url = match args.endpoint {
        EndpointArg::Completions => args.base_url.clone(),
        EndpointArg::Chat
            if args
                .base_url
                .trim_end_matches('/')
                .ends_with("/completions") =>
        {
            args.base_url.clone()
        }
        EndpointArg::Chat => {
            let base = args.base_url.trim_end_matches('/');
            format!(
                "{}/v1/chat/completions",
                base.strip_suffix("/v1").unwrap_or(base)
            )
        }
    };
    Ok(LoadConfig {
        base_url,
        model: args.model.clone(),
        traffic,
        bound,
        prompt,
        max_tokens: args.max_tokens,
        ignore_eos: args.ignore_eos,
        include_usage: !args.no_usage,
        temperature: args.temperature,
        warmup: args.warmup,
        timeout_s: args.timeout,
        api_key: args.api_key.clone(),
        progress: !args.no_progress,
    })
}

fn run_load(args: &BenchArgs) -> Result<ExitCode> {
    let config = load_config(args)?;
    let slo = Slo {
        ttft_ms: args.slo_ttft_ms,
        tpot_ms: args.slo_tpot_ms,
        e2el_ms: args.slo_e2el_ms,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    eprintln!(
        "benchmarking {} ({}), {}",
        config.completions_url(),
        config.model,
        match config.traffic {
            Traffic::OpenLoop { rate, .. } => format!("Poisson arrivals at {rate} req/s"),
            Traffic::ClosedLoop { concurrency } => format!("{concurrency} requests in flight"),
        }
    );
    let scrape = scrape_settings(args)?;
    let (outcome, server_metrics) = runtime.block_on(async {
        let scraper = scrape
            .clone()
            .map(|(url, interval)| Scraper::start(url, interval));
        let outcome = load::run_replicates(&config, usize::from(args.replicates)).await;
        let metrics = match scraper {
            Some(s) => Some(s.finish().await),
            None => None,
        };
        (outcome, metrics)
    });
    let outcome = outcome?;
    if let Some(m) = &server_metrics {
        eprintln!("{}", scrape_summary(m));
    }
    let mut run = Run::from_load(
        args.label.clone().unwrap_or_else(|| config.default_label()),
        &config,
        &slo,
        outcome,
    )?;
    run.server_metrics = server_metrics;
    print!("{}", report::table(&run));
    let failures: Vec<&str> = run
        .requests
        .iter()
        .filter_map(|r| r.error.as_deref())
        .take(3)
        .collect();
    if !failures.is_empty() {
        eprintln!("{} requests failed; first errors:", run.metrics.failed);
        for e in failures {
            eprintln!("  {e}");
        }
    }
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("bench-results"));
    let report = Report::new(Environment::capture(target(args)), vec![run]);
    let json = out.join("bench.json");
    report.write(&json)?;
    let svg = out.join("latency.svg");
    plot::write_latency_cdf(&svg, &[&report.runs[0]])?;
    println!("wrote {} and {}", json.display(), svg.display());
    Ok(if report.runs[0].metrics.completed == 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// `--scrape-metrics`: the URL and the interval, or None without the flag.
fn scrape_settings(args: &BenchArgs) -> Result<Option<(String, std::time::Duration)>> {
    if !args.scrape_metrics {
        return Ok(None);
    }
    if !(args.scrape_interval.is_finite() && args.scrape_interval >= 0.05) {
        bail!(
            "--scrape-interval must be at least 0.05 seconds; got {}",
            args.scrape_interval
        );
    }
    let url = metrics_url(&args.base_url).map_err(anyhow::Error::msg)?;
    Ok(Some((
        url,
        std::time::Duration::from_secs_f64(args.scrape_interval),
    )))
}

/// One line on what the scrape recorded, for the terminal.
fn scrape_summary(m: &formats::bench::ServerMetrics) -> String {
    use formats::bench::ScrapeStatus;
    match m.status {
        ScrapeStatus::Scraped => {
            let peak = |f: fn(&formats::bench::MetricsSample) -> Option<f64>| {
                m.samples
                    .iter()
                    .filter_map(f)
                    .fold(None, |a: Option<f64>, x| Some(a.map_or(x, |a| a.max(x))))
            };
            let show = |v: Option<f64>| v.map_or("n/a".to_string(), |v| format!("{v}"));
            format!(
                "scraped {} ({} samples): peak running {}, peak waiting {}, peak KV-cache use {}\n  {}",
                m.url,
                m.samples.len(),
                show(peak(|s| s.requests_running)),
                show(peak(|s| s.requests_waiting)),
                peak(|s| s.kv_cache_usage)
                    .map_or("n/a".to_string(), |u| format!("{:.1}%", 100.0 * u)),
                crate::filled::read(m).sentence(),
            )
        }
        ScrapeStatus::NotFound => format!(
            "{} answered 404: the server has no /metrics (recorded in bench.json; the run is unaffected)",
            m.url
        ),
        ScrapeStatus::Failed => format!(
            "could not scrape {}: {} (recorded in bench.json; the run is unaffected)",
            m.url,
            m.error.as_deref().unwrap_or("no answer")
        ),
    }
}
