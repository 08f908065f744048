//! `exercise-3`: exercise 3's own program, as a learner runs it (the profile of one GPT-2 small
//! forward, B=1 T=8, the stock MLP), its printed table kept for the book, its report's figures,
//! its flame graph, and the budget chart `course bench budget` draws from the same report.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};
use profiler::{Line, Report};

use super::{gpt2_model, model_said, schedule, Ctx};
use crate::profile_figures::{self, record_machine};
use crate::sheet::Sheet;

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let dir = ctx.exercise_dir(3)?;
    let mut cmd = Command::new(ctx.program("exercise-3"));
    cmd.args(["--model", gpt2_model(ctx), "--device", "cpu"])
        .args(schedule(ctx))
        .arg("--exercise-dir")
        .arg(&dir);
    let stdout = ctx.step("exercise 3 table", &mut cmd)?;
    let table = as_a_learner_sees_it(&stdout, &dir);
    if !table.contains("Roofline %") {
        bail!("exercise 3 printed no roofline columns (the ceilings were not measured?); its output:\n{table}");
    }
    let results = dir.join("results");
    let report_path = results.join("report.json");
    let report = Report::read_json(&report_path).map_err(anyhow::Error::msg)?;
    let mut written = vec![
        ctx.image_text("exercise-3-table.txt", &table)?,
        ctx.picture(
            &results.join("flamegraph.svg"),
            "flamegraph-gpt2-forward.svg",
        )?,
    ];
    let budget_svg = ctx.images_dir.join("budget.svg");
    let label = if ctx.quick {
        "tiny GPT-2 forward (B=1, T=8, CPU)"
    } else {
        "GPT-2 small forward (B=1, T=8, CPU)"
    };
    let mut budget = Command::new(ctx.program("course"));
    budget
        .args(["bench", "budget", "--report"])
        .arg(&report_path)
        .args(["--label", label, "--svg"])
        .arg(&budget_svg);
    ctx.step("budget chart", &mut budget)?;
    written.push(ctx.picture(&budget_svg, "budget.svg")?);
    let sheet = figures(&report, ctx.recorded(&cmd))?;
    written.insert(
        0,
        ctx.write(
            &sheet,
            &format!(
                "exercise 3 as a learner runs it: {}, B=1 T=8, stock MLP, CPU",
                model_said(ctx)
            ),
        )?,
    );
    Ok(written)
}

/// The program's standard output with the scratch folder shown as a learner's checkout has it.
pub fn as_a_learner_sees_it(stdout: &str, dir: &Path) -> String {
    let mut text = stdout.to_string();
    let mut forms = vec![dir.display().to_string()];
    if let Ok(canonical) = dir.canonicalize() {
        forms.push(canonical.display().to_string());
    }
    for form in forms {
        text = text.replace(&form, "exercises/exercise-3");
    }
    text
}

/// The profile's figures ([`profile_figures::add`] at the top level) and the budget lines (`budget.LINE.share`, `budget.LINE.ms`; LINE is
/// `matmuls`, `attention`, `activations` or `other`).
pub fn figures(report: &Report, command: String) -> Result<Sheet> {
    let mut sheet = Sheet::new("exercise-3", command);
    record_machine(&mut sheet, report);
    profile_figures::add(&mut sheet, "", report);
    add_budget(&mut sheet, "budget", report)?;
    Ok(sheet)
}

/// A report's budget lines, grouped by bench's own function (what the budget chart draws).
pub fn add_budget(sheet: &mut Sheet, prefix: &str, report: &Report) -> Result<()> {
    let budget = bench::budget::from_report(report, "profile")?;
    sheet.num(format!("{prefix}.step_ms"), budget.step_ms, "ms", 1);
    for line in &budget.lines {
        let name = match line.line {
            Line::Matmuls => "matmuls",
            Line::Attention => "attention",
            Line::Activations => "activations",
            Line::Other => "other",
        };
        sheet.num(format!("{prefix}.{name}.share"), line.share_pct, "%", 1);
        sheet.num(format!("{prefix}.{name}.ms"), line.ms, "ms", 2);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_of_the_profile_becomes_figures() {
        let report = crate::experiments::fixtures::profile_tiny();
        let s = figures(&report, "exercise-3".into()).unwrap();
        let gelu = report.rows.iter().find(|r| r.name == "gelu").unwrap();
        assert_eq!(s.value("gelu.share"), Some(gelu.self_cpu_pct));
        assert_eq!(
            s.value("gelu.ms"),
            Some(gelu.self_cpu_us / report.active_steps as f64 / 1000.0)
        );
        let roof = gelu.roofline.as_ref().unwrap();
        assert_eq!(s.value("gelu.roofline_pct"), Some(roof.pct_of_roofline));
        assert_eq!(s.value("gelu.gb_s"), Some(roof.gbytes_per_s));
        assert_eq!(
            s.text_of("gelu.reading"),
            gelu.reading.map(|r| r.to_string()).as_deref()
        );
        // The step row is not an op.
        assert!(s.get("profilerstep.share").is_none());
        assert_eq!(
            s.text_of("top.1.name"),
            Some(report.top(1)[0].name.as_str())
        );
        // The budget lines add up to the step.
        let lines: f64 = ["matmuls", "attention", "activations", "other"]
            .iter()
            .filter_map(|l| s.value(&format!("budget.{l}.share")))
            .sum();
        assert!((lines - 100.0).abs() < 0.5, "{lines}");
        // The ranks follow the shares.
        let first = report.top(1)[0];
        assert_eq!(s.value(&format!("{}.rank", first.name)), Some(1.0));
    }

    #[test]
    fn the_table_shows_the_learner_s_paths() {
        let dir = Path::new("/tmp/book-measure.abc/exercise-3");
        let out = "wrote /tmp/book-measure.abc/exercise-3/results/report.json\n";
        assert_eq!(
            as_a_learner_sees_it(out, dir),
            "wrote exercises/exercise-3/results/report.json\n"
        );
    }
}
