//! Step 1: a lone request's TTFT, the target from it, and the knee of a sweep of rates.

use crate::args::Args;
use crate::load::fixed_load;
use crate::results::{server_target, write};
use crate::server::START_SERVER;
use anyhow::{bail, Result};
use bench::environment::Environment;
use bench::load::{self, Traffic};
use bench::metrics::Slo;
use bench::report::{Report, Run};
use bench::sweep::{self, Sweep};
use course_model::traffic::{target_for, TARGET_PER_LONE_TTFT};
use std::path::Path;

/// What the calibration found: the P90 TTFT target (ms) and the sweep's knee.
pub(crate) struct Calibration {
    pub(crate) target: f64,
    pub(crate) knee: Sweep,
}

/// The service-level objective every run is read against: P90 TTFT at most `target` ms.
pub(crate) fn slo(target: f64) -> Slo {
    Slo {
        ttft_ms: Some(target),
        ..Slo::default()
    }
}

/// Times a lone request (results/lone/), sets the target from it (or `--target-ms`), and
/// sweeps the open-loop rate until the target breaks (results/sweep/).
pub(crate) fn calibrate(
    args: &Args,
    model: &str,
    runtime: &tokio::runtime::Runtime,
    results: &Path,
) -> Result<Calibration> {
    println!("calibration: 8 requests one at a time");
    let lone_config = fixed_load(args, model).config(Traffic::ClosedLoop { concurrency: 1 }, 8);
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
    let slo = slo(target);
    let bounds = sweep::Bound::from_slo(&slo, 90.0)?;
    println!("calibration: a sweep of {} requests per rate at {rates:?} req/s against P90 TTFT ≤ {target} ms", args.sweep_requests);
    let first = rates.first().copied().unwrap_or(1.0);
    let config = fixed_load(args, model).open_loop(first, args.sweep_requests);
    let (runs, knee) = sweep::run(runtime, &config, &rates, &bounds, &slo)
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
    Ok(Calibration { target, knee })
}
