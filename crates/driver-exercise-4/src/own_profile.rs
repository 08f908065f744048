//! The learner's own exercise-3 profile, read with their arithmetic: the share of each top op,
//! the ceiling of any saving, and the saving of a fix that removes part of it.

use crate::{Args, Learner};
use anyhow::{bail, Result};
use profiler::{DeviceKind, Report, ReportRow};
use std::path::Path;

/// The self-time share of a row in the column its device ranks by.
fn share_of(report: &Report, row: &ReportRow) -> f64 {
    match report.device {
        DeviceKind::Cuda => row.self_cuda_pct.unwrap_or(0.0),
        DeviceKind::Cpu => row.self_cpu_pct,
    }
}

/// The name of the column `report` is ranked by.
pub(crate) fn column(report: &Report) -> &'static str {
    match report.device {
        DeviceKind::Cuda => "self CUDA",
        DeviceKind::Cpu => "self CPU",
    }
}

/// Prints the top `args.rows` ops of `report` (read from `path`) with the saving of removing
/// `args.fraction` of each.
pub(crate) fn print_top_ops(learner: &Learner, report: &Report, path: &Path, args: &Args) {
    println!(
        "Your profile ({}), ranked by {} time:",
        path.display(),
        column(report)
    );
    println!(
        "  {:<28} {:>8} {:>10} {:>22}",
        "op",
        "share",
        "ceiling",
        format!("saving at {:.0}% removed", args.fraction * 100.0)
    );
    for row in report.rows.iter().take(args.rows) {
        let share = share_of(report, row);
        let saving = (learner.step_saving_pct)(share, args.fraction);
        println!(
            "  {:<28} {share:>7.2}% {share:>9.2}% {saving:>21.2}%",
            row.name
        );
    }
}

/// The op given with `--op`, in detail: what removing `fraction` of it saves.
pub(crate) fn print_attacked(
    learner: &Learner,
    report: &Report,
    path: &Path,
    op: &str,
    fraction: f64,
) -> Result<()> {
    let wanted = op.trim().to_lowercase();
    let Some(row) = report.rows.iter().find(|r| r.name.to_lowercase() == wanted) else {
        bail!(
            "`{op}` is not a row of {}: use a name from the table above",
            path.display()
        );
    };
    let share = share_of(report, row);
    println!(
        "\nAttacking `{}` ({share:.2}% of {} time): removing {:.0}% of it saves {:.2}% of the step.",
        row.name,
        column(report),
        fraction * 100.0,
        (learner.step_saving_pct)(share, fraction)
    );
    Ok(())
}
