//! One run of exercise 4, start to end.

use crate::{budget_lines, illustrative, own_profile, Args, Learner};
use anyhow::{bail, Result};
use course_model::illustrative_step::IllustrativeStep;
use profiler::Report;
use std::path::Path;

/// Your learner id: exercises/learner.toml next to this exercise's folder, else COURSE_LEARNER_ID.
fn learner_id(dir: &Path) -> Result<String> {
    let exercises = dir.join("..");
    match course_model::learner_id::current_learner_id(&exercises) {
        Ok(Some(id)) => Ok(id),
        Ok(None) => bail!("{}", course_model::learner_id::NO_LEARNER_ID),
        Err(e) => bail!("{e}"),
    }
}

/// The illustrative step, the own profile, its budget lines and the prediction's inputs, then
/// the learner's `fill_in_answers`.
pub(crate) fn run(learner: &Learner, args: Args, dir: &Path) -> Result<()> {
    if !(args.fraction > 0.0 && args.fraction <= 1.0) {
        bail!("--fraction is the part of the op your fix removes, above 0 and at most 1 (e.g. 0.67); got {}", args.fraction);
    }
    let id = learner_id(dir)?;
    let step = IllustrativeStep::for_learner(&id);
    illustrative::print(learner, &id, &step);

    let path = args
        .profile
        .clone()
        .unwrap_or_else(|| dir.join("../exercise-3/results/report.json"));
    if !path.is_file() {
        bail!("{} does not exist: do exercise 3 first (`course run 3` profiles a forward pass and writes it)", path.display());
    }
    let report = Report::read_json(&path)
        .map_err(|e| anyhow::anyhow!("{e}: run exercise 3 again (`course run 3`) to rewrite it"))?;
    own_profile::print_top_ops(learner, &report, &path, &args);
    budget_lines::write(&report, &dir.join("results/budget.json"))?;
    let inputs = course_model::fewer_bytes::prediction_inputs(&path, dir)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("\n{inputs}");
    if let Some(op) = &args.op {
        own_profile::print_attacked(learner, &report, &path, op, args.fraction)?;
    }
    (learner.fill_in_answers)(&step, &path, &args, dir)
}
