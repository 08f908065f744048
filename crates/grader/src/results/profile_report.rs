//! The profiler's `report.json` (schema `profiler-report/1`, documented in
//! crates/profiler/REPORT.md), and its consistency checks.
//!
//! Device-aware: a CPU run ranks ops by self CPU time, a CUDA run by self CUDA time; the
//! shares, the ranking and the totals are all checked in the device's column.

use super::{close, parse_json, tampered};
use crate::problem::Problem;
use serde::{Deserialize, Serialize};

pub const SCHEMA: &str = "profiler-report/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Device {
    Cpu,
    Cuda,
}

impl Device {
    /// The column a run on this device is ranked by, as people say it.
    pub fn column(self) -> &'static str {
        match self {
            Device::Cpu => "self CPU time",
            Device::Cuda => "self CUDA time",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Device::Cpu => "CPU",
            Device::Cuda => "CUDA",
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
struct RawReport {
    schema: String,
    device: Device,
    #[serde(default)]
    sort_by: Option<String>,
    #[serde(default)]
    environment: Option<RawEnvironment>,
    totals: RawTotals,
    rows: Vec<RawRow>,
}

#[derive(Debug, Clone, Deserialize)]
struct RawEnvironment {
    #[serde(default)]
    build: Option<String>,
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
}

/// One row as the device ranks it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RankedOp {
    pub name: String,
    /// Self time in the device's column, in µs.
    pub self_us: f64,
    /// Share of the sum of self times in the device's column, in percent.
    pub share_pct: f64,
}

/// A consistent profile, ranked by the device's self time.
#[derive(Debug, Clone)]
pub struct ProfileReport {
    pub file: String,
    pub device: Device,
    /// "debug" when the profiled program was built without optimisations.
    pub build: Option<String>,
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

const REGENERATE: &str = "regenerate it by running the exercise again (`course run`); never edit results by hand";

// Tolerances for the consistency checks. Shares are printed rounded and times are summed in
// floating point, so exact equality would reject honest files.
const SHARE_SUM_TOLERANCE_PCT: f64 = 1.0;
const SHARE_ROW_TOLERANCE_PCT: f64 = 0.5;
const TOTALS_REL_TOLERANCE: f64 = 0.01;
const TOTALS_ABS_TOLERANCE_US: f64 = 1.0;

impl ProfileReport {
    /// Parse and check a report; any inconsistency is a `Tampered` problem.
    pub fn parse(text: &str, file: &str) -> Result<ProfileReport, Problem> {
        let raw: RawReport = parse_json(text, file, "profiler report (profiler-report/1)", REGENERATE)?;
        if raw.schema != SCHEMA {
            return Err(tampered(file, format!("the schema is {:?}, but the grader reads {SCHEMA:?}", raw.schema), REGENERATE));
        }
        if raw.rows.is_empty() {
            return Err(tampered(file, "the report has no rows".into(), REGENERATE));
        }
        let device = raw.device;
        let mut ops = Vec::with_capacity(raw.rows.len());
        for (index, row) in raw.rows.iter().enumerate() {
            let (self_us, pct) = match device {
                Device::Cpu => (Some(row.self_cpu_us), Some(row.self_cpu_pct)),
                Device::Cuda => (row.self_cuda_us, row.self_cuda_pct),
            };
            let (Some(self_us), Some(share_pct)) = (self_us, pct) else {
                return Err(tampered(
                    file,
                    format!("row {} (`{}`) of a CUDA run has no self CUDA time", index + 1, row.name),
                    REGENERATE,
                ));
            };
            if !self_us.is_finite() || self_us < 0.0 || !share_pct.is_finite() || share_pct < 0.0 || !row.self_cpu_us.is_finite() {
                return Err(tampered(
                    file,
                    format!("row {} (`{}`) has a negative or non-finite time or share", index + 1, row.name),
                    REGENERATE,
                ));
            }
            ops.push(RankedOp { name: row.name.clone(), self_us, share_pct });
        }
        let column = device.column();
        // The rows must be sorted by the key the report declares (by default the device's self
        // time); a row above one with a larger value is a ranking that contradicts the rows.
        let default_key = match device {
            Device::Cpu => "self_cpu_time_total",
            Device::Cuda => "self_cuda_time_total",
        };
        let sort_by = raw.sort_by.as_deref().unwrap_or(default_key);
        let values: Vec<Option<f64>> = raw.rows.iter().map(|r| sort_value(r, sort_by)).collect();
        if values.iter().all(Option::is_some) {
            for index in 1..values.len() {
                let (above, below) = (values[index - 1].unwrap_or(0.0), values[index].unwrap_or(0.0));
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
                return Err(tampered(file, format!("the {column} shares add up to {sum_pct:.2}%, not 100%"), REGENERATE));
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
        if !close(raw.totals.self_cpu_us, cpu_sum, TOTALS_ABS_TOLERANCE_US, TOTALS_REL_TOLERANCE) {
            return Err(tampered(
                file,
                format!("totals.self_cpu_us is {} µs, but the rows add up to {cpu_sum:.1} µs", raw.totals.self_cpu_us),
                REGENERATE,
            ));
        }
        if device == Device::Cuda {
            match raw.totals.self_cuda_us {
                Some(total) if close(total, sum_us, TOTALS_ABS_TOLERANCE_US, TOTALS_REL_TOLERANCE) => {}
                Some(total) => {
                    return Err(tampered(
                        file,
                        format!("totals.self_cuda_us is {total} µs, but the rows add up to {sum_us:.1} µs"),
                        REGENERATE,
                    ))
                }
                None => return Err(tampered(file, "a CUDA run without totals.self_cuda_us".into(), REGENERATE)),
            }
        }
        // Rank by the device's self time whatever the table's order; ties by name.
        ops.retain(|op| !is_step_row(&op.name));
        ops.sort_by(|a, b| b.self_us.total_cmp(&a.self_us).then_with(|| a.name.cmp(&b.name)));
        Ok(ProfileReport {
            file: file.to_string(),
            device,
            build: raw.environment.and_then(|e| e.build),
            ops,
        })
    }

    /// The first row with this name (op names compared as written, ignoring case and spaces).
    pub fn find(&self, name: &str) -> Option<(usize, &RankedOp)> {
        let wanted = op_key(name);
        self.ops.iter().enumerate().find(|(_, op)| op_key(&op.name) == wanted)
    }

    pub fn top(&self, n: usize) -> &[RankedOp] {
        &self.ops[..n.min(self.ops.len())]
    }
}

/// How op names are compared: case and surrounding whitespace and backticks do not matter.
pub fn op_key(name: &str) -> String {
    name.trim().trim_matches('`').trim().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemKind;

    fn report(device: &str, rows: &[(&str, f64, Option<f64>)], total_cpu: f64, total_cuda: Option<f64>) -> String {
        let cpu_sum: f64 = rows.iter().map(|r| r.1).sum();
        let cuda_sum: f64 = rows.iter().filter_map(|r| r.2).sum();
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, cpu, cuda)| {
                serde_json::json!({
                    "name": name, "calls": 1, "self_cpu_us": cpu, "cpu_total_us": cpu,
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
        let text = report("cpu", &[("matmul", 600.0, None), ("gelu", 300.0, None), ("add", 100.0, None)], 1000.0, None);
        let r = ProfileReport::parse(&text, "report.json").unwrap();
        assert_eq!(r.device, Device::Cpu);
        assert_eq!(r.top(2).iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["matmul", "gelu"]);
        assert!((r.ops[1].share_pct - 30.0).abs() < 1e-9);
        assert_eq!(r.find(" GELU ").map(|(i, _)| i), Some(1));
    }

    #[test]
    fn a_cuda_report_ranks_by_self_cuda() {
        // Sorted by CUDA time; the CPU column is in another order, which is fine.
        let text = report("cuda", &[("matmul", 50.0, Some(800.0)), ("gelu", 90.0, Some(150.0)), ("add", 10.0, Some(50.0))], 150.0, Some(1000.0));
        let r = ProfileReport::parse(&text, "report.json").unwrap();
        assert_eq!(r.ops[0].share_pct, 80.0);
    }

    #[test]
    fn an_unsorted_ranking_is_tampered() {
        let text = report("cpu", &[("gelu", 300.0, None), ("matmul", 600.0, None)], 900.0, None);
        let p = ProfileReport::parse(&text, "report.json").unwrap_err();
        assert_eq!(p.kind, ProblemKind::Tampered);
        assert!(p.message.contains("ranking contradicts"), "{}", p.message);
    }

    #[test]
    fn the_step_row_is_not_an_op_and_other_sort_keys_are_honoured() {
        // Sorted by total CPU time (declared), ranked by self time for grading.
        let text = report("cpu", &[("ProfilerStep*", 50.0, None), ("gelu", 300.0, None), ("matmul", 650.0, None)], 1000.0, None)
            .replace("\"sort_by\":\"self_cpu_time_total\"", "\"sort_by\":\"count\"");
        let r = ProfileReport::parse(&text, "report.json").unwrap();
        assert_eq!(r.ops.iter().map(|o| o.name.as_str()).collect::<Vec<_>>(), ["matmul", "gelu"]);
        assert!((r.ops[0].share_pct - 65.0).abs() < 1e-9);
    }

    #[test]
    fn totals_that_disagree_are_tampered() {
        let text = report("cpu", &[("matmul", 600.0, None), ("gelu", 300.0, None)], 2000.0, None);
        let p = ProfileReport::parse(&text, "report.json").unwrap_err();
        assert!(p.message.contains("totals.self_cpu_us"), "{}", p.message);
    }

    #[test]
    fn shares_that_do_not_add_up_are_tampered() {
        let text = report("cpu", &[("matmul", 600.0, None), ("gelu", 300.0, None)], 900.0, None).replace("66.66666666666666", "76.6");
        let p = ProfileReport::parse(&text, "report.json").unwrap_err();
        assert_eq!(p.kind, ProblemKind::Tampered);
    }

    #[test]
    fn a_cuda_run_without_cuda_times_is_rejected() {
        let text = report("cuda", &[("matmul", 600.0, None)], 600.0, None);
        assert!(ProfileReport::parse(&text, "report.json").is_err());
    }

    #[test]
    fn wrong_types_name_line_and_column() {
        let p = ProfileReport::parse("{\n \"schema\": 3\n}", "report.json").unwrap_err();
        assert_eq!(p.kind, ProblemKind::WrongType);
        assert_eq!(p.location.unwrap().line, Some(2));
    }
}
