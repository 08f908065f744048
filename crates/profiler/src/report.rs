//! `report.json`: the versioned, documented form of a profile's table that the grader
//! reads. The schema is described in `REPORT.md` next to this crate's `Cargo.toml`.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::aggregate::{KeyAverages, SortBy, TableOptions, View};
use crate::device_timer::DeviceKind;
use crate::environment::Environment;
use crate::error::ProfilerError;
use crate::line::Line;
use crate::reading::{read_row, Reading, Thresholds};
use crate::recording::Profile;
use crate::roofline::{row_roofline, Ceilings, RowRoofline, TimeBasis};

/// The schema identifier written in every report. Bump the number on any incompatible
/// change and describe it in REPORT.md.
pub const SCHEMA: &str = "profiler-report/6";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema: String,
    pub device: DeviceKind,
    pub sort_by: SortBy,
    pub view: View,
    pub grouped_by_input_shape: bool,
    pub active_steps: usize,
    pub environment: Environment,
    pub totals: Totals,
    /// The measured ceilings the rows' rooflines are taken against; null without them.
    pub ceilings: Option<Ceilings>,
    /// The thresholds the rows' `reading`s were taken with (crate::reading).
    pub reading_thresholds: Thresholds,
    /// The profile's warnings (device timing failures, refused nested profilers).
    pub warnings: Vec<String>,
    pub rows: Vec<ReportRow>,
}

/// Microseconds summed over the active steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Σ self CPU time over the rows; equals `wall_us`.
    pub self_cpu_us: f64,
    /// Σ self CUDA time, or null without device timing.
    pub self_cuda_us: Option<f64>,
    /// What the CUDA times measure, or null without device timing.
    pub cuda_time_basis: Option<CudaTimeBasis>,
    /// Σ of the active steps' wall times.
    pub wall_us: f64,
}

/// What the CUDA columns measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CudaTimeBasis {
    /// The stream's time between two marks (a pair of CUDA events, or two synchronises):
    /// it includes the time the stream sat idle waiting for the host to launch the next
    /// kernel, so it is not kernel time (what CUPTI-based profilers such as PyTorch's sum).
    /// At small batch a GPU mostly waits for launches and this column looks like the CPU's.
    Stream,
}

/// One row; times in microseconds summed over the active steps, percentages of the
/// corresponding total of self times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportRow {
    pub name: String,
    /// The budget line the row is on (declared by the op that opened it, else by its name:
    /// [`crate::Line::of_undeclared`]).
    pub line: Line,
    pub input_shapes: Option<String>,
    pub calls: u64,
    pub self_cpu_us: f64,
    pub cpu_total_us: f64,
    pub self_cpu_pct: f64,
    pub self_cuda_us: Option<f64>,
    pub cuda_total_us: Option<f64>,
    pub self_cuda_pct: Option<f64>,
    pub flops: Option<u64>,
    pub bytes: Option<u64>,
    /// The kernel label(s) of the row's ranges, distinct labels sorted and joined by `+`.
    pub kernel: Option<String>,
    /// The type(s) of the values the row's ranges streamed, joined the same way.
    pub dtype: Option<String>,
    /// Achieved rates against the ceilings; null without ceilings, without declared work,
    /// or without time.
    pub roofline: Option<RowRoofline>,
    /// What holds the row back, read off its roofline with `reading_thresholds`; null without
    /// a roofline.
    pub reading: Option<Reading>,
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1_000.0
}

fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

impl Report {
    /// Build a report from key averages of `profile`.
    pub fn from_key_averages(profile: &Profile, k: &KeyAverages) -> Report {
        // Work happens over a row's whole range: rates divide by its total time, on the
        // device's clock when the device did the work (as the table's columns do).
        let on_device = k.self_device_total_ns.is_some();
        let basis = if on_device {
            TimeBasis::CudaStream
        } else {
            TimeBasis::Cpu
        };
        let roofline = |r: &crate::aggregate::Row| -> Option<RowRoofline> {
            let ceilings = profile.ceilings.as_ref()?;
            let time_ns = if on_device {
                r.device_total_ns?
            } else {
                r.cpu_total_ns
            };
            row_roofline(r.flops.unwrap_or(0), r.bytes?, us(time_ns), basis, ceilings)
        };
        // Launch overhead is judged by the self time a call in the run's own column.
        let us_per_call = |r: &crate::aggregate::Row| -> Option<f64> {
            let self_ns = if on_device {
                r.self_device_ns?
            } else {
                r.self_cpu_ns
            };
            (r.calls > 0).then(|| us(self_ns) / r.calls as f64)
        };
        let rows = k
            .rows
            .iter()
            .map(|r| {
                let roofline = roofline(r);
                let reading = read_row(
                    roofline.as_ref(),
                    us_per_call(r),
                    &profile.reading_thresholds,
                );
                ReportRow {
                    name: r.name.clone(),
                    line: r.line,
                    input_shapes: r.input_shapes.clone(),
                    calls: r.calls,
                    self_cpu_us: us(r.self_cpu_ns),
                    cpu_total_us: us(r.cpu_total_ns),
                    self_cpu_pct: pct(r.self_cpu_ns, k.self_cpu_total_ns),
                    self_cuda_us: r.self_device_ns.map(us),
                    cuda_total_us: r.device_total_ns.map(us),
                    self_cuda_pct: match (r.self_device_ns, k.self_device_total_ns) {
                        (Some(s), Some(t)) => Some(pct(s, t)),
                        _ => None,
                    },
                    flops: r.flops,
                    bytes: r.bytes,
                    kernel: r.kernel.clone(),
                    dtype: r.dtype.clone(),
                    roofline,
                    reading,
                }
            })
            .collect();
        Report {
            schema: SCHEMA.to_string(),
            device: profile.device,
            sort_by: k.sort_by,
            view: k.view,
            grouped_by_input_shape: k.grouped_by_input_shape,
            active_steps: k.active_steps,
            environment: profile.environment.clone(),
            totals: Totals {
                self_cpu_us: us(k.self_cpu_total_ns),
                self_cuda_us: k.self_device_total_ns.map(us),
                cuda_time_basis: on_device.then_some(CudaTimeBasis::Stream),
                wall_us: us(k.wall_ns),
            },
            ceilings: profile.ceilings.clone(),
            reading_thresholds: profile.reading_thresholds,
            warnings: profile.warnings.clone(),
            rows,
        }
    }

    /// The first `n` rows in sort order, leaving out the `ProfilerStep*` row: the "top ops"
    /// a learner writes down.
    pub fn top(&self, n: usize) -> Vec<&ReportRow> {
        self.rows
            .iter()
            .filter(|r| r.name != crate::aggregate::STEP_ROW)
            .take(n)
            .collect()
    }

    /// Whether the rows carry CUDA times.
    pub fn has_device_times(&self) -> bool {
        self.totals.self_cuda_us.is_some()
    }

    pub fn to_json(&self) -> String {
        // A report holds only strings, numbers and options: serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }

    pub fn from_json(text: &str, path: &Path) -> Result<Report, ProfilerError> {
        // Check the schema first so an old or foreign file gets the clearer message.
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|source| ProfilerError::Parse {
                path: path.to_path_buf(),
                source,
            })?;
        let found = value
            .get("schema")
            .and_then(|s| s.as_str())
            .unwrap_or("(none)");
        if found != SCHEMA {
            return Err(ProfilerError::Schema {
                path: path.to_path_buf(),
                found: found.to_string(),
                expected: SCHEMA,
            });
        }
        serde_json::from_value(value).map_err(|source| ProfilerError::Parse {
            path: path.to_path_buf(),
            source,
        })
    }

    pub fn write_json(&self, path: impl AsRef<Path>) -> Result<(), ProfilerError> {
        let path = path.as_ref();
        std::fs::write(path, self.to_json() + "\n").map_err(|source| ProfilerError::Write {
            path: path.to_path_buf(),
            source,
        })
    }

    pub fn read_json(path: impl AsRef<Path>) -> Result<Report, ProfilerError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| ProfilerError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Report::from_json(&text, path)
    }
}

impl Profile {
    /// The report with default options: op view, sorted by self CPU time, not grouped by
    /// shape.
    pub fn report(&self) -> Report {
        self.report_with(TableOptions::default())
    }

    /// The report for a view, sort key and grouping (`row_limit` is ignored: a report holds
    /// every row, so its percentages add up to 100).
    pub fn report_with(&self, options: TableOptions) -> Report {
        let k = self.key_averages(options.view, options.group_by_input_shape, options.sort_by);
        Report::from_key_averages(self, &k)
    }
}
