//! Step 2: the same load at R and at 2R, and each run's P90 TTFT with its 95% interval.

use crate::args::Args;
use crate::calibration::slo;
use crate::load::fixed_load;
use crate::rate::pick_rate;
use crate::results::write;
use crate::server::START_SERVER;
use crate::P90Ttft;
use anyhow::Result;
use bench::report::Run;
use bench::sweep::Sweep;
use course_model::traffic::RATE_RULE;
use std::path::Path;

/// Runs the load at R (by the rule, from the sweep's `knee`) and at 2R against the P90 TTFT
/// `target`, writes results/rate-1x/ and results/rate-2x/, and returns each run's P90 TTFT with
/// its 95% interval (`None` where a run has none).
pub(crate) fn ask(
    args: &Args,
    model: &str,
    runtime: &tokio::runtime::Runtime,
    results: &Path,
    knee: &Sweep,
    target: f64,
) -> Result<Vec<P90Ttft>> {
    let slo = slo(target);
    let rate = pick_rate(args, knee)?;
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
        let config = fixed_load(args, model).open_loop(rate, args.requests);
        let run = Run::measure(
            runtime,
            format!("{label} ({rate} req/s)"),
            &config,
            usize::from(args.replicates),
            &slo,
            |_| {},
        )
        .map_err(|e| anyhow::anyhow!("{e:#}\n{START_SERVER}"))?;
        p90.push(
            run.metrics
                .ttft_ms
                .as_ref()
                .and_then(|s| Some((s.p90, s.ci95_p90.clone()?))),
        );
        write(&results.join(label), run)?;
    }
    let show = |v: &P90Ttft| {
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
    Ok(p90)
}
