//! The profiler's `report.json` (schema `formats::report::SCHEMA`, documented in
//! crates/profiler/REPORT.md), and its consistency checks.
//!
//! Device-aware: a CPU run ranks ops by self CPU time, a CUDA run by self CUDA time; the
//! shares, the ranking and the totals are all checked in the device's column.
//!
//! Version 2 adds the device's measured `ceilings`, the run's `warnings`, and per row the
//! `kernel` it ran on and its `roofline` (rates, intensity, % of the roofline it reached). The
//! profiler computes the roofline columns; the grader only checks that they agree with each
//! other and with the ceilings, so an edited figure is reported as tampered. Version 3 changes
//! only the `environment`, now the record bench.json carries too; the grader reads its
//! `optimized_build`. Version 4 adds the `reading_thresholds` and per row the `reading` the
//! table printed (memory-bound, compute-bound, slow kernel, launch overhead): the grader reads
//! it as written, and checks it against the profiler's rule (`profiler::reading`) at those
//! thresholds, as it checks the roofline columns. Version 5 adds per row the budget `line`
//! its op declared, which exercise 4's lines are checked against.

use super::{close, tampered, ResultsFile};
use crate::problem::Problem;
use formats::line::Line;
pub use formats::report::{Bound, SCHEMA};
use formats::report::{Ceilings, DeviceKind, RowRoofline, FILE};
use profiler::reading::{self, Figures, Reading, Thresholds};
use serde::{Deserialize, Serialize};

// The grader reads report.json through a lenient view of its own (below: only the fields it
// checks, numbers as f64, most fields optional) built from the file's types in the `formats`
// crate, which the profiler writes with: a hand-edited file is then named as tampered, field
// by field, rather than refused as unparsable.
#[derive(Debug, Clone, Deserialize)]
struct RawReport {
    schema: String,
    device: DeviceKind,
    #[serde(default)]
    sort_by: Option<String>,
    #[serde(default)]
    environment: Option<RawEnvironment>,
    #[serde(default)]
    ceilings: Option<Ceilings>,
    #[serde(default)]
    reading_thresholds: Option<Thresholds>,
    #[serde(default)]
    warnings: Vec<String>,
    #[serde(default)]
    active_steps: Option<f64>,
    totals: RawTotals,
    rows: Vec<RawRow>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawEnvironment {
    #[serde(default)]
    optimized_build: Option<bool>,
    #[serde(default)]
    dtype: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawTotals {
    self_cpu_us: f64,
    #[serde(default)]
    self_cuda_us: Option<f64>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawRow {
    name: String,
    line: Line,
    #[serde(default)]
    calls: Option<f64>,
    self_cpu_us: f64,
    #[serde(default)]
    cpu_total_us: Option<f64>,
    self_cpu_pct: f64,
    #[serde(default)]
    cuda_total_us: Option<f64>,
    #[serde(default)]
    self_cuda_us: Option<f64>,
    #[serde(default)]
    self_cuda_pct: Option<f64>,
    #[serde(default)]
    flops: Option<f64>,
    #[serde(default)]
    bytes: Option<f64>,
    #[serde(default)]
    kernel: Option<String>,
    #[serde(default)]
    roofline: Option<RowRoofline>,
    #[serde(default)]
    reading: Option<Reading>,
}

/// One row as the device ranks it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedOp {
    pub name: String,
    /// The budget line the op declared (matmuls, attention, activations, other).
    pub line: Line,
    /// Self time in the device's column, in µs (summed over the active steps).
    pub self_us: f64,
    /// Share of the sum of self times in the device's column, in percent.
    pub share_pct: f64,
    /// Ranges recorded (over the active steps), when the report says.
    pub calls: Option<f64>,
    /// The kernel label(s) the row ran on (`packed-avx512`, `candle`, `custom`, ...).
    pub kernel: Option<String>,
    /// The roofline columns; None when the row declared no work or there are no ceilings.
    pub roofline: Option<RowRoofline>,
    /// What the table read off the roofline columns (with the report's `reading_thresholds`);
    /// None exactly when there are no roofline columns.
    pub reading: Option<Reading>,
}

impl RankedOp {
    /// Mean self time per call in the device's column, µs.
    pub fn us_per_call(&self) -> Option<f64> {
        self.calls.filter(|c| *c >= 1.0).map(|c| self.self_us / c)
    }
}

/// A consistent profile, ranked by the device's self time.
#[derive(Debug, Clone)]
pub struct ProfileReport {
    pub file: String,
    pub device: DeviceKind,
    /// False when the profiled program was built without optimisations; None when unsaid.
    pub optimized_build: Option<bool>,
    /// The model's weight type as the run stated it (`f32`, `bf16`, `f16`); None when unsaid.
    pub dtype: Option<String>,
    /// The steps the times are summed over; None when unsaid.
    pub active_steps: Option<f64>,
    /// The device's measured ceilings; None when the run measured none.
    pub ceilings: Option<Ceilings>,
    /// The thresholds the rows' readings were taken with; None when the report holds none (it
    /// then has no readings either).
    pub reading_thresholds: Option<Thresholds>,
    /// What the profiler warned about (a busy machine, a debug build...).
    pub warnings: Vec<String>,
    /// The `ProfilerStep*` row (time no op covers), kept out of `ops`.
    pub step: Option<RankedOp>,
    /// The ops, largest self time (in the device's column) first. The `ProfilerStep*` row is
    /// left out: it is the time no op covers, not an op (its share still counts in the total).
    pub ops: Vec<RankedOp>,
}

/// The row of the profiler steps themselves (see crates/profiler/REPORT.md).
fn is_step_row(name: &str) -> bool {
    name.starts_with("ProfilerStep")
}

/// The value a row is sorted by under the report's declared `sort_by` key (CUDA keys fall back
/// to the CPU times when there are none, as the profiler does).
fn sort_value(row: &RawRow, sort_by: &str) -> Option<f64> {
    match sort_by {
        "self_cpu_time_total" => Some(row.self_cpu_us),
        "cpu_time_total" => row.cpu_total_us,
        "self_cuda_time_total" => row.self_cuda_us.or(Some(row.self_cpu_us)),
        "cuda_time_total" => row.cuda_total_us.or(row.cpu_total_us),
        "count" => row.calls,
        _ => None,
    }
}

const REGENERATE: &str =
    "regenerate it by running the exercise again (`course run`); never edit results by hand";

/// report.json as the grader reads it: an earlier version is profiled again.
const READ: ResultsFile = ResultsFile {
    format: FILE,
    what: "profiler report",
    rerun: "profile again with this version of the course (`course run`), which writes the current report",
    regenerate: REGENERATE,
};

// Tolerances for the consistency checks. Shares are printed rounded and times are summed in
// floating point, so exact equality would reject honest files.
const SHARE_SUM_TOLERANCE_PCT: f64 = 1.0;
const SHARE_ROW_TOLERANCE_PCT: f64 = 0.5;
const TOTALS_REL_TOLERANCE: f64 = 0.01;
const TOTALS_ABS_TOLERANCE_US: f64 = 1.0;

impl ProfileReport {
    /// Read, parse and check the report at `path` (what a program that fills or prints answers
    /// from a learner's report needs): the error names the file, and says what is wrong with it.
    pub fn read(path: &std::path::Path) -> Result<ProfileReport, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        ProfileReport::parse(&text, &path.display().to_string()).map_err(|p| p.to_string())
    }

    /// Parse and check a report; any inconsistency is a `Tampered` problem.
    pub fn parse(text: &str, file: &str) -> Result<ProfileReport, Problem> {
        let raw = READ.parse(text, file, |r: &RawReport| &r.schema)?;
        if raw.rows.is_empty() {
            return Err(tampered(file, "the report has no rows".into(), REGENERATE));
        }
        let device = raw.device;
        let mut ops = Vec::with_capacity(raw.rows.len());
        for (index, row) in raw.rows.iter().enumerate() {
            let (self_us, pct) = match device {
                DeviceKind::Cpu => (Some(row.self_cpu_us), Some(row.self_cpu_pct)),
                DeviceKind::Cuda => (row.self_cuda_us, row.self_cuda_pct),
            };
            let (Some(self_us), Some(share_pct)) = (self_us, pct) else {
                return Err(tampered(
                    file,
                    format!(
                        "row {} (`{}`) of a CUDA run has no self CUDA time",
                        index + 1,
                        row.name
                    ),
                    REGENERATE,
                ));
            };
            if !self_us.is_finite()
                || self_us < 0.0
                || !share_pct.is_finite()
                || share_pct < 0.0
                || !row.self_cpu_us.is_finite()
            {
                return Err(tampered(
                    file,
                    format!(
                        "row {} (`{}`) has a negative or non-finite time or share",
                        index + 1,
                        row.name
                    ),
                    REGENERATE,
                ));
            }
            if let Some(roofline) = &row.roofline {
                check_roofline(roofline, raw.ceilings.as_ref(), index, &row.name, file)?;
                check_rates(roofline, row, index, file)?;
            }
            let op = RankedOp {
                name: row.name.clone(),
                line: row.line,
                self_us,
                share_pct,
                calls: row.calls,
                kernel: row.kernel.clone(),
                roofline: row.roofline.clone(),
                reading: row.reading,
            };
            check_reading(&op, raw.reading_thresholds.as_ref(), index, file)?;
            ops.push(op);
        }
        if let Some(c) = &raw.ceilings {
            if !(c.mem_read_gbps.is_finite()
                && c.mem_read_gbps > 0.0
                && c.peak_gflops.is_finite()
                && c.peak_gflops > 0.0)
            {
                return Err(tampered(
                    file,
                    "the ceilings' bandwidth and peak must be positive numbers".into(),
                    REGENERATE,
                ));
            }
        }
        let column = device.column();
        // The rows must be sorted by the key the report declares (by default the device's self
        // time); a row above one with a larger value is a ranking that contradicts the rows.
        let default_key = match device {
            DeviceKind::Cpu => "self_cpu_time_total",
            DeviceKind::Cuda => "self_cuda_time_total",
        };
        let sort_by = raw.sort_by.as_deref().unwrap_or(default_key);
        let values: Vec<Option<f64>> = raw.rows.iter().map(|r| sort_value(r, sort_by)).collect();
        if values.iter().all(Option::is_some) {
            for index in 1..values.len() {
                let (above, below) = (
                    values[index - 1].unwrap_or(0.0),
                    values[index].unwrap_or(0.0),
                );
                if below > above * (1.0 + 1e-9) + 1e-9 {
                    return Err(tampered(
                        file,
                        format!(
                            "the ranking contradicts the rows: they are sorted by {sort_by}, yet row {} (`{}`, {below}) is larger than row {} (`{}`, {above})",
                            index + 1,
                            raw.rows[index].name,
                            index,
                            raw.rows[index - 1].name,
                        ),
                        REGENERATE,
                    ));
                }
            }
        }
        // Shares are of the sum of self times: they add up to 100 and match each row's time.
        let sum_us: f64 = ops.iter().map(|op| op.self_us).sum();
        let sum_pct: f64 = ops.iter().map(|op| op.share_pct).sum();
        if sum_us > 0.0 {
            if (sum_pct - 100.0).abs() > SHARE_SUM_TOLERANCE_PCT {
                return Err(tampered(
                    file,
                    format!("the {column} shares add up to {sum_pct:.2}%, not 100%"),
                    REGENERATE,
                ));
            }
            for (index, op) in ops.iter().enumerate() {
                let expected = op.self_us / sum_us * 100.0;
                if (op.share_pct - expected).abs() > SHARE_ROW_TOLERANCE_PCT {
                    return Err(tampered(
                        file,
                        format!(
                            "row {} (`{}`) claims {:.2}% of {column}, but its time is {:.2}% of the total",
                            index + 1,
                            op.name,
                            op.share_pct,
                            expected
                        ),
                        REGENERATE,
                    ));
                }
            }
        }
        // The totals must agree with the rows.
        let cpu_sum: f64 = raw.rows.iter().map(|r| r.self_cpu_us).sum();
        if !close(
            raw.totals.self_cpu_us,
            cpu_sum,
            TOTALS_ABS_TOLERANCE_US,
            TOTALS_REL_TOLERANCE,
        ) {
            return Err(tampered(
                file,
                format!(
                    "totals.self_cpu_us is {} µs, but the rows add up to {cpu_sum:.1} µs",
                    raw.totals.self_cpu_us
                ),
                REGENERATE,
            ));
        }
        if device == DeviceKind::Cuda {
            match raw.totals.self_cuda_us {
                Some(total)
                    if close(total, sum_us, TOTALS_ABS_TOLERANCE_US, TOTALS_REL_TOLERANCE) => {}
                Some(total) => {
                    return Err(tampered(
                        file,
                        format!(
                        "totals.self_cuda_us is {total} µs, but the rows add up to {sum_us:.1} µs"
                    ),
                        REGENERATE,
                    ))
                }
                None => {
                    return Err(tampered(
                        file,
                        "a CUDA run without totals.self_cuda_us".into(),
                        REGENERATE,
                    ))
                }
            }
        }
        // Rank by the device's self time whatever the table's order; ties by name.
        let step = ops.iter().find(|op| is_step_row(&op.name)).cloned();
        ops.retain(|op| !is_step_row(&op.name));
        ops.sort_by(|a, b| {
            b.self_us
                .total_cmp(&a.self_us)
                .then_with(|| a.name.cmp(&b.name))
        });
        Ok(ProfileReport {
            file: file.to_string(),
            device,
            optimized_build: raw.environment.as_ref().and_then(|e| e.optimized_build),
            dtype: raw
                .environment
                .and_then(|e| e.dtype)
                .filter(|d| d != "unknown"),
            active_steps: raw.active_steps.filter(|n| *n >= 1.0),
            ceilings: raw.ceilings,
            reading_thresholds: raw.reading_thresholds,
            warnings: raw.warnings,
            step,
            ops,
        })
    }

    /// The first row with this name (op names compared as written, ignoring case and spaces).
    pub fn find(&self, name: &str) -> Option<(usize, &RankedOp)> {
        let wanted = op_key(name);
        self.ops
            .iter()
            .enumerate()
            .find(|(_, op)| op_key(&op.name) == wanted)
    }

    /// Every row with this name, the `ProfilerStep*` row included.
    pub fn row(&self, name: &str) -> Option<&RankedOp> {
        self.find(name).map(|(_, op)| op).or(self
            .step
            .as_ref()
            .filter(|s| op_key(&s.name) == op_key(name)))
    }

    pub fn top(&self, n: usize) -> &[RankedOp] {
        &self.ops[..n.min(self.ops.len())]
    }

    /// One step's time in the device's column, in µs: every row's self time (the time no op
    /// covers included) over the active steps (1 when the report does not say).
    pub fn step_us(&self) -> f64 {
        let sum: f64 = self.ops.iter().chain(&self.step).map(|op| op.self_us).sum();
        self.per_step_us(sum)
    }

    /// A total over the recorded steps (a row's `self_us`, say) as one step's share, in µs.
    pub fn per_step_us(&self, total_us: f64) -> f64 {
        total_us / self.active_steps.unwrap_or(1.0)
    }
}

// The roofline columns are printed from the same numbers, so they agree closely; a figure
// edited by hand does not.
const ROOFLINE_REL_TOLERANCE: f64 = 0.02;
const ROOFLINE_ABS_TOLERANCE: f64 = 0.05;

/// A row's roofline columns must agree with each other and with the ceilings (the formulas of
/// crates/profiler/REPORT.md); the profiler computes them, the grader only checks them.
fn check_roofline(
    r: &RowRoofline,
    ceilings: Option<&Ceilings>,
    index: usize,
    name: &str,
    file: &str,
) -> Result<(), Problem> {
    let row = format!("row {} (`{name}`)", index + 1);
    let Some(c) = ceilings else {
        return Err(tampered(file, format!("{row} has roofline columns, but the report records no ceilings to read them against"), REGENERATE));
    };
    let values = [
        r.gflops_per_s,
        r.gbytes_per_s,
        r.intensity,
        r.roofline_gflops_per_s,
        r.pct_of_roofline,
        r.pct_of_memory_roofline,
    ];
    if values.iter().any(|v| !v.is_finite() || *v < 0.0) {
        return Err(tampered(
            file,
            format!("{row} has a negative or non-finite roofline figure"),
            REGENERATE,
        ));
    }
    let agree = |a: f64, b: f64| close(a, b, ROOFLINE_ABS_TOLERANCE, ROOFLINE_REL_TOLERANCE);
    let memory_pct = 100.0 * r.gbytes_per_s / c.mem_read_gbps;
    if !agree(r.pct_of_memory_roofline, memory_pct) {
        return Err(tampered(
            file,
            format!(
                "{row} claims {:.2}% of the memory roofline, but {:.3} GB/s of the measured {:.2} GB/s is {memory_pct:.2}%",
                r.pct_of_memory_roofline, r.gbytes_per_s, c.mem_read_gbps
            ),
            REGENERATE,
        ));
    }
    let roof = c.peak_gflops.min(c.mem_read_gbps * r.intensity);
    if !agree(r.roofline_gflops_per_s, roof) {
        return Err(tampered(
            file,
            format!("{row} claims a roofline of {:.3} GFLOP/s, but min(peak, bandwidth × intensity) is {roof:.3}", r.roofline_gflops_per_s),
            REGENERATE,
        ));
    }
    if r.roofline_gflops_per_s > 0.0
        && !agree(
            r.pct_of_roofline,
            100.0 * r.gflops_per_s / r.roofline_gflops_per_s,
        )
    {
        return Err(tampered(
            file,
            format!(
                "{row} claims {:.2}% of its roofline, but {:.3} of {:.3} GFLOP/s is {:.2}%",
                r.pct_of_roofline,
                r.gflops_per_s,
                r.roofline_gflops_per_s,
                100.0 * r.gflops_per_s / r.roofline_gflops_per_s
            ),
            REGENERATE,
        ));
    }
    // Right at the ridge either side is honest.
    let ridge = c.peak_gflops / c.mem_read_gbps;
    let expected = if r.intensity < ridge {
        Bound::Memory
    } else {
        Bound::Compute
    };
    if r.bound != expected && !close(r.intensity, ridge, 1e-9, ROOFLINE_REL_TOLERANCE) {
        return Err(tampered(
            file,
            format!(
                "{row} is marked {}-bound, but its intensity {:.3} FLOP/byte is on the {} side of the ridge ({ridge:.3})",
                r.bound.as_str(),
                r.intensity,
                expected.as_str()
            ),
            REGENERATE,
        ));
    }
    Ok(())
}

/// The rates are the row's declared work over its total time on the roofline's time basis
/// (crates/profiler/src/roofline.rs): a rate edited by hand no longer matches them.
fn check_rates(r: &RowRoofline, row: &RawRow, index: usize, file: &str) -> Result<(), Problem> {
    let total_us = match r.time_basis.as_str() {
        "cuda-stream" => row.cuda_total_us,
        _ => row.cpu_total_us,
    };
    let Some(total_us) = total_us.filter(|t| *t > 0.0) else {
        return Ok(());
    };
    let agree = |a: f64, b: f64| close(a, b, 1e-6, ROOFLINE_REL_TOLERANCE);
    for (what, count, rate) in [
        ("bytes", row.bytes, r.gbytes_per_s),
        ("flops", row.flops, r.gflops_per_s),
    ] {
        if let Some(count) = count {
            let expected = count / (total_us * 1e3);
            if !agree(rate, expected) {
                return Err(tampered(
                    file,
                    format!(
                        "row {} (`{}`) claims a rate of {rate:.4} G{what}/s, but {count} {what} over {total_us:.1} µs is {expected:.4}",
                        index + 1,
                        row.name
                    ),
                    REGENERATE,
                ));
            }
        }
    }
    Ok(())
}

/// A row's reading must be the one the profiler's rule gives its figures at the report's
/// thresholds, and there only where it has roofline columns: the table printed it from them.
fn check_reading(
    op: &RankedOp,
    thresholds: Option<&Thresholds>,
    index: usize,
    file: &str,
) -> Result<(), Problem> {
    let row = format!("row {} (`{}`)", index + 1, op.name);
    let (roofline, written) = match (&op.roofline, op.reading) {
        (None, None) => return Ok(()),
        (None, Some(r)) => {
            return Err(tampered(
                file,
                format!(
                    "{row} reads {:?} without roofline columns to read it from",
                    r.as_str()
                ),
                REGENERATE,
            ))
        }
        (Some(_), None) => {
            return Err(tampered(
                file,
                format!("{row} has roofline columns but no reading"),
                REGENERATE,
            ))
        }
        (Some(roofline), Some(written)) => (roofline, written),
    };
    let Some(t) = thresholds else {
        return Err(tampered(file, format!("{row} has a reading, but the report records no reading_thresholds it was read with"), REGENERATE));
    };
    if let Some(problem) = t.problem() {
        return Err(tampered(
            file,
            format!("its reading_thresholds cannot be read by: {problem}"),
            REGENERATE,
        ));
    }
    // The figures went through JSON: a figure that sits on a threshold may come back a hair to
    // either side of it, so either side's reading is honest.
    let nudged = |x: f64, k: i32| x * (1.0 + f64::from(k) * 1e-9);
    let per_call = op.us_per_call();
    let honest = (-1..=1).any(|a| {
        (-1..=1).any(|b| {
            (-1..=1).any(|c| {
                let f = Figures {
                    pct_of_roofline: nudged(roofline.pct_of_roofline, a),
                    pct_of_memory_roofline: nudged(roofline.pct_of_memory_roofline, b),
                    us_per_call: per_call.map(|us| nudged(us, c)),
                    ..Figures::of(roofline, per_call)
                };
                reading::read(&f, t) == written
            })
        })
    });
    if !honest {
        let expected = reading::read(&Figures::of(roofline, per_call), t);
        return Err(tampered(
            file,
            format!(
                "{row} reads {:?}, but its roofline columns read {:?} at the report's thresholds ({:.2}% of its roofline, {:.2}% of \
                 the memory roofline{})",
                written.as_str(),
                expected.as_str(),
                roofline.pct_of_roofline,
                roofline.pct_of_memory_roofline,
                per_call.map(|us| format!(", {us:.1} µs a call")).unwrap_or_default()
            ),
            REGENERATE,
        ));
    }
    Ok(())
}

/// How op names are compared: case and surrounding whitespace and backticks do not matter.
pub fn op_key(name: &str) -> String {
    name.trim().trim_matches('`').trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemKind;

    fn report(
        device: &str,
        rows: &[(&str, f64, Option<f64>)],
        total_cpu: f64,
        total_cuda: Option<f64>,
    ) -> String {
        let cpu_sum: f64 = rows.iter().map(|r| r.1).sum();
        let cuda_sum: f64 = rows.iter().filter_map(|r| r.2).sum();
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, cpu, cuda)| {
                serde_json::json!({
                    "name": name, "line": Line::of_undeclared(name), "calls": 1, "self_cpu_us": cpu, "cpu_total_us": cpu,
                    "self_cpu_pct": cpu / cpu_sum * 100.0,
                    "self_cuda_us": cuda, "self_cuda_pct": cuda.map(|c| c / cuda_sum * 100.0),
                    "extra_field": "ignored"
                })
            })
            .collect();
        serde_json::json!({
            "schema": SCHEMA, "device": device, "view": "op",
            "sort_by": if device == "cuda" { "self_cuda_time_total" } else { "self_cpu_time_total" },
            "totals": {"self_cpu_us": total_cpu, "self_cuda_us": total_cuda, "wall_us": 1.0},
            "rows": rows
        })
        .to_string()
    }

    #[test]
    fn a_cpu_report_ranks_by_self_cpu() {
        let text = report(
            "cpu",
            &[
                ("matmul", 600.0, None),
                ("gelu", 300.0, None),
                ("add", 100.0, None),
            ],
            1000.0,
            None,
        );
        let r = ProfileReport::parse(&text, "report.json").unwrap();
        assert_eq!(r.device, DeviceKind::Cpu);
        assert_eq!(
            r.top(2).iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
            ["matmul", "gelu"]
        );
        assert!((r.ops[1].share_pct - 30.0).abs() < 1e-9);
        assert_eq!(r.find(" GELU ").map(|(i, _)| i), Some(1));
    }

    #[test]
    fn a_cuda_report_ranks_by_self_cuda() {
        // Sorted by CUDA time; the CPU column is in another order, which is fine.
        let text = report(
            "cuda",
            &[
                ("matmul", 50.0, Some(800.0)),
                ("gelu", 90.0, Some(150.0)),
                ("add", 10.0, Some(50.0)),
            ],
            150.0,
            Some(1000.0),
        );
        let r = ProfileReport::parse(&text, "report.json").unwrap();
        assert_eq!(r.ops[0].share_pct, 80.0);
    }

    #[test]
    fn an_unsorted_ranking_is_tampered() {
        let text = report(
            "cpu",
            &[("gelu", 300.0, None), ("matmul", 600.0, None)],
            900.0,
            None,
        );
        let p = ProfileReport::parse(&text, "report.json").unwrap_err();
        assert_eq!(p.kind, ProblemKind::Tampered);
        assert!(p.message.contains("ranking contradicts"), "{}", p.message);
    }

    #[test]
    fn the_step_row_is_not_an_op_and_other_sort_keys_are_honoured() {
        // Sorted by total CPU time (declared), ranked by self time for grading.
        let text = report(
            "cpu",
            &[
                ("ProfilerStep*", 50.0, None),
                ("gelu", 300.0, None),
                ("matmul", 650.0, None),
            ],
            1000.0,
            None,
        )
        .replace(
            "\"sort_by\":\"self_cpu_time_total\"",
            "\"sort_by\":\"count\"",
        );
        let r = ProfileReport::parse(&text, "report.json").unwrap();
        assert_eq!(
            r.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(),
            ["matmul", "gelu"]
        );
        assert!((r.ops[0].share_pct - 65.0).abs() < 1e-9);
    }

    #[test]
    fn totals_that_disagree_are_tampered() {
        let text = report(
            "cpu",
            &[("matmul", 600.0, None), ("gelu", 300.0, None)],
            2000.0,
            None,
        );
        let p = ProfileReport::parse(&text, "report.json").unwrap_err();
        assert!(p.message.contains("totals.self_cpu_us"), "{}", p.message);
    }

    #[test]
    fn shares_that_do_not_add_up_are_tampered() {
        let text = report(
            "cpu",
            &[("matmul", 600.0, None), ("gelu", 300.0, None)],
            900.0,
            None,
        )
        .replace("66.66666666666666", "76.6");
        let p = ProfileReport::parse(&text, "report.json").unwrap_err();
        assert_eq!(p.kind, ProblemKind::Tampered);
    }

    #[test]
    fn a_cuda_run_without_cuda_times_is_rejected() {
        let text = report("cuda", &[("matmul", 600.0, None)], 600.0, None);
        assert!(ProfileReport::parse(&text, "report.json").is_err());
    }

    /// The committed CPU fixture (a real run), edited by `edit`.
    fn fixture_edited(edit: impl FnOnce(&mut serde_json::Value)) -> Result<ProfileReport, Problem> {
        let mut v: serde_json::Value = serde_json::from_str(include_str!(
            "../../../grader/tests/fixtures/reports/cpu-b1-t8-stock-mlp.json"
        ))
        .unwrap();
        edit(&mut v);
        ProfileReport::parse(&v.to_string(), "report.json")
    }

    fn row_named<'a>(v: &'a mut serde_json::Value, name: &str) -> &'a mut serde_json::Value {
        v["rows"]
            .as_array_mut()
            .unwrap()
            .iter_mut()
            .find(|r| r["name"] == name)
            .unwrap()
    }

    #[test]
    fn the_reading_is_read_as_written_and_checked_against_the_rule() {
        let r = fixture_edited(|_| {}).unwrap();
        assert_eq!(r.reading_thresholds, Some(Thresholds::DEFAULT));
        // gelu's bound is memory, yet at 2% of its roofline the table read a slow kernel.
        let gelu = r.find("gelu").unwrap().1;
        assert_eq!(
            (gelu.roofline.as_ref().unwrap().bound, gelu.reading),
            (Bound::Memory, Some(Reading::SlowKernel))
        );
        assert_eq!(
            r.find("split_heads").unwrap().1.reading,
            None,
            "no work, no roofline, no reading"
        );

        let edited = fixture_edited(|v| row_named(v, "gelu")["reading"] = "memory-bound".into())
            .unwrap_err();
        assert!(edited.message.contains("row 3 (`gelu`) reads \"memory-bound\", but its roofline columns read \"slow-kernel\""), "{}", edited.message);
        let missing = fixture_edited(|v| row_named(v, "gelu")["reading"] = serde_json::Value::Null)
            .unwrap_err();
        assert!(
            missing
                .message
                .contains("has roofline columns but no reading"),
            "{}",
            missing.message
        );
        let invented =
            fixture_edited(|v| row_named(v, "split_heads")["reading"] = "launch-overhead".into())
                .unwrap_err();
        assert!(
            invented
                .message
                .contains("without roofline columns to read it from"),
            "{}",
            invented.message
        );
        let unread = fixture_edited(|v| {
            v.as_object_mut()
                .unwrap()
                .remove("reading_thresholds")
                .map(drop)
                .unwrap()
        })
        .unwrap_err();
        assert!(
            unread.message.contains("records no reading_thresholds"),
            "{}",
            unread.message
        );
        for p in [edited, missing, invented, unread] {
            assert_eq!(p.kind, crate::problem::ProblemKind::Tampered);
        }
    }

    #[test]
    fn a_report_read_with_other_thresholds_is_checked_with_those() {
        // With a launch line at 400 µs a call, gelu's 348 µs calls are launch overhead: a report
        // that says so, and records the thresholds, is honest.
        let r = fixture_edited(|v| {
            v["reading_thresholds"]["launch_overhead_below_us"] = 400.0.into();
            for name in ["gelu", "attn_qk", "attn_v"] {
                row_named(v, name)["reading"] = "launch-overhead".into();
            }
            row_named(v, "matmul")["reading"] = "memory-bound".into();
        })
        .unwrap();
        assert_eq!(
            r.find("gelu").unwrap().1.reading,
            Some(Reading::LaunchOverhead)
        );
    }

    #[test]
    fn the_previous_schema_is_refused_with_the_way_out() {
        let text = include_str!("../../../grader/tests/fixtures/reports/cpu-b1-t8-stock-mlp.json")
            .replace("profiler-report/7", "profiler-report/5");
        let p = ProfileReport::parse(&text, "report.json").unwrap_err();
        assert!(p.message.contains("\"profiler-report/5\", from before each row said the type of the values it streamed"), "{}", p.message);
        assert!(p.next_step.contains("`course run`"), "{}", p.next_step);
    }

    #[test]
    fn wrong_types_name_line_and_column() {
        let p = ProfileReport::parse("{\n \"schema\": 3\n}", "report.json").unwrap_err();
        assert_eq!(p.kind, ProblemKind::WrongType);
        assert_eq!(p.location.unwrap().line, Some(2));
    }
}
