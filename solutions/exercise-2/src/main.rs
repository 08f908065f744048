//! Exercise 2: Batch 8 versus 16. Is batch size 16 faster than batch size 8 for my traffic?
//!
//! A benchmarking question against a real server, asked where its answer changes. This program
//! starts the course's `serve` itself (the binary built beside it) at `--max-batch-size 8` and at 16,
//! first to **calibrate**: with twice as many requests in flight as it batches (closed loop), it
//! finds the rate each sustains on this machine, its saturation. Then it sends open-loop traffic
//! (Poisson arrivals, seeded prompts, `--max-tokens` tokens each) at two rates, to batch 8 and to
//! batch 16, one variable changed:
//!
//! - **below** batch 8's saturation (0.6 of it): the batch limit does not bind; both servers keep
//!   up, so both deliver what arrives, and the arrivals set the throughput;
//! - **above** both saturations (twice the larger): both fall behind and run full batches while a
//!   queue waits; batch 16 decodes more sequences a step, which changes throughput and trades the
//!   wait for a first token (TTFT) against the time per token (TPOT). (Just above batch 8's
//!   saturation batch 16 is near its own, where a short run's figures swing most.)
//!
//! Each rate and batch size is `--replicates` independent runs of `--requests` requests (fresh
//! arrivals each), so the 95% intervals see run-to-run change. Batch 16 is compared with batch 8
//! at each rate by your percentile and your verdict (src/stats.rs) on output tokens/s, P90 TTFT
//! and P90 TPOT. Everything goes to results/bench.json and results/latency.svg.
//!
//! Solution: src/stats.rs is written, and this run fills in answers.toml from its own results.

mod stats;

use anyhow::{bail, Context, Result};
use bench::compare::{arrivals_set_throughput, MetricChoice};
use bench::environment::{Environment, Target};
use bench::load::{self, Bound, LoadConfig, Prompt, Traffic};
use bench::metrics::Slo;
use bench::report::{Calibration, Report, Run};
use bench::server::LocalServer;
use bench::stats::{Better, Comparison};
use clap::Parser;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use course_model::exercise;
use std::time::Duration;

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
struct Args {
    /// The checkpoint `serve` loads: `synthetic` (GPT-2's shapes, random weights, real timings,
    /// no download), `gpt2`, a Hub id or folder of the Llama family (your own model, as in
    /// exercise 8), `synthetic-smollm2-135m`, or a GGUF file.
    #[arg(long, default_value = "synthetic")]
    model: String,
    /// The device `serve` runs on: cpu, cuda or auto.
    #[arg(long, default_value = "auto")]
    device: String,
    /// The baseline batch size (A).
    #[arg(long, default_value_t = 8)]
    batch_a: u16,
    /// The batch size compared with it (B).
    #[arg(long, default_value_t = 16)]
    batch_b: u16,
    /// The two open-loop rates, below and above saturation, in requests per second [default: 0.6
    /// times batch A's saturation, and twice the larger of the two saturations].
    #[arg(long, value_delimiter = ',', num_args = 2, value_names = ["BELOW", "ABOVE"])]
    rates: Option<Vec<f64>>,
    /// Requests of each calibration (closed loop, twice the batch in flight).
    #[arg(long, default_value_t = 40)]
    calibration_requests: usize,
    /// Requests in each replicate at each rate.
    #[arg(long, default_value_t = 32)]
    requests: usize,
    /// Independent replicates at each rate and batch size (fresh arrivals each). Five, not the
    /// bench's default three: a P90's interval needs about 70 independent-looking samples a side
    /// to close at 4 degrees of freedom, about 170 at 2.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    replicates: u16,
    /// Tokens generated per request (the server is asked to ignore end-of-text).
    #[arg(long, default_value_t = 16)]
    max_tokens: usize,
    /// Words per prompt (seeded, different for every request, the same at both batch sizes).
    #[arg(long, default_value_t = 16)]
    prompt_words: usize,
    /// The smallest relative change worth acting on (0.05: 5%).
    #[arg(long, visible_alias = "threshold", default_value_t = 0.05)]
    min_effect: f64,
    /// Seed of the arrivals and the prompts: both batch sizes get the same (replicate k: seed + k).
    #[arg(long, default_value_t = 2)]
    seed: u64,
    /// Seconds before a request is given up.
    #[arg(long, default_value_t = 180.0)]
    timeout: f64,
    /// The `serve` program to start [default: the one beside this program].
    #[arg(long, value_name = "PATH")]
    server: Option<PathBuf>,
    /// Hide the progress bars.
    #[arg(long)]
    no_progress: bool,
}

/// The three comparisons of batch 16 against batch 8 at each rate: the metric (as `course bench
/// --compare --metric` names it) and which direction is better.
const COMPARED: [(&str, Better); 3] = [
    ("output_tokens_per_s", Better::Higher),
    ("ttft_ms.p90", Better::Lower),
    ("tpot_ms.p90", Better::Lower),
];

/// The two scenarios' names in bench.json: below batch A's saturation (0.6 of it), and above
/// both (twice the larger).
const SCENARIOS: [&str; 2] = ["below", "above"];

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), run)
}

fn run(args: Args, dir: &Path) -> Result<()> {
    // Fail fast, before minutes of measuring, if src/stats.rs still has its TODOs.
    let _ = stats::percentile(&[1.0, 2.0], 50.0);
    let _ = stats::verdict(1.0, 1.0, 0.05, Better::Higher);
    if !(0.0..1.0).contains(&args.min_effect) {
        bail!(
            "--min-effect is a fraction in [0, 1), e.g. 0.05 for 5%; got {}",
            args.min_effect
        );
    }
    if let Some(rates) = &args.rates {
        if rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) || rates[0] >= rates[1] {
            bail!("--rates takes two positive rates, the lower first (e.g. --rates 1.5,4.5); got {rates:?}");
        }
    }
    let results = dir.join("results");
    let serve = server_program(args.server.as_deref())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;

    // Calibrate both (B's server then stays up for its runs), then A's runs.
    let server = start(&args, &serve, args.batch_a, &results)?;
    let saturation_a = saturation(&args, &server, args.batch_a, &runtime)?;
    server.stop();
    let server = start(&args, &serve, args.batch_b, &results)?;
    let saturation_b = saturation(&args, &server, args.batch_b, &runtime)?;
    let (calibration, rates) = choose_rates(&args, saturation_a, saturation_b);
    let runs_b = measure(&args, &server, args.batch_b, &rates, &runtime)?;
    server.stop();
    let server = start(&args, &serve, args.batch_a, &results)?;
    let runs_a = measure(&args, &server, args.batch_a, &rates, &runtime)?;
    server.stop();

    let mut comparisons = Vec::new();
    for (((scenario, rate), a), b) in SCENARIOS.iter().zip(&rates).zip(&runs_a).zip(&runs_b) {
        for (metric, better) in COMPARED {
            let choice = MetricChoice::parse(metric)?;
            let mut c = stats::compare(&choice.name(), &choice.samples(a), &choice.samples(b), choice.stat, better, args.min_effect)
                .with_context(|| format!("cannot compare {metric} at {rate} req/s: a run has too few samples of it, or batch {}'s is zero", args.batch_a))?;
            if metric == "output_tokens_per_s" && arrivals_set_throughput(a, b) {
                c = c.mark_set_by_arrivals();
            }
            c.scenario = Some(scenario.to_string());
            println!(
                "\n{scenario} saturation, {rate} req/s:\n{}",
                bench::report::comparison_text(&c, &a.label, &b.label)
            );
            comparisons.push(c);
        }
    }
    print!(
        "{}",
        summary(
            &comparisons,
            &rates,
            args.batch_a,
            args.batch_b,
            args.requests
        )
    );

    let target = Target {
        device: Some("server".into()),
        ..Target::default()
    };
    let mut report = Report::new(
        Environment::capture(target),
        runs_a.into_iter().chain(runs_b).collect(),
    );
    report.comparisons = comparisons;
    report.calibration = Some(calibration);
    let json = results.join("bench.json");
    report.write(&json)?;
    let svg = results.join("latency.svg");
    let above: Vec<&Run> = report
        .runs
        .iter()
        .filter(|r| r.label.ends_with("above"))
        .collect();
    bench::plot::write_latency_cdf(&svg, &above)?;
    println!(
        "wrote {} and {} (the latency picture is of the runs above saturation)",
        json.display(),
        svg.display()
    );
    fill_in_answers(&report, dir)
}

/// The answers to `[below]`, `[above]` and `[decision]`, read from the comparisons above (also
/// in `report`, as results/bench.json holds them).
fn fill_in_answers(report: &Report, dir: &Path) -> Result<()> {
    use answers_file::fill_answers as answers;
    // The answers, as read from the printed comparisons. The decision is about the rate above
    // batch 8's saturation, where the limit binds, and about what each request waits per token.
    let verdict_of = |scenario: &str, metric: &str| -> Result<&Comparison> {
        report
            .comparisons
            .iter()
            .find(|c| c.scenario.as_deref() == Some(scenario) && c.metric == metric)
            .with_context(|| format!("no {metric} comparison {scenario} saturation"))
    };
    let answer = |c: &Comparison| {
        if c.set_by_arrivals {
            "arrivals"
        } else {
            c.verdict.as_str()
        }
    };
    let mut filled = Vec::new();
    for scenario in SCENARIOS {
        for (key, metric) in [
            ("throughput", "output_tokens_per_s"),
            ("ttft_p90", "ttft_ms.p90"),
            ("tpot_p90", "tpot_ms.p90"),
        ] {
            filled.push((
                format!("{scenario}.{key}"),
                answer(verdict_of(scenario, metric)?).into(),
            ));
        }
    }
    filled.push((
        "above.throughput_ratio".into(),
        verdict_of("above", "output_tokens_per_s")?.ratio.into(),
    ));
    filled.push(("decision.meaning".into(), "tpot".into()));
    filled.push((
        "decision.answer".into(),
        answer(verdict_of("above", "tpot_ms.p90")?).into(),
    ));
    answers::fill(&dir.join("answers.toml"), &filled)?;
    println!("Next: `course check 2`.");
    Ok(())
}

/// Start `serve` at `batch`, its output logged beside the results.
fn start(args: &Args, program: &Path, batch: u16, results: &Path) -> Result<LocalServer> {
    let serve: Vec<String> = [
        "--model",
        &args.model,
        "--device",
        &args.device,
        "--port",
        "0",
        "--max-batch-size",
        &batch.to_string(),
    ]
    .map(String::from)
    .to_vec();
    let log = results.join(format!("serve-batch-{batch}.log"));
    println!(
        "\nbatch-{batch}: starting {} {} (its output: {})",
        program.display(),
        serve.join(" "),
        log.display()
    );
    LocalServer::start(program, &serve, Some(&log), Duration::from_secs(600))
}

/// The same load for every run; only the traffic (and the request count) changes.
fn load_config(args: &Args, server: &LocalServer, traffic: Traffic, requests: usize) -> LoadConfig {
    LoadConfig {
        base_url: server.base_url.clone(),
        // serve answers to the --model value unless told another name.
        model: args.model.clone(),
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

/// The requests per second `batch` completes with twice its batch always in flight (closed
/// loop, so it never waits for arrivals): its saturation on this machine.
fn saturation(
    args: &Args,
    server: &LocalServer,
    batch: u16,
    runtime: &tokio::runtime::Runtime,
) -> Result<f64> {
    let in_flight = 2 * usize::from(batch);
    println!(
        "calibration: {} requests with {in_flight} always in flight (closed loop)",
        args.calibration_requests
    );
    let config = load_config(
        args,
        server,
        Traffic::ClosedLoop {
            concurrency: in_flight,
        },
        args.calibration_requests,
    );
    let outcome = runtime
        .block_on(load::run(&config))
        .context("the calibration run failed")?;
    let run = Run::from_load(
        format!("batch-{batch} saturation"),
        &config,
        &Slo::default(),
        outcome,
    )?;
    if run.metrics.completed == 0 {
        bail!(
            "every calibration request failed; {}",
            run.requests
                .iter()
                .find_map(|r| r.error.clone())
                .unwrap_or_default()
        );
    }
    println!(
        "calibration: batch {batch} sustains about {:.2} req/s here",
        run.metrics.requests_per_s
    );
    Ok(run.metrics.requests_per_s)
}

/// The two rates: 0.6 of batch A's saturation, where the limit does not bind, and twice the larger
/// saturation, where both servers run full batches behind a queue (or `--rates`).
fn choose_rates(args: &Args, saturation_a: f64, saturation_b: f64) -> (Calibration, Vec<f64>) {
    let rates = match &args.rates {
        Some(rates) => rates.clone(),
        None => vec![
            load::round_rate(0.6 * saturation_a),
            load::round_rate(2.0 * saturation_a.max(saturation_b)),
        ],
    };
    println!(
        "rates: {} req/s (below batch {}'s saturation) and {} req/s (above both){}",
        rates[0],
        args.batch_a,
        rates[1],
        if args.rates.is_some() {
            ", from --rates"
        } else {
            ""
        }
    );
    let calibration = Calibration {
        measured: format!(
            "closed loop with twice the batch in flight, {} requests",
            args.calibration_requests
        ),
        saturation_rps: vec![
            (format!("batch-{}", args.batch_a), saturation_a),
            (format!("batch-{}", args.batch_b), saturation_b),
        ],
        rates: SCENARIOS
            .iter()
            .map(|name| name.to_string())
            .zip(rates.iter().copied())
            .collect(),
    };
    (calibration, rates)
}

/// Open-loop runs at each rate against one server, `--replicates` of `--requests` each.
fn measure(
    args: &Args,
    server: &LocalServer,
    batch: u16,
    rates: &[f64],
    runtime: &tokio::runtime::Runtime,
) -> Result<Vec<Run>> {
    let mut runs = Vec::new();
    for (scenario, &rate) in SCENARIOS.iter().zip(rates) {
        let label = format!("batch-{batch} {scenario}");
        println!(
            "{label}: {} × {} requests at {rate} req/s, open loop: about {:.0} s of arrivals",
            args.replicates,
            args.requests,
            f64::from(args.replicates) * args.requests as f64 / rate
        );
        let config = load_config(
            args,
            server,
            Traffic::OpenLoop {
                rate,
                seed: args.seed,
            },
            args.requests,
        );
        let outcome = runtime
            .block_on(load::run_replicates(&config, usize::from(args.replicates)))
            .with_context(|| format!("{label}: the load run failed"))?;
        let mut run = Run::from_load(label.clone(), &config, &Slo::default(), outcome)?;
        // The one variable this comparison changes, recorded beside the traffic that stayed fixed.
        run.config["server"] = serde_json::json!({ "program": "serve", "model": args.model, "device": args.device, "max_batch_size": batch });
        print!("{}", bench::report::table(&run));
        if run.metrics.completed == 0 {
            bail!("every request of {label} failed; the table above shows why");
        }
        runs.push(run);
    }
    Ok(runs)
}

/// The `serve` program: `--server`, or the one cargo built beside this program.
fn server_program(given: Option<&Path>) -> Result<PathBuf> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => bench::server::sibling_program("serve")?,
    };
    if !path.is_file() {
        // Cargo puts release builds in target/release and dev builds in target/debug.
        let profile = match path
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
        {
            Some("release") => " --release",
            _ => "",
        };
        bail!("{} does not exist: build the server first with `cargo build{profile} -p serve`, or pass --server PATH", path.display());
    }
    Ok(path)
}

/// The six verdicts side by side, and how many requests an inconclusive one above saturation
/// would need.
fn summary(
    comparisons: &[Comparison],
    rates: &[f64],
    batch_a: u16,
    batch_b: u16,
    requests: usize,
) -> String {
    let mut out =
        format!("\nbatch-{batch_b} against batch-{batch_a} (B/A with its 95% interval):\n");
    for (scenario, rate) in SCENARIOS.iter().zip(rates) {
        out.push_str(&format!("  {scenario} saturation ({rate} req/s)\n"));
        for c in comparisons
            .iter()
            .filter(|c| c.scenario.as_deref() == Some(*scenario))
        {
            let meaning = if c.better == Better::Higher {
                "throughput"
            } else {
                "latency"
            };
            let high = if c.ci_high.is_finite() {
                format!("{:.3}", c.ci_high)
            } else {
                "∞".into()
            };
            let verdict = if c.set_by_arrivals {
                "set by the arrivals"
            } else {
                c.verdict.as_str()
            };
            out.push_str(&format!(
                "    {meaning:<11} {:<20} {:>7.3}  [{:.3}, {high}]  {verdict}\n",
                c.metric, c.ratio, c.ci_low
            ));
        }
    }
    for c in comparisons
        .iter()
        .filter(|c| c.scenario.as_deref() == Some("above") && !c.set_by_arrivals)
    {
        if let Some(n) = requests_to_decide(c, requests) {
            out.push_str(&format!(
                "  above: {} would need about {n} requests a replicate to be decisive\n",
                c.metric
            ));
        }
    }
    out.push_str(
        "\"Faster\" means one of these; answers.toml asks which one your answer is about.\n",
    );
    out
}

/// For an inconclusive comparison whose ratio lies beyond the band: the requests per replicate at
/// which an interval of the same shape, narrowing as 1/√n, would clear the band. `None` when it is
/// decisive already, open, or its ratio lies inside the band (more requests would say `same` or
/// stay inconclusive).
fn requests_to_decide(c: &Comparison, requests: usize) -> Option<usize> {
    if c.verdict.is_a_difference() || !c.ci_high.is_finite() || c.ci_low <= 0.0 {
        return None;
    }
    let (r, edge) = (
        c.ratio.ln(),
        if c.ratio > 1.0 {
            (1.0 + c.min_effect).ln()
        } else {
            (1.0 - c.min_effect).ln()
        },
    );
    let half = (c.ci_high.ln() - c.ci_low.ln()) / 2.0;
    let room = (r - edge).abs();
    if (r - edge).signum() != r.signum() || room == 0.0 {
        return None;
    }
    Some((requests as f64 * (half / room).powi(2)).ceil() as usize)
}
