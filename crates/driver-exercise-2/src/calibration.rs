//! Finding each batch size's saturation, and the two rates the comparison runs at.

use crate::args::Args;
use crate::measure::fixed_load;
use crate::SCENARIOS;
use anyhow::{bail, Context, Result};
use bench::load::{self, Traffic};
use bench::metrics::Slo;
use bench::report::{Calibration, Run};
use bench::server::LocalServer;

/// The requests per second `batch` completes with twice its batch always in flight (closed
/// loop, so it never waits for arrivals): its saturation on this machine.
pub(crate) fn saturation(
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
    let config = fixed_load(args, server).config(
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
pub(crate) fn choose_rates(
    args: &Args,
    saturation_a: f64,
    saturation_b: f64,
) -> (Calibration, Vec<f64>) {
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
