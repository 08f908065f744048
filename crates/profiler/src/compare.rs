//! The diff of two reports: each row's self time per step before and after, and the change,
//! so a learner sees what an optimisation really removed (and what it moved elsewhere).

use std::collections::HashMap;

use crate::report::{Report, ReportRow};
use crate::roofline::RowRoofline;
use crate::table::format_us;

/// A side-by-side table of per-step self times. Rows match by name and input shapes; CUDA
/// times are compared when both reports have them, CPU times otherwise. When either report
/// has ceilings, each row's GB/s, Roofline %, Bound, Reading and Kernel follow, before → after.
pub fn compare(before: &Report, after: &Report) -> String {
    let device = before.has_device_times() && after.has_device_times();
    let roofline = before.ceilings.is_some() || after.ceilings.is_some();
    let per_step = |r: &Report, row: &ReportRow| -> f64 {
        let t = if device {
            row.self_cuda_us.unwrap_or(0.0)
        } else {
            row.self_cpu_us
        };
        t / r.active_steps.max(1) as f64
    };
    let key = |row: &ReportRow| (row.name.clone(), row.input_shapes.clone());

    let after_rows: HashMap<_, &ReportRow> = after.rows.iter().map(|r| (key(r), r)).collect();
    // (label, before row and its per-step time, after row and its per-step time)
    type Line<'a> = (
        String,
        Option<(&'a ReportRow, f64)>,
        Option<(&'a ReportRow, f64)>,
    );
    let mut lines: Vec<Line> = Vec::new();
    for row in &before.rows {
        let a = after_rows.get(&key(row)).map(|r| (*r, per_step(after, r)));
        lines.push((label(row), Some((row, per_step(before, row))), a));
    }
    let before_keys: std::collections::HashSet<_> = before.rows.iter().map(key).collect();
    for row in after.rows.iter().filter(|r| !before_keys.contains(&key(r))) {
        lines.push((label(row), None, Some((row, per_step(after, row)))));
    }
    // Biggest before-time first, then rows that only exist after, biggest first.
    let time = |side: &Option<(&ReportRow, f64)>| side.map(|(_, t)| t);
    lines.sort_by(|x, y| match (time(&x.1), time(&y.1)) {
        (Some(a), Some(b)) => b.total_cmp(&a).then_with(|| x.0.cmp(&y.0)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => time(&y.2)
            .unwrap_or(0.0)
            .total_cmp(&time(&x.2).unwrap_or(0.0))
            .then_with(|| x.0.cmp(&y.0)),
    });

    let kind = if device { "CUDA" } else { "CPU" };
    let mut header = vec![
        "Name".to_string(),
        format!("Self {kind} before"),
        format!("Self {kind} after"),
        "Change".to_string(),
        "Change %".to_string(),
    ];
    if roofline {
        header.extend(["GB/s", "Roofline %", "Bound", "Reading", "Kernel"].map(String::from));
    }
    let mut cells: Vec<Vec<String>> = lines
        .iter()
        .map(|(name, b, a)| {
            let show = |t: Option<f64>| t.map(format_us).unwrap_or_else(|| "-".to_string());
            let (tb, ta) = (time(b), time(a));
            let mut c = vec![
                name.clone(),
                show(tb),
                show(ta),
                change(tb, ta),
                change_pct(tb, ta),
            ];
            if roofline {
                let (rb, ra) = (b.map(|(r, _)| r), a.map(|(r, _)| r));
                let rate = |r: Option<&ReportRow>, f: fn(&RowRoofline) -> String| {
                    r.and_then(|r| r.roofline.as_ref()).map(f)
                };
                c.push(before_after(
                    rate(rb, |x| format!("{:.2}", x.gbytes_per_s)),
                    rate(ra, |x| format!("{:.2}", x.gbytes_per_s)),
                ));
                c.push(before_after(
                    rate(rb, |x| format!("{:.1}%", x.pct_of_roofline)),
                    rate(ra, |x| format!("{:.1}%", x.pct_of_roofline)),
                ));
                c.push(before_after(
                    rate(rb, |x| x.bound.to_string()),
                    rate(ra, |x| x.bound.to_string()),
                ));
                let reading = |r: Option<&ReportRow>| {
                    r.and_then(|r| r.reading).map(|x| x.label().to_string())
                };
                c.push(before_after(reading(rb), reading(ra)));
                let kernel = |r: Option<&ReportRow>| r.and_then(|r| r.kernel.clone());
                c.push(before_after(kernel(rb), kernel(ra)));
            }
            c
        })
        .collect();
    let total = |r: &Report| {
        let t = if device {
            r.totals.self_cuda_us.unwrap_or(0.0)
        } else {
            r.totals.self_cpu_us
        };
        t / r.active_steps.max(1) as f64
    };
    let (tb, ta) = (total(before), total(after));
    let mut total_line = vec![
        "Total (one step)".to_string(),
        format_us(tb),
        format_us(ta),
        change(Some(tb), Some(ta)),
        change_pct(Some(tb), Some(ta)),
    ];
    total_line.resize(header.len(), String::new());
    cells.push(total_line);

    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            let widest = cells
                .iter()
                .map(|c| c[i].chars().count())
                .max()
                .unwrap_or(0);
            widest.max(header[i].len()).max(12) + if i == 0 { 4 } else { 0 }
        })
        .collect();
    let line = |c: &[String]| -> String {
        c.iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s:>w$}  "))
            .collect::<String>()
            + "\n"
    };
    let rule: String = widths
        .iter()
        .map(|w| format!("{}  ", "-".repeat(*w)))
        .collect::<String>()
        + "\n";

    let mut out = String::new();
    out.push_str(&rule);
    out.push_str(&line(&header));
    out.push_str(&rule);
    let (body, total_line) = cells.split_at(cells.len() - 1);
    for c in body {
        out.push_str(&line(c));
    }
    out.push_str(&rule);
    out.push_str(&line(&total_line[0]));
    out.push_str(&format!(
        "Self {kind} time per step{}: before over {} active steps, after over {}; change = after - before.\n",
        if device { " (stream time, waits for launches included; not kernel time)" } else { "" },
        before.active_steps,
        after.active_steps
    ));
    if roofline {
        out.push_str(
            "GB/s, Roofline %, Bound, Reading and Kernel: before -> after, from each report's own ceilings \
             and reading thresholds (see the table's footer); blank where a row declared no work or a report has no ceilings.\n",
        );
    }
    for note in mismatches(before, after) {
        out.push_str(&format!("Note: {note}\n"));
    }
    out
}

/// `before -> after`, or one value when both sides agree; `-` for a missing side.
fn before_after(before: Option<String>, after: Option<String>) -> String {
    match (before, after) {
        (None, None) => String::new(),
        (b, a) if b == a => b.unwrap_or_default(),
        (b, a) => format!(
            "{} -> {}",
            b.as_deref().unwrap_or("-"),
            a.as_deref().unwrap_or("-")
        ),
    }
}

fn label(row: &ReportRow) -> String {
    match &row.input_shapes {
        Some(s) => format!("{} {s}", row.name),
        None => row.name.clone(),
    }
}

fn change(before: Option<f64>, after: Option<f64>) -> String {
    let d = after.unwrap_or(0.0) - before.unwrap_or(0.0);
    let sign = if d < 0.0 { "-" } else { "+" };
    format!("{sign}{}", format_us(d.abs()))
}

fn change_pct(before: Option<f64>, after: Option<f64>) -> String {
    match (before, after) {
        (Some(b), Some(a)) if b > 0.0 => format!("{:+.1}%", 100.0 * (a - b) / b),
        (Some(_), None) => "removed".to_string(),
        (None, Some(_)) => "new".to_string(),
        _ => "-".to_string(),
    }
}

/// Differences that make the two reports hard to compare.
fn mismatches(before: &Report, after: &Report) -> Vec<String> {
    let mut notes = Vec::new();
    if before.view != after.view {
        notes.push(format!(
            "the views differ (before: {}, after: {}); rows may not match",
            before.view, after.view
        ));
    }
    if before.device != after.device {
        notes.push(format!(
            "the devices differ (before: {}, after: {})",
            before.device.as_str(),
            after.device.as_str()
        ));
    }
    let (eb, ea) = (&before.environment, &after.environment);
    if eb.threads != ea.threads
        || eb.cpu_model != ea.cpu_model
        || eb.optimized_build != ea.optimized_build
    {
        notes.push(format!(
            "the environments differ (before: {} threads, {}, {} build; after: {} threads, {}, {} build)",
            eb.threads,
            eb.cpu_model,
            eb.build(),
            ea.threads,
            ea.cpu_model,
            ea.build()
        ));
    }
    if before.has_device_times() != after.has_device_times() {
        notes.push("only one report has CUDA times: comparing CPU times".to_string());
    }
    match (&before.ceilings, &after.ceilings) {
        (Some(b), Some(a)) if b != a => notes.push(format!(
            "the ceilings differ (before: {:.2} GB/s, {:.2} GFLOP/s, kernels {}; after: {:.2} GB/s, {:.2} GFLOP/s, kernels {}): \
             the Roofline % columns are against different roofs",
            b.mem_read_gbps, b.peak_gflops, b.kernels, a.mem_read_gbps, a.peak_gflops, a.kernels
        )),
        (Some(_), None) | (None, Some(_)) => {
            notes.push("only one report has ceilings: the other side's roofline cells are blank".to_string())
        }
        _ => {}
    }
    if before.reading_thresholds != after.reading_thresholds {
        notes.push("the reports were read with different thresholds: a changed Reading may be the thresholds' doing".to_string());
    }
    notes
}
