//! The diff of two reports: each row's self time per step before and after, and the change,
//! so a learner sees what an optimisation really removed (and what it moved elsewhere).

use std::collections::HashMap;

use crate::report::{Report, ReportRow};
use crate::table::format_us;

/// A side-by-side table of per-step self times. Rows match by name and input shapes; CUDA
/// times are compared when both reports have them, CPU times otherwise.
pub fn compare(before: &Report, after: &Report) -> String {
    let device = before.has_device_times() && after.has_device_times();
    let per_step = |r: &Report, row: &ReportRow| -> f64 {
        let t = if device { row.self_cuda_us.unwrap_or(0.0) } else { row.self_cpu_us };
        t / r.active_steps.max(1) as f64
    };
    let key = |row: &ReportRow| (row.name.clone(), row.input_shapes.clone());

    let after_rows: HashMap<_, &ReportRow> = after.rows.iter().map(|r| (key(r), r)).collect();
    let mut lines: Vec<(String, Option<f64>, Option<f64>)> = Vec::new();
    for row in &before.rows {
        let a = after_rows.get(&key(row)).map(|r| per_step(after, r));
        lines.push((label(row), Some(per_step(before, row)), a));
    }
    let before_keys: std::collections::HashSet<_> = before.rows.iter().map(key).collect();
    let mut added: Vec<&ReportRow> = after.rows.iter().filter(|r| !before_keys.contains(&key(r))).collect();
    added.sort_by(|x, y| per_step(after, y).total_cmp(&per_step(after, x)));
    for row in added {
        lines.push((label(row), None, Some(per_step(after, row))));
    }
    // Biggest before-time first, then rows that only exist after.
    lines.sort_by(|x, y| match (x.1, y.1) {
        (Some(a), Some(b)) => b.total_cmp(&a).then_with(|| x.0.cmp(&y.0)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => y.2.unwrap_or(0.0).total_cmp(&x.2.unwrap_or(0.0)),
    });

    let kind = if device { "CUDA" } else { "CPU" };
    let header = [
        "Name".to_string(),
        format!("Self {kind} before"),
        format!("Self {kind} after"),
        "Change".to_string(),
        "Change %".to_string(),
    ];
    let mut cells: Vec<[String; 5]> = lines
        .iter()
        .map(|(name, b, a)| {
            let show = |t: Option<f64>| t.map(format_us).unwrap_or_else(|| "-".to_string());
            [name.clone(), show(*b), show(*a), change(*b, *a), change_pct(*b, *a)]
        })
        .collect();
    let total = |r: &Report| {
        let t = if device { r.totals.self_cuda_us.unwrap_or(0.0) } else { r.totals.self_cpu_us };
        t / r.active_steps.max(1) as f64
    };
    let (tb, ta) = (total(before), total(after));
    cells.push([
        "Total (one step)".to_string(),
        format_us(tb),
        format_us(ta),
        change(Some(tb), Some(ta)),
        change_pct(Some(tb), Some(ta)),
    ]);

    let widths: Vec<usize> = (0..5)
        .map(|i| {
            let widest = cells.iter().map(|c| c[i].chars().count()).max().unwrap_or(0);
            widest.max(header[i].len()).max(12) + if i == 0 { 4 } else { 0 }
        })
        .collect();
    let line = |c: &[String]| -> String {
        c.iter().zip(&widths).map(|(s, w)| format!("{s:>w$}  ")).collect::<String>() + "\n"
    };
    let rule: String = widths.iter().map(|w| format!("{}  ", "-".repeat(*w))).collect::<String>() + "\n";

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
        "Self {kind} time per step: before over {} active steps, after over {}; change = after - before.\n",
        before.active_steps, after.active_steps
    ));
    for note in mismatches(before, after) {
        out.push_str(&format!("Note: {note}\n"));
    }
    out
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
        notes.push(format!("the views differ (before: {}, after: {}); rows may not match", before.view, after.view));
    }
    if before.device != after.device {
        notes.push(format!(
            "the devices differ (before: {}, after: {})",
            before.device.as_str(),
            after.device.as_str()
        ));
    }
    let (eb, ea) = (&before.environment, &after.environment);
    if eb.threads != ea.threads || eb.cpu != ea.cpu || eb.build != ea.build {
        notes.push(format!(
            "the environments differ (before: {} threads, {}, {} build; after: {} threads, {}, {} build)",
            eb.threads, eb.cpu, eb.build, ea.threads, ea.cpu, ea.build
        ));
    }
    if before.has_device_times() != after.has_device_times() {
        notes.push("only one report has CUDA times: comparing CPU times".to_string());
    }
    notes
}
