//! `exercise-4`: the ladder of fewer bytes. Three profiles of the same forward (the stock MLP,
//! B=1 T=8), the weights in f32, then in bf16, then in q8_0 (the matrices quantized at load),
//! back to back; the cut each later run measured; and the cut exercise 4's arithmetic predicts
//! for each from the f32 profile's columns, as exercise 4's solution computes it (the `[bytes]`
//! and `[quantized]` answers it fills in).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use profiler::Report;

use super::{gpt2_model, model_said, schedule, Ctx};
use crate::profile_figures::{self, record_machine, row, share};
use crate::sheet::Sheet;

/// The two rows whose weights change type (exercise 4's `[bytes]`).
const ROWS: [&str; 2] = ["matmul", "lm_head"];

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let mut commands = Vec::new();
    let mut reports = Vec::new();
    for dtype in ["f32", "bf16", "q8_0"] {
        let out = ctx.scratch(dtype)?;
        let mut cmd = Command::new(ctx.program("gpt2"));
        cmd.args([
            "profile",
            "--model",
            gpt2_model(ctx),
            "--device",
            "cpu",
            "--mlp",
            "stock",
        ])
        .args(["--batch", "1", "--seq", "8"])
        .args(schedule(ctx))
        .args(["--dtype", dtype, "--out"])
        .arg(&out);
        // The bf16 peak is its own measurement (another dtype, another kernel): measured again
        // in a full run, as the f32 one was by `ceilings`. The q8_0 model's dense type is f32,
        // so its ceilings are the f32 run's.
        if dtype == "bf16" && !ctx.quick {
            cmd.arg("--remeasure-ceilings");
        }
        ctx.step(&format!("{dtype} profile"), &mut cmd)?;
        commands.push(ctx.recorded(&cmd));
        reports.push(Report::read_json(out.join("report.json")).map_err(anyhow::Error::msg)?);
    }
    let dir = ctx.exercise_dir(4)?;
    let f32_report = ctx.work_path.join("f32/report.json");
    let mut solution = Command::new(ctx.program("solution-4"));
    solution
        .arg("--profile")
        .arg(&f32_report)
        .arg("--exercise-dir")
        .arg(&dir)
        .env("COURSE_LEARNER_ID", "book-measure");
    ctx.step("predicted cut", &mut solution)?;
    let answers = dir.join("answers.toml");
    let predicted = [
        Predicted::read(&answers, "bytes")?,
        Predicted::read(&answers, "quantized")?,
    ];
    let sheet = figures(
        [&reports[0], &reports[1], &reports[2]],
        &predicted,
        format!("{}; {}", commands.join("; "), ctx.recorded(&solution)),
    );
    Ok(vec![ctx.write(
        &sheet,
        &format!(
            "{}, B=1 T=8, stock MLP, CPU, f32 then bf16 then q8_0 weights",
            model_said(ctx)
        ),
    )?])
}

/// One rung's answers (`[bytes]` for bf16, `[quantized]` for q8_0) as exercise 4's solution
/// filled them in: the predicted cut of each row and their sum, in % of the f32 step.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    pub matmul_cut_pct: f64,
    pub lm_head_cut_pct: f64,
    pub predicted_cut_pct: f64,
}

impl Predicted {
    pub fn read(path: &Path, section: &str) -> Result<Predicted> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Predicted::parse(&text, section).with_context(|| {
            format!(
                "{}: exercise 4's solution left no [{section}] figures",
                path.display()
            )
        })
    }

    pub fn parse(text: &str, section: &str) -> Result<Predicted> {
        let doc: toml::Table = toml::from_str(text)?;
        let table = doc
            .get(section)
            .and_then(|b| b.as_table())
            .with_context(|| format!("no [{section}] table"))?;
        let get = |k: &str| -> Result<f64> {
            table
                .get(k)
                .and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
                .with_context(|| format!("no number `{k}` in [{section}]"))
        };
        Ok(Predicted {
            matmul_cut_pct: get("matmul_cut_pct")?,
            lm_head_cut_pct: get("lm_head_cut_pct")?,
            predicted_cut_pct: get("predicted_cut_pct")?,
        })
    }
}

/// The three profiles under `f32.`, `bf16.` and `q8_0.` ([`profile_figures::add`]); for bf16,
/// `measured_cut_pct` (the step's measured cut, %), `speedup` (f32 step / bf16 step);
/// `predicted.matmul_cut_pct`, `predicted.lm_head_cut_pct`, `predicted_cut_pct` (their sum); for
/// q8_0 the same under `q8_0.` (`q8_0.measured_cut_pct`, `q8_0.predicted_cut_pct`, ...);
/// `half_shares_pct` (half of the two rows' f32 shares: the answer that assumes the roof rises
/// without limit); `bf16.peak_gflop_s`, `q8_0.peak_gflop_s` and `f32.peak_gflop_s` (each run's
/// compute ceiling), `f32.ridge_flop_per_byte`; `bf16.kernel` (the matmul row's kernel in bf16).
pub fn figures(reports: [&Report; 3], predicted: &[Predicted; 2], command: String) -> Sheet {
    let [f32r, bf16r, q8r] = reports;
    let mut sheet = Sheet::new("exercise-4", command);
    record_machine(&mut sheet, f32r);
    profile_figures::add(&mut sheet, "f32", f32r);
    profile_figures::add(&mut sheet, "bf16", bf16r);
    profile_figures::add(&mut sheet, "q8_0", q8r);
    let a = profile_figures::step_ms(f32r);
    for ((prefix, report), p) in [("", bf16r), ("q8_0.", q8r)].into_iter().zip(predicted) {
        let b = profile_figures::step_ms(report);
        sheet.num(
            format!("{prefix}measured_cut_pct"),
            (1.0 - b / a) * 100.0,
            "%",
            1,
        );
        sheet.num(format!("{prefix}speedup"), a / b, "×", 2);
        sheet.num(
            format!("{prefix}predicted.matmul_cut_pct"),
            p.matmul_cut_pct,
            "%",
            1,
        );
        sheet.num(
            format!("{prefix}predicted.lm_head_cut_pct"),
            p.lm_head_cut_pct,
            "%",
            1,
        );
        sheet.num(
            format!("{prefix}predicted_cut_pct"),
            p.predicted_cut_pct,
            "%",
            1,
        );
    }
    let half: f64 = ROWS
        .iter()
        .filter_map(|name| row(f32r, name).map(|r| share(f32r, r) / 2.0))
        .sum();
    sheet.num("half_shares_pct", half, "%", 1);
    for (prefix, report) in [("f32", f32r), ("bf16", bf16r), ("q8_0", q8r)] {
        if let Some(c) = &report.ceilings {
            sheet.num(
                format!("{prefix}.peak_gflop_s"),
                c.peak_gflops,
                "GFLOP/s",
                0,
            );
            sheet.num(format!("{prefix}.memory_gb_s"), c.mem_read_gbps, "GB/s", 1);
            sheet.num(
                format!("{prefix}.ridge_flop_per_byte"),
                c.ridge_intensity(),
                "FLOP/B",
                1,
            );
        }
    }
    if let Some(k) = row(bf16r, "matmul").and_then(|r| r.kernel.clone()) {
        sheet.text("bf16.kernel", k);
    }
    sheet
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_predicted_cut_is_read_from_the_solution_s_answers() {
        let text = "[own]\nop = \"matmul\"\n[bytes]\nmatmul_cut_pct = 30.8219\nlm_head_cut_pct = 9.98\npredicted_cut_pct = 40.8\n";
        let p = Predicted::parse(text, "bytes").unwrap();
        assert_eq!(p.matmul_cut_pct, 30.8219);
        assert_eq!(p.predicted_cut_pct, 40.8);
        assert!(Predicted::parse("[bytes]\nmatmul_cut_pct = 1.0\n", "bytes").is_err());
        // The q8_0 rung's figures are their own section's.
        let both = format!("{text}[quantized]\nbits_per_weight = 8.5\nmatmul_cut_pct = 44.0\nlm_head_cut_pct = 14.0\npredicted_cut_pct = 58.0\n");
        let q = Predicted::parse(&both, "quantized").unwrap();
        assert_eq!((q.matmul_cut_pct, q.predicted_cut_pct), (44.0, 58.0));
        assert!(Predicted::parse(text, "quantized").is_err());
    }

    #[test]
    fn the_measured_cut_is_the_step_s_and_the_pair_is_kept_apart() {
        let f32r = crate::experiments::fixtures::profile_tiny();
        let mut bf16r = f32r.clone();
        // Half the wall time: a 50% cut, a 2× speed-up.
        bf16r.totals.wall_us /= 2.0;
        let mut q8r = f32r.clone();
        // A quarter of the wall time: a 75% cut, a 4× speed-up.
        q8r.totals.wall_us /= 4.0;
        let p = Predicted {
            matmul_cut_pct: 20.0,
            lm_head_cut_pct: 5.0,
            predicted_cut_pct: 25.0,
        };
        let q = Predicted {
            matmul_cut_pct: 30.0,
            lm_head_cut_pct: 8.0,
            predicted_cut_pct: 38.0,
        };
        let s = figures([&f32r, &bf16r, &q8r], &[p, q], "x".into());
        assert!((s.value("measured_cut_pct").unwrap() - 50.0).abs() < 1e-9);
        assert!((s.value("speedup").unwrap() - 2.0).abs() < 1e-9);
        assert_eq!(s.value("predicted_cut_pct"), Some(25.0));
        assert!((s.value("q8_0.measured_cut_pct").unwrap() - 75.0).abs() < 1e-9);
        assert!((s.value("q8_0.speedup").unwrap() - 4.0).abs() < 1e-9);
        assert_eq!(s.value("q8_0.predicted_cut_pct"), Some(38.0));
        assert_eq!(s.value("q8_0.predicted.matmul_cut_pct"), Some(30.0));
        let m = row(&f32r, "matmul").unwrap();
        let l = row(&f32r, "lm_head").unwrap();
        let half = (m.self_cpu_pct + l.self_cpu_pct) / 2.0;
        assert!((s.value("half_shares_pct").unwrap() - half).abs() < 1e-9);
        assert_eq!(s.value("f32.matmul.share"), Some(m.self_cpu_pct));
        assert!(s.value("bf16.step_ms").unwrap() < s.value("f32.step_ms").unwrap());
    }
}
