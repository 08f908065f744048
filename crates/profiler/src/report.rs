//! `report.json`: the versioned, documented form of a profile's table that the grader
//! reads. Its types, schema and migration message are the `formats` crate's
//! (`formats::report`); the schema is described in `REPORT.md` next to this crate's
//! `Cargo.toml`. Here: building a report from a profile, and printing one read back.

use formats::report::RowRoofline;
pub use formats::report::{CudaTimeBasis, ReportRow, Totals, SCHEMA};

use crate::aggregate::{KeyAverages, SortBy, TableOptions, View};
use crate::reading::read_row;
use crate::recording::Profile;
use crate::roofline::{row_roofline, TimeBasis};

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

/// report.json as the profiler writes and reads it: its sort key and view are the table's
/// options, written by name.
pub type Report = formats::report::Report<SortBy, View>;

/// Build a report from key averages of `profile`.
fn from_key_averages(profile: &Profile, k: &KeyAverages) -> Report {
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
                cpu_mem_bytes: r.cpu_mem,
                self_cpu_mem_bytes: r.self_cpu_mem,
                allocs: r.allocs,
                self_allocs: r.self_allocs,
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
        memory: memory(profile),
        rows,
    }
}

/// The file-wide memory figures, when the profile recorded memory.
fn memory(profile: &Profile) -> Option<formats::report::ReportMemory> {
    if !profile.has_memory() {
        return None;
    }
    let (peak_bytes, peak_step, peak_during) = profile.memory_peak()?;
    let steps = profile.steps.iter().filter_map(|s| s.memory.as_ref());
    let (mut cpu_mem_bytes, mut allocs, mut other_bytes, mut other_allocs) =
        (0i64, 0u64, 0u64, 0u64);
    for m in steps {
        cpu_mem_bytes += m.totals.net();
        allocs += m.totals.allocs;
        other_bytes += m.other_threads.alloc_bytes;
        other_allocs += m.other_threads.allocs;
    }
    Some(formats::report::ReportMemory {
        peak_bytes,
        peak_step,
        peak_during: peak_during.to_string(),
        cpu_mem_bytes,
        allocs,
        other_threads_alloc_bytes: other_bytes,
        other_threads_allocs: other_allocs,
        cuda_not_measured: (profile.device == crate::DeviceKind::Cuda).then(|| {
            "candle exposes no allocation hook for CUDA memory: only the host's allocations are measured"
                .to_string()
        }),
    })
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
        from_key_averages(self, &k)
    }
}
