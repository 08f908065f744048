//! Exercise 4: Read a profile as a budget.
//!
//! Applies your savings arithmetic (src/budget.rs) twice: to your own illustrative decode step
//! (explicitly not measured; drawn from your learner id in exercises/learner.toml, so a
//! classmate's step is not yours), and to your own profile from exercise 3
//! (exercise-3/results/report.json), ranked by the column its device is ranked by. The program
//! around your code (the tables, results/budget.json) is crates/driver-exercise-4; it calls the
//! functions this file passes it.
//!
//! Solution: src/budget.rs is written, and `fill_in_answers` fills in answers.toml: the figures
//! of the learner's own illustrative step; for the own profile the plan the course's rule
//! accepts with the largest cut (the same rule `course check` grades by), expecting 10% of the
//! step where it allows that; the ceiling rule on the budget lines; and the memory-traffic fix's
//! predicted cuts in bf16 and in q8_0, by the course's own arithmetic on the two rows' roofline
//! columns (`course_model::fewer_bytes`, the one `course check 4` grades by).

mod budget;

use anyhow::Result;
use driver_exercise_4::{Args, IllustrativeStep};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    // Your five functions in src/budget.rs, and fill_in_answers below.
    let learner = driver_exercise_4::learner!(budget, fill_in_answers);
    driver_exercise_4::main(env!("CARGO_MANIFEST_DIR"), learner)
}

/// The answers to `[illustrative]`, `[own]`, `[lines]`, `[bytes]` and `[quantized]`.
fn fill_in_answers(step: &IllustrativeStep, profile: &Path, args: &Args, dir: &Path) -> Result<()> {
    use answers_file::fill_answers::{self, Answer};
    use anyhow::bail;
    use driver_exercise_4::{from_report, TARGET_PCT};
    use profiler::Report;

    /// The answers: the illustrative figures of the learner's own step from the functions; for
    /// the own profile the plan the course's own rule (`course_model::plan_rule`, as `course
    /// check 3` and `4` grade) accepts with the largest possible cut, or the op given with --op;
    /// and the budget lines just written.
    fn answers(
        step: &IllustrativeStep,
        profile_path: &std::path::Path,
        op: Option<&str>,
        fraction: f64,
    ) -> Result<Vec<(String, Answer)>> {
        use course_model::fewer_bytes;
        use course_model::plan_rule;
        use course_model::results::profile_report::ProfileReport;
        let step_ms = step.step_ms();
        let line_ms = step.activations_ms();
        let saved = budget::saving_ms(line_ms, step.removed.value());
        let report = ProfileReport::read(profile_path).map_err(anyhow::Error::msg)?;
        let (row, fraction) = match op {
            Some(name) => {
                let Some((_, row)) = report.find(name) else {
                    bail!("`{name}` is not a row of {}", profile_path.display())
                };
                (row.clone(), fraction)
            }
            None => {
                // The thresholds `course check` grades by: the grader pins its default key to them.
                let key = profiler::reading::Thresholds::DEFAULT;
                let Some((plan, cut)) = plan_rule::best_plan(&report, &key, TARGET_PCT) else {
                    bail!(
                        "the course's rule accepts no plan on {}",
                        profile_path.display()
                    );
                };
                println!(
                    "(solution) {} by {}: {}",
                    plan.op.name,
                    plan.mechanism.name(),
                    plan.arithmetic
                );
                let fraction = cut / plan.op.share_pct;
                (plan.op, fraction)
            }
        };
        let share = row.share_pct;
        // The lines as written to results/budget.json: the largest is the most any line can save.
        let budget = from_report(
            &Report::read_json(profile_path).map_err(|e| anyhow::anyhow!("{e}"))?,
            "your profile",
        )?;
        let Some(largest) = budget
            .lines
            .iter()
            .max_by(|a, b| a.share_pct.total_cmp(&b.share_pct))
        else {
            bail!("the profile has no budget lines");
        };
        let mut answers: Vec<(String, Answer)> = vec![
            (
                "illustrative.activations_share_pct".into(),
                budget::share_pct(line_ms, step_ms).into(),
            ),
            ("illustrative.saving_ms".into(), saved.into()),
            (
                "illustrative.saving_pct".into(),
                budget::saving_pct(saved, step_ms).into(),
            ),
            (
                "illustrative.new_step_ms".into(),
                budget::new_step_ms(step_ms, saved).into(),
            ),
            ("own.op".into(), row.name.as_str().into()),
            ("own.op_share_pct".into(), share.into()),
            ("own.removed_fraction".into(), fraction.into()),
            (
                "own.saving_pct".into(),
                budget::step_saving_pct(share, fraction).into(),
            ),
            ("lines.largest".into(), largest.line.name().into()),
            ("lines.largest_ceiling_pct".into(), largest.share_pct.into()),
            (
                "lines.one_line_gives_target".into(),
                (if largest.share_pct >= TARGET_PCT {
                    "yes"
                } else {
                    "no"
                })
                .into(),
            ),
        ];
        // [bytes] and [quantized]: the course's arithmetic on the two rows' roofline columns at
        // each rung, their sums, and q8_0's stored width.
        for rung in fewer_bytes::RUNGS {
            for predicted in fewer_bytes::predictions(&report, &rung) {
                let cut = predicted.map_err(anyhow::Error::msg)?;
                println!("(solution) {}: {}", rung.dtype, cut.arithmetic);
            }
        }
        for (field, value) in fewer_bytes::answers(&report).map_err(anyhow::Error::msg)? {
            answers.push((field, value.into()));
        }
        Ok(answers)
    }

    fill_answers::fill(
        &dir.join("answers.toml"),
        &answers(step, profile, args.op.as_deref(), args.fraction)?,
    )?;
    println!("Next: `course check 4`.");
    Ok(())
}
