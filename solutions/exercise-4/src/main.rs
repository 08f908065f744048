//! Exercise 4: Read a profile as a budget.
//!
//! Applies your savings arithmetic (src/budget.rs) twice: to your own illustrative decode step
//! (explicitly not measured; drawn from your learner id in exercises/learner.toml, so a
//! classmate's step is not yours), and to your own profile from exercise 3
//! (exercise-3/results/report.json), ranked by the column its device is ranked by.
//!
//! Solution: src/budget.rs is written, and `fill_in_answers` fills in answers.toml: the figures
//! of the learner's own illustrative step; for the own profile the plan the course's rule
//! accepts with the largest cut (the same rule `course check` grades by), expecting 10% of the
//! step where it allows that; the ceiling rule on the budget lines; and the memory-traffic fix's
//! predicted cut, by the course's own arithmetic on the two rows' roofline columns
//! (`course_model::fewer_bytes`, the one `course check 4` grades by).

mod budget;

use anyhow::{bail, Context, Result};
use clap::Parser;
use profiler::{DeviceKind, Report};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use course_model::exercise;

// The one grouping of a profile's rows into its budget lines; and your illustrative step, drawn
// from your learner id by the course's own function (the draw `course check 4` grades you on).
use bench::budget::from_report;
use course_model::illustrative_step::{IllustrativeStep, ACTIVATIONS, LINES};

/// The step-time cut the exercise asks for, in %.
const TARGET_PCT: f64 = 10.0;

#[derive(Parser)]
#[command(
    about = "Exercise 4: apply your savings arithmetic to your illustrative step and to your exercise-3 profile",
    long_about = "Exercise 4: Read a profile as a budget.\n\n\
        Prints your own illustrative decode step as a budget (not measured; drawn from your learner id in \
        exercises/learner.toml, which `course run 4` asks for, or COURSE_LEARNER_ID) and what removing the part \
        of its activations line it names saves, computed with your functions in src/budget.rs. Then reads your own profile \
        (exercise-3/results/report.json, written by `course run 3`) and prints, for its top ops, the share, the \
        ceiling of any saving and the saving if your fix removed --fraction of the op; then groups it into the \
        chapter's budget lines (results/budget.json) with the most each line can save, and says whether any \
        single line can give a 10% cut.\n\n\
        Then fill in answers.toml and run `course check 4`."
)]
struct Args {
    /// The fraction of an op's time your fix would remove, 0 to 1.
    #[arg(long, default_value_t = 2.0 / 3.0)]
    fraction: f64,
    /// The op you would attack (its row name in your profile); shown in detail.
    #[arg(long)]
    op: Option<String>,
    /// Rows of your profile to show.
    #[arg(long, default_value_t = 8)]
    rows: usize,
    /// Your profile [default: exercise-3/results/report.json next to this exercise].
    #[arg(long, value_name = "FILE")]
    profile: Option<PathBuf>,
}

fn main() -> ExitCode {
    exercise::main(env!("CARGO_MANIFEST_DIR"), run)
}

fn bar(pct: f64) -> String {
    "█".repeat((pct / 2.0).round().max(0.0) as usize)
}

/// Your illustrative step, computed with your functions: what `[illustrative]` asks.
fn illustrative(learner: &str, step: &IllustrativeStep) {
    let step_ms = step.step_ms();
    println!("Your illustrative {step_ms} ms decode step (learner `{learner}`; not measured):");
    for (name, ms) in LINES.iter().zip(step.lines_ms) {
        let share = budget::share_pct(ms, step_ms);
        println!("  {name:<28} {ms:>5.1} ms {share:>6.2}%  {}", bar(share));
    }
    let line_ms = step.activations_ms();
    let saved = budget::saving_ms(line_ms, step.removed.value());
    println!(
        "Removing {} of \"{}\" saves {saved:.2} ms = {:.2}% of the step; the step becomes {:.2} ms.\n",
        step.removed.words(),
        LINES[ACTIVATIONS],
        budget::saving_pct(saved, step_ms),
        budget::new_step_ms(step_ms, saved)
    );
}

/// Your learner id: exercises/learner.toml next to this exercise's folder, else COURSE_LEARNER_ID.
fn learner_id(dir: &std::path::Path) -> Result<String> {
    let exercises = dir.join("..");
    match course_model::learner_id::current_learner_id(&exercises) {
        Ok(Some(id)) => Ok(id),
        Ok(None) => bail!("{}", course_model::learner_id::NO_LEARNER_ID),
        Err(e) => bail!("{e}"),
    }
}

/// The ceiling rule on the budget lines of your profile: a line saves at most its share. Writes
/// the lines (results/budget.json, which `course check 4` reads) and says plainly whether any
/// single line can give the cut asked for.
fn budget_lines(report: &Report, path: &std::path::Path) -> Result<()> {
    let budget = from_report(report, "your profile")?;
    println!("\nYour profile as a budget ({}):", budget.title);
    println!(
        "  {:<28} {:>8} {:>18}",
        "line", "share", "the most it saves"
    );
    for line in &budget.lines {
        println!(
            "  {:<28} {:>7.2}% {:>17.2}%",
            line.line.name(),
            line.share_pct,
            line.share_pct
        );
    }
    let largest = budget
        .lines
        .iter()
        .max_by(|a, b| a.share_pct.total_cmp(&b.share_pct));
    match largest {
        Some(l) if l.share_pct >= TARGET_PCT => {
            let able: Vec<&str> = budget.lines.iter().filter(|l| l.share_pct >= TARGET_PCT).map(|l| l.line.name()).collect();
            println!("A {TARGET_PCT}% cut can come from one line: {} (a fix must still remove that much of it).", able.join(", "));
        }
        Some(l) => println!(
            "No single line can give {TARGET_PCT}% of this step: the largest, \"{}\", has only {:.2}%. A {TARGET_PCT}% cut needs fixes on several lines.",
            l.line.name(),
            l.share_pct
        ),
        None => {}
    }
    let lines: Vec<serde_json::Value> = budget
        .lines
        .iter()
        .map(|l| serde_json::json!({"line": l.line.name(), "ms": l.ms, "share_pct": l.share_pct, "ops": l.ops}))
        .collect();
    let json = serde_json::json!({"schema": "budget-lines/1", "profile": "../exercise-3/results/report.json", "step_ms": budget.step_ms, "lines": lines});
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, serde_json::to_string_pretty(&json)? + "\n")
        .with_context(|| format!("cannot write {}", path.display()))?;
    println!("wrote {} (graded by `course check 4`)", path.display());
    Ok(())
}

/// The self-time share of a row in the column its device ranks by.
fn share_of(report: &Report, row: &profiler::ReportRow) -> f64 {
    match report.device {
        DeviceKind::Cuda => row.self_cuda_pct.unwrap_or(0.0),
        DeviceKind::Cpu => row.self_cpu_pct,
    }
}

fn run(args: Args, dir: &Path) -> Result<()> {
    if !(args.fraction > 0.0 && args.fraction <= 1.0) {
        bail!("--fraction is the part of the op your fix removes, above 0 and at most 1 (e.g. 0.67); got {}", args.fraction);
    }
    let learner = learner_id(dir)?;
    let step = IllustrativeStep::for_learner(&learner);
    illustrative(&learner, &step);

    let path = args
        .profile
        .clone()
        .unwrap_or_else(|| dir.join("../exercise-3/results/report.json"));
    if !path.is_file() {
        bail!("{} does not exist: do exercise 3 first (`course run 3` profiles a forward pass and writes it)", path.display());
    }
    let report = Report::read_json(&path)
        .map_err(|e| anyhow::anyhow!("{e}: run exercise 3 again (`course run 3`) to rewrite it"))?;
    let column = match report.device {
        DeviceKind::Cuda => "self CUDA",
        DeviceKind::Cpu => "self CPU",
    };
    println!(
        "Your profile ({}), ranked by {column} time:",
        path.display()
    );
    println!(
        "  {:<28} {:>8} {:>10} {:>22}",
        "op",
        "share",
        "ceiling",
        format!("saving at {:.0}% removed", args.fraction * 100.0)
    );
    for row in report.rows.iter().take(args.rows) {
        let share = share_of(&report, row);
        let saving = budget::step_saving_pct(share, args.fraction);
        println!(
            "  {:<28} {share:>7.2}% {share:>9.2}% {saving:>21.2}%",
            row.name
        );
    }
    budget_lines(&report, &dir.join("results/budget.json"))?;
    let inputs = course_model::fewer_bytes::prediction_inputs(&path, dir)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    print!("\n{inputs}");
    if let Some(op) = &args.op {
        let wanted = op.trim().to_lowercase();
        let Some(row) = report.rows.iter().find(|r| r.name.to_lowercase() == wanted) else {
            bail!(
                "`{op}` is not a row of {}: use a name from the table above",
                path.display()
            );
        };
        let share = share_of(&report, row);
        println!(
            "\nAttacking `{}` ({share:.2}% of {column} time): removing {:.0}% of it saves {:.2}% of the step.",
            row.name,
            args.fraction * 100.0,
            budget::step_saving_pct(share, args.fraction)
        );
    }
    fill_in_answers(&step, &path, &args, dir)
}

/// The answers to `[illustrative]`, `[own]`, `[lines]` and `[bytes]`.
fn fill_in_answers(step: &IllustrativeStep, profile: &Path, args: &Args, dir: &Path) -> Result<()> {
    use answers_file::fill_answers::{self, Answer};

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
        // [bytes]: the course's arithmetic on the two rows' roofline columns, and their sum.
        let mut total = 0.0;
        for ((_, field), predicted) in fewer_bytes::ROWS
            .iter()
            .zip(fewer_bytes::predictions(&report))
        {
            let h = predicted.map_err(|e| anyhow::anyhow!("{e}"))?;
            println!("(solution) {}", h.arithmetic);
            total += h.cut_pct;
            answers.push((field.to_string(), h.cut_pct.into()));
        }
        answers.push((fewer_bytes::TOTAL.into(), total.into()));
        Ok(answers)
    }

    fill_answers::fill(
        &dir.join("answers.toml"),
        &answers(step, profile, args.op.as_deref(), args.fraction)?,
    )?;
    println!("Next: `course check 4`.");
    Ok(())
}
