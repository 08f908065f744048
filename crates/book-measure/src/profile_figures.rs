//! A profile's figures (report.json, read with the profiler's own reader): the step time, and for
//! each row its share, time a step and a call, calls, and its roofline columns.

use profiler::{DeviceKind, Report, ReportRow, STEP_ROW};

use crate::sheet::{key_part, Sheet};

/// The step time of a report, ms: the active steps' wall time over their count.
pub fn step_ms(report: &Report) -> f64 {
    report.totals.wall_us / report.active_steps.max(1) as f64 / 1000.0
}

/// A row's share in the column its device ranks by, %.
pub fn share(report: &Report, row: &ReportRow) -> f64 {
    match report.device {
        DeviceKind::Cuda => row.self_cuda_pct.unwrap_or(0.0),
        DeviceKind::Cpu => row.self_cpu_pct,
    }
}

/// The row named `name` (the step row never counts).
pub fn row<'a>(report: &'a Report, name: &str) -> Option<&'a ReportRow> {
    report
        .rows
        .iter()
        .find(|r| r.name == name && r.name != STEP_ROW)
}

/// How many of the largest rows get `top.N.name` and `top.N.share`.
pub const TOP: usize = 4;

/// Writes under `prefix` (empty: at the top): `step_ms`, `rows` (how many ops the table has),
/// `top.N.name` and `top.N.share` for the [`TOP`] largest rows (N from 1, by share), and,
/// for every row but the step row, `ROW.share`, `ROW.ms` (self time a step), `ROW.us_per_call`,
/// `ROW.calls` (a step), `ROW.rank` (1 = the largest), `ROW.kernel`, and where the row has a
/// roofline `ROW.gflop_s`, `ROW.gb_s`, `ROW.flop_per_byte`, `ROW.roofline_pct`,
/// `ROW.memory_roofline_pct`, `ROW.bound`, and `ROW.reading`.
pub fn add(sheet: &mut Sheet, prefix: &str, report: &Report) {
    let k = |rest: &str| {
        if prefix.is_empty() {
            rest.to_string()
        } else {
            format!("{prefix}.{rest}")
        }
    };
    let steps = report.active_steps.max(1) as f64;
    sheet.num(k("step_ms"), step_ms(report), "ms", 1);
    let mut ranked: Vec<&ReportRow> = report.rows.iter().filter(|r| r.name != STEP_ROW).collect();
    ranked.sort_by(|a, b| share(report, b).total_cmp(&share(report, a)));
    sheet.num(k("rows"), ranked.len() as f64, "", 0);
    for (i, r) in ranked.iter().take(TOP).enumerate() {
        sheet.text(k(&format!("top.{}.name", i + 1)), r.name.clone());
        sheet.num(k(&format!("top.{}.share", i + 1)), share(report, r), "%", 1);
    }
    for (i, r) in ranked.iter().enumerate() {
        let name = key_part(&r.name);
        let rk = |field: &str| k(&format!("{name}.{field}"));
        let self_us = match report.device {
            DeviceKind::Cuda => r.self_cuda_us.unwrap_or(0.0),
            DeviceKind::Cpu => r.self_cpu_us,
        };
        sheet.num(rk("share"), share(report, r), "%", 1);
        sheet.num(rk("rank"), (i + 1) as f64, "", 0);
        sheet.num(rk("ms"), self_us / steps / 1000.0, "ms", 2);
        sheet.num(rk("calls"), r.calls as f64 / steps, "", 0);
        if r.calls > 0 {
            sheet.num(rk("us_per_call"), self_us / r.calls as f64, "µs", 1);
        }
        if let Some(kernel) = &r.kernel {
            sheet.text(rk("kernel"), kernel.clone());
        }
        if let Some(f) = &r.roofline {
            sheet.num(rk("gflop_s"), f.gflops_per_s, "GFLOP/s", 1);
            sheet.num(rk("gb_s"), f.gbytes_per_s, "GB/s", 2);
            sheet.num(rk("flop_per_byte"), f.intensity, "FLOP/B", 2);
            sheet.num(rk("roofline_pct"), f.pct_of_roofline, "%", 1);
            sheet.num(rk("memory_roofline_pct"), f.pct_of_memory_roofline, "%", 1);
            sheet.text(rk("bound"), f.bound.to_string());
        }
        if let Some(reading) = &r.reading {
            sheet.text(rk("reading"), reading.to_string());
        }
    }
    if let Some(c) = &report.ceilings {
        sheet.num(k("ceilings.memory_gb_s"), c.mem_read_gbps, "GB/s", 1);
        sheet.num(k("ceilings.compute_gflop_s"), c.peak_gflops, "GFLOP/s", 0);
        sheet.num(
            k("ceilings.ridge_flop_per_byte"),
            c.ridge_intensity(),
            "FLOP/B",
            2,
        );
        sheet.text(k("ceilings.kernel_path"), c.kernels.clone());
    }
}

/// The sheet's record of the machine, kernel path and ceilings, from a report.
pub fn record_machine(sheet: &mut Sheet, report: &Report) {
    sheet.machine = crate::machine::Machine::of(&report.environment);
    if let Some(c) = &report.ceilings {
        sheet.kernel_path = Some(c.kernels.clone());
        sheet.ceilings = Some(crate::machine::ceilings_pair(c));
    }
}
