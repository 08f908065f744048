//! The whole run: calibrate, measure at both batch sizes, compare, write the results, and hand
//! them to the learner's `fill_in_answers`.

use crate::args::Args;
use crate::calibration::{choose_rates, saturation};
use crate::measure::measure;
use crate::server::{server_program, start};
use crate::summary::summary;
use crate::{Learner, SCENARIOS};
use anyhow::{bail, Context, Result};
use bench::compare::{arrivals_set_throughput, MetricChoice};
use bench::environment::{Environment, Target};
use bench::report::{Report, Run};
use bench::stats::Better;
use std::path::Path;

/// The three comparisons of batch 16 against batch 8 at each rate: the metric (as `course bench
/// --compare --metric` names it) and which direction is better.
const COMPARED: [(&str, Better); 3] = [
    ("output_tokens_per_s", Better::Higher),
    ("ttft_ms.p90", Better::Lower),
    ("tpot_ms.p90", Better::Lower),
];

/// Exercise 2's program, with the learner's functions, in the exercise's folder `dir`.
pub(crate) fn run(learner: &Learner, args: &Args, dir: &Path) -> Result<()> {
    // Fail fast, before minutes of measuring, if src/stats.rs still has its TODOs.
    let _ = (learner.percentile)(&[1.0, 2.0], 50.0);
    let _ = (learner.verdict)(1.0, 1.0, 0.05, Better::Higher);
    let statistics = learner.statistics();
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
    let server = start(args, &serve, args.batch_a, &results)?;
    let saturation_a = saturation(args, &server, args.batch_a, &runtime)?;
    server.stop();
    let server = start(args, &serve, args.batch_b, &results)?;
    let saturation_b = saturation(args, &server, args.batch_b, &runtime)?;
    let (calibration, rates) = choose_rates(args, saturation_a, saturation_b);
    let runs_b = measure(args, &server, args.batch_b, &rates, &runtime)?;
    server.stop();
    let server = start(args, &serve, args.batch_a, &results)?;
    let runs_a = measure(args, &server, args.batch_a, &rates, &runtime)?;
    server.stop();

    let mut comparisons = Vec::new();
    for (((scenario, rate), a), b) in SCENARIOS.iter().zip(&rates).zip(&runs_a).zip(&runs_b) {
        for (metric, better) in COMPARED {
            let choice = MetricChoice::parse(metric)?;
            let mut c = statistics.compare(&choice.name(), &choice.samples(a), &choice.samples(b), choice.stat, better, args.min_effect)
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
    (learner.fill_in_answers)(&report, dir)
}
