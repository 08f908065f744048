//! The whole run: calibrate, ask the question at R and 2R, and hand what was measured to the
//! learner's `fill_in_answers`.

use crate::args::Args;
use crate::calibration::calibrate;
use crate::question::ask;
use crate::server::served_model;
use crate::FillInAnswers;
use anyhow::{bail, Context, Result};
use std::path::Path;

/// Exercise 7's program in the exercise's folder `dir`, ending with the learner's
/// `fill_in_answers`.
pub(crate) fn run(fill_in_answers: FillInAnswers, args: &Args, dir: &Path) -> Result<()> {
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
    let calibration = calibrate(args, &model, &runtime, &results)?;
    // 2. The question, at R and 2R.
    let p90 = ask(
        args,
        &model,
        &runtime,
        &results,
        &calibration.knee,
        calibration.target,
    )?;
    fill_in_answers(calibration.target, &calibration.knee, &p90, dir)
}
