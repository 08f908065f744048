//! The reference answers of the top-ops exercises (3 and 8), worked out the way the grader
//! grades them: the prediction the reference makes before its profile runs, then the top three
//! rows of its own report and the plan the course's rule (`crate::plan_rule`) prefers, with the
//! thresholds `course check` grades by (the profiler's defaults, which the grader's default key
//! is pinned to).

use std::path::Path;

use anyhow::Result;

use crate::plan_rule::{self, Assessment, Mechanism};
use crate::results::profile_report::ProfileReport;
use answers_file::fill_answers as answers;

/// A prediction written down before the profile runs, unless one is recorded already: asked in
/// a terminal, as the exercise asks; without one, the reference guess (the matmuls hold most of
/// a transformer's weights).
pub fn predict(dir: &Path) -> Result<()> {
    let path = dir.join("answers.toml");
    let report = dir.join("results/report.json");
    use answers_file::prediction::{Value, TOP_OP};
    TOP_OP.before_the_profile(&path, &report)?;
    if TOP_OP.recorded(&path).is_some() {
        return Ok(());
    }
    let guess = [
        ("op", Value::Text("matmul".into())),
        ("share_pct", Value::Number(60.0)),
    ];
    answers::fill(
        &path,
        &TOP_OP.record(&guess, std::time::SystemTime::now(), report.exists()),
    )
}

/// The answers, read from the saved report with the grader's own reader and rule.
pub fn fill_answers(report_path: &Path, answers_path: &Path) -> Result<()> {
    let report = ProfileReport::read(report_path).map_err(anyhow::Error::msg)?;
    let mut answers: Vec<(String, answers::Answer)> = Vec::new();
    for (i, op) in report.top(3).iter().enumerate() {
        answers.push((format!("top_ops.{i}.name"), op.name.as_str().into()));
        answers.push((format!("top_ops.{i}.share_pct"), op.share_pct.into()));
    }
    let key = profiler::reading::Thresholds::DEFAULT;
    let Some((plan, cut)) = plan_rule::best_plan(&report, &key, 10.0) else {
        anyhow::bail!(
            "the course's rule accepts no plan on {}: profile with work counts and ceilings",
            report_path.display()
        );
    };
    println!(
        "(solution) the plan: {} by {} ({}); {}",
        plan.op.name,
        plan.mechanism.name(),
        plan.judgement.reason,
        plan.arithmetic
    );
    answers.push(("plan.attack".into(), plan.op.name.as_str().into()));
    answers.push(("plan.expected_cut_pct".into(), cut.into()));
    answers.push(("plan.mechanism".into(), plan.mechanism.name().into()));
    answers.push(("plan.why".into(), why(&plan, cut).into()));
    answers::fill(answers_path, &answers)
}

/// The solutions' `fill_in_answers` of exercise `exercise` (3 or 8): [`fill_answers`] into the
/// exercise folder `dir`'s answers.toml from its `report`, then the next step.
pub fn fill_in_answers(report: &Path, dir: &Path, exercise: u8) -> Result<()> {
    fill_answers(report, &dir.join("answers.toml"))?;
    println!("Next: `course check {exercise}`.");
    Ok(())
}

/// One sentence from the measured figures: the share, the rate, and what the fix changes.
fn why(plan: &Assessment, cut: f64) -> String {
    let op = &plan.op.name;
    let share = plan_rule::pct(plan.op.share_pct);
    let roofline = plan.op.roofline.as_ref();
    let memory = roofline
        .map(|r| plan_rule::pct(r.pct_of_memory_roofline))
        .unwrap_or_default();
    let of_roofline = roofline
        .map(|r| plan_rule::pct(r.pct_of_roofline))
        .unwrap_or_default();
    let cut = plan_rule::pct(cut);
    match plan.mechanism {
        Mechanism::MemoryTraffic => format!(
            "`{op}` takes {share} of the step and moves its bytes at {memory} of the measured read bandwidth, so its time is mostly \
             reading memory: halving the bytes it reads (bf16 weights) can cut about {cut}, within its share."
        ),
        Mechanism::SlowKernel => format!(
            "`{op}` takes {share} of the step but reaches only {of_roofline} of its roofline, so its kernel is slow for its work: a \
             vectorised kernel can cut up to {cut}."
        ),
        Mechanism::WastedWork => format!(
            "`{op}` takes {share} of the step doing work the step does not need; skipping it leaves its memory traffic ({memory} of the \
             read bandwidth), so it can cut about {cut}."
        ),
        Mechanism::LaunchOverhead => format!(
            "`{op}` takes {share} of the step in calls of a few microseconds each, mostly launch overhead: fewer, larger calls can cut \
             about {cut}."
        ),
    }
}
