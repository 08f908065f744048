//! `ceilings`: this machine's measured memory read rate and matmul peak, as the profiler's
//! ceilings cache holds them (measured again in a full run, so they come from the same quiet
//! machine as the profiles after them; read from the cache with --quick).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use profiler::Report;

use super::{gpt2_model, Ctx};
use crate::profile_figures::record_machine;
use crate::sheet::Sheet;

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let out = ctx.scratch("ceilings")?;
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
    .args([
        "--batch", "1", "--seq", "8", "--warmup", "1", "--active", "1", "--out",
    ])
    .arg(&out);
    if !ctx.quick {
        cmd.arg("--remeasure-ceilings");
    }
    ctx.step("ceilings", &mut cmd)?;
    let report = Report::read_json(out.join("report.json")).map_err(anyhow::Error::msg)?;
    let sheet = figures(&report, ctx.recorded(&cmd))?;
    Ok(vec![ctx.write(
        &sheet,
        if ctx.quick {
            "read from the ceilings cache"
        } else {
            "measured again, before the profiles that use them"
        },
    )?])
}

/// `memory_gb_s`, `compute_gflop_s`, `ridge_flop_per_byte`, `kernel_path`, `threads`, `cpu`,
/// `bandwidth_how`, `peak_how`.
pub fn figures(report: &Report, command: String) -> Result<Sheet> {
    let c = report.ceilings.as_ref().context(
        "the profile carries no ceilings (measuring them failed: its log says why); rerun with a writable cache folder",
    )?;
    let mut sheet = Sheet::new("ceilings", command);
    record_machine(&mut sheet, report);
    sheet.num("memory_gb_s", c.mem_read_gbps, "GB/s", 1);
    sheet.num("compute_gflop_s", c.peak_gflops, "GFLOP/s", 0);
    sheet.num("ridge_flop_per_byte", c.ridge_intensity(), "FLOP/B", 2);
    sheet.text("kernel_path", c.kernels.clone());
    sheet.num("threads", c.threads as f64, "", 0);
    sheet.text("cpu", c.device.clone());
    sheet.text("bandwidth_how", c.bandwidth_how.clone());
    sheet.text("peak_how", c.peak_how.clone());
    Ok(sheet)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceilings_are_read_off_the_profile() {
        let report = crate::experiments::fixtures::profile_tiny();
        let s = figures(&report, "gpt2 profile".into()).unwrap();
        let c = report.ceilings.as_ref().unwrap();
        assert_eq!(s.value("memory_gb_s"), Some(c.mem_read_gbps));
        assert_eq!(s.value("compute_gflop_s"), Some(c.peak_gflops));
        assert_eq!(
            s.value("ridge_flop_per_byte"),
            Some(c.peak_gflops / c.mem_read_gbps)
        );
        assert_eq!(s.text_of("kernel_path"), Some(c.kernels.as_str()));
        assert_eq!(s.ceilings, Some((c.mem_read_gbps, c.peak_gflops)));
        let mut none = report.clone();
        none.ceilings = None;
        assert!(figures(&none, "x".into()).is_err());
    }
}
