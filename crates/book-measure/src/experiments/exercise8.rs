//! `exercise-8`: exercise 8's solution on the synthetic SmolLM2-135M (its real shapes, seeded
//! weights): the engine's profile of one forward, B=1 T=8, every row with its roofline.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use profiler::Report;

use super::{schedule, Ctx};
use crate::profile_figures::{self, record_machine};
use crate::sheet::Sheet;

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let dir = ctx.exercise_dir(8)?;
    let model = if ctx.quick {
        "synthetic-llama-tiny"
    } else {
        "synthetic-smollm2-135m"
    };
    let mut cmd = Command::new(ctx.program("solution-8"));
    cmd.args(["--model", model, "--device", "cpu"])
        .args(schedule(ctx))
        .arg("--exercise-dir")
        .arg(&dir);
    ctx.step("SmolLM2 profile", &mut cmd)?;
    let report = Report::read_json(dir.join("results/report.json")).map_err(anyhow::Error::msg)?;
    let sheet = figures(&report, ctx.recorded(&cmd));
    Ok(vec![ctx.write(
        &sheet,
        if ctx.quick {
            "the tiny synthetic Llama, B=1 T=8, f32, CPU"
        } else {
            "the synthetic SmolLM2-135M, B=1 T=8, f32, CPU"
        },
    )?])
}

/// The profile's figures at the top level ([`profile_figures::add`]) and `model`.
pub fn figures(report: &Report, command: String) -> Sheet {
    let mut sheet = Sheet::new("exercise-8", command);
    record_machine(&mut sheet, report);
    profile_figures::add(&mut sheet, "", report);
    if let Some(model) = &report.environment.model {
        sheet.text("model", model.clone());
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_llama_profile_s_rows_become_figures() {
        let report = crate::experiments::fixtures::profile("exercise-8");
        let s = figures(&report, "solution-8".into());
        let top = report.top(1)[0];
        assert_eq!(s.text_of("top.1.name"), Some(top.name.as_str()));
        assert_eq!(
            s.value(&format!("{}.share", top.name)),
            Some(top.self_cpu_pct)
        );
        assert!(
            s.get("rms_norm.share").is_some(),
            "a Llama has rms_norm rows"
        );
    }
}
