//! Each run's results folder: bench.json and latency.svg.

use anyhow::Result;
use bench::environment::{Environment, Target};
use bench::report::{Report, Run};
use std::path::Path;

/// The target every report names: a server, measured from outside.
pub(crate) fn server_target() -> Target {
    Target {
        device: Some("server".into()),
        ..Target::default()
    }
}

/// Writes `run` as `dir`/bench.json and its latency picture as `dir`/latency.svg.
pub(crate) fn write(dir: &Path, run: Run) -> Result<()> {
    let report = Report::new(Environment::capture(server_target()), vec![run]);
    report.write(&dir.join("bench.json"))?;
    bench::plot::write_latency_cdf(&dir.join("latency.svg"), &[&report.runs[0]])?;
    println!("wrote {}", dir.join("bench.json").display());
    Ok(())
}
