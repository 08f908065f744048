//! The text table, in the shape of PyTorch's `prof.key_averages().table()`: right-aligned
//! columns two spaces apart, dashed rules, automatic us/ms/s units, and the
//! `Self CPU time total` / `Self CUDA time total` footers.
//!
//! With ceilings, a second block follows with the same rows in the same order: each row's
//! share again, its kernel, its roofline columns and its reading ([`crate::reading`]). Kept
//! apart from the time columns, a CPU run's table stays within about 115 columns a block,
//! so a row reads across on one line of an ordinary terminal.

use crate::aggregate::{SortBy, TableOptions};
use crate::environment::unoptimised_build;
use crate::memory::format_bytes;
use crate::reading::Thresholds;
use crate::report::{Report, ReportRow};
use crate::roofline::{giga_per_second, Ceilings};

/// Longest name shown before it is cut with `...` (PyTorch's default is the same).
const MAX_NAME_WIDTH: usize = 55;
const MAX_SHAPES_WIDTH: usize = 80;
const MIN_COLUMN: usize = 12;

/// What the profiler does with a report it reads back: print the table the profile printed.
pub trait ReportTable {
    /// The table of a report read back from disk: the same table the profile printed
    /// (roofline columns when the report has ceilings, its warnings under the footers).
    fn table(&self, row_limit: Option<usize>, with_flops: bool) -> String;
}

impl ReportTable for Report {
    fn table(&self, row_limit: Option<usize>, with_flops: bool) -> String {
        render(self, row_limit, with_flops)
    }
}

/// Format microseconds the way PyTorch does: three decimals in us, ms or s.
pub fn format_us(us: f64) -> String {
    if us >= 1e6 {
        format!("{:.3}s", us / 1e6)
    } else if us >= 1e3 {
        format!("{:.3}ms", us / 1e3)
    } else {
        format!("{us:.3}us")
    }
}

fn format_pct(p: f64) -> String {
    format!("{p:.2}%")
}

fn cut(s: &str, width: usize) -> String {
    if s.chars().count() <= width {
        s.to_string()
    } else {
        let kept: String = s.chars().take(width.saturating_sub(3)).collect();
        format!("{kept}...")
    }
}

/// A rate from [`giga_per_second`], or a blank cell.
fn rate_cell(count: Option<u64>, us: f64) -> String {
    giga_per_second(count, us)
        .map(|r| format!("{r:.2}"))
        .unwrap_or_default()
}

/// The footer lines that say what the roofline columns were measured against.
fn ceilings_footer(c: &Ceilings, on_device: bool) -> String {
    format!(
        "Ceilings ({}, {} threads, kernels {}, {} build): read bandwidth {:.2} GB/s ({}); \
         peak {:.2} GFLOP/s ({}); ridge at {:.2} FLOP/B.\n\
         Roofline % = achieved GFLOP/s / min(peak, bandwidth x FLOP/B), rates over each row's total {}; \
         Bound: the lower roof at the row's FLOP/B.\n",
        c.device,
        c.threads,
        c.kernels,
        c.build,
        c.mem_read_gbps,
        c.bandwidth_how,
        c.peak_gflops,
        c.peak_how,
        c.ridge_intensity(),
        if on_device { "CUDA time (stream time)" } else { "CPU time" },
    )
}

/// The footer line that says how the Reading column was read, with the report's thresholds.
fn reading_footer(t: &Thresholds, on_device: bool) -> String {
    format!(
        "Reading, the first that holds: compute-bound (compute roof the lower, over {}% of it); memory-bound (over {}% of \
         the bandwidth); launch overhead (under {}us of self {} time a call); slow kernel (under {}% of its roofline); \
         else the lower roof, or slow kernel under {}% of the bandwidth. No roofline: the row declared no work.\n",
        t.near_roofline_above_pct,
        t.memory_above_pct,
        t.launch_overhead_below_us,
        if on_device { "CUDA" } else { "CPU" },
        t.slow_kernel_below_pct,
        t.not_memory_below_pct,
    )
}

/// Which columns of a block get 4 characters of air and a minimum width, as PyTorch's do.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Widths {
    /// PyTorch's: every column at least [`MIN_COLUMN`] wide, text columns 4 wider.
    PyTorch,
    /// As wide as the header or the widest cell; the first column as wide as `name_width`.
    Tight { name_width: usize },
}

/// One block: its rules, header and rows; returns the text and the first column's width.
fn block(
    header: &[&str],
    cells: &[Vec<String>],
    text_columns: &[usize],
    widths: Widths,
) -> (String, usize) {
    let widths: Vec<usize> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let widest = cells
                .iter()
                .map(|row| row[i].chars().count())
                .max()
                .unwrap_or(0)
                .max(h.len());
            match widths {
                Widths::PyTorch if text_columns.contains(&i) => (widest + 4).max(MIN_COLUMN),
                Widths::PyTorch => widest.max(MIN_COLUMN),
                Widths::Tight { name_width } if i == 0 => widest.max(name_width),
                Widths::Tight { .. } => widest,
            }
        })
        .collect();
    let rule: String = widths
        .iter()
        .map(|w| format!("{}  ", "-".repeat(*w)))
        .collect();
    let line = |cells: &[&str]| -> String {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:>w$}  "))
            .collect()
    };
    let mut out = String::new();
    out.push_str(&rule);
    out.push('\n');
    out.push_str(&line(header));
    out.push('\n');
    out.push_str(&rule);
    out.push('\n');
    for c in cells {
        let refs: Vec<&str> = c.iter().map(String::as_str).collect();
        out.push_str(&line(&refs));
        out.push('\n');
    }
    out.push_str(&rule);
    out.push('\n');
    (out, widths[0])
}

/// Render `report` as a table, its warnings under the footers. With ceilings a second block
/// holds the roofline columns and the reading; without them `with_flops` adds GFLOP/s and
/// GB/s to the first.
pub fn render(report: &Report, row_limit: Option<usize>, with_flops: bool) -> String {
    let device = report.has_device_times();
    let roofline = report.ceilings.is_some();
    let with_flops = with_flops && !roofline;
    let shapes = report.grouped_by_input_shape;
    let total_self_cpu = report.totals.self_cpu_us;
    let rows: Vec<&ReportRow> = report
        .rows
        .iter()
        .take(row_limit.unwrap_or(usize::MAX))
        .collect();

    let mut header: Vec<&str> = vec![
        "Name",
        "Self CPU %",
        "Self CPU",
        "CPU total %",
        "CPU total",
        "CPU time avg",
    ];
    if device {
        header.extend(["Self CUDA", "Self CUDA %", "CUDA total", "CUDA time avg"]);
    }
    // PyTorch's memory columns, then the course's own count of allocations.
    let memory = report.memory.as_ref();
    let cuda_memory = memory.is_some() && report.device == crate::DeviceKind::Cuda;
    if memory.is_some() {
        header.extend(["CPU Mem", "Self CPU Mem"]);
        if cuda_memory {
            header.extend(["CUDA Mem", "Self CUDA Mem"]);
        }
        header.push("Self Allocs");
    }
    header.push("# of Calls");
    if with_flops {
        header.extend(["GFLOP/s", "GB/s"]);
    }
    if shapes {
        header.push("Input Shapes");
    }

    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let calls = r.calls.max(1) as f64;
            let cpu_total_pct = if total_self_cpu > 0.0 {
                100.0 * r.cpu_total_us / total_self_cpu
            } else {
                0.0
            };
            let mut c = vec![
                cut(&r.name, MAX_NAME_WIDTH),
                format_pct(r.self_cpu_pct),
                format_us(r.self_cpu_us),
                format_pct(cpu_total_pct),
                format_us(r.cpu_total_us),
                format_us(r.cpu_total_us / calls),
            ];
            if device {
                let self_cuda = r.self_cuda_us.unwrap_or(0.0);
                let cuda_total = r.cuda_total_us.unwrap_or(0.0);
                c.extend([
                    format_us(self_cuda),
                    format_pct(r.self_cuda_pct.unwrap_or(0.0)),
                    format_us(cuda_total),
                    format_us(cuda_total / calls),
                ]);
            }
            if memory.is_some() {
                c.push(r.cpu_mem_bytes.map(format_bytes).unwrap_or_default());
                c.push(r.self_cpu_mem_bytes.map(format_bytes).unwrap_or_default());
                if cuda_memory {
                    c.extend(["not measured".to_string(), "not measured".to_string()]);
                }
                c.push(r.self_allocs.map(|n| n.to_string()).unwrap_or_default());
            }
            c.push(r.calls.to_string());
            if with_flops {
                // Work happens over the whole range: rate over its total time, device time
                // when the device did the work (as the roofline's rates are taken).
                let time = if device {
                    r.cuda_total_us.unwrap_or(0.0)
                } else {
                    r.cpu_total_us
                };
                c.push(rate_cell(r.flops, time));
                c.push(rate_cell(r.bytes, time));
            }
            if shapes {
                c.push(cut(
                    r.input_shapes.as_deref().unwrap_or("[]"),
                    MAX_SHAPES_WIDTH,
                ));
            }
            c
        })
        .collect();
    let text_columns = if shapes {
        vec![0, header.len() - 1]
    } else {
        vec![0]
    };
    let (times, name_width) = block(&header, &cells, &text_columns, Widths::PyTorch);

    let mut out = String::new();
    if unoptimised_build() {
        out.push_str("Note: built without optimisations (opt-level 0): these times are not representative.\n");
    }
    out.push_str(&times);
    out.push_str(&format!(
        "Self CPU time total: {}\n",
        format_us(total_self_cpu)
    ));
    if let Some(cuda) = report.totals.self_cuda_us {
        // Event pairs on the stream time the stream, idle waits for launches included: not
        // the kernel time a CUPTI-based profiler sums. Say so where the figure is printed.
        out.push_str(&format!(
            "Self CUDA time total (stream time, waits for launches included; not kernel time): {}\n",
            format_us(cuda)
        ));
    }
    if let Some(m) = memory {
        out.push_str(&memory_footer(m, report.active_steps));
    }
    let steps = report.active_steps;
    out.push_str(&format!(
        "Totals over {steps} active step{} (one step: total / {steps}); view: {}; sorted by {}{}.\n",
        if steps == 1 { "" } else { "s" },
        report.view,
        report.sort_by,
        match (row_limit, report.rows.len()) {
            (Some(n), all) if n < all => format!("; first {n} of {all} rows"),
            _ => String::new(),
        }
    ));
    if let Some(line) = model_line(&report.environment) {
        out.push_str(&line);
    }
    if matches!(
        report.sort_by,
        SortBy::SelfCudaTimeTotal | SortBy::CudaTimeTotal
    ) && !device
    {
        out.push_str("No CUDA times were recorded: rows are sorted by the CPU times instead.\n");
    }
    match (report.sort_by, memory) {
        (SortBy::SelfCudaMemoryUsage | SortBy::SelfDeviceMemoryUsage, Some(_)) => out.push_str(
            "CUDA memory is not measured (candle exposes no allocation hook): rows are sorted by Self CPU Mem instead.\n",
        ),
        (key, None) if key.is_memory() => out.push_str(
            "No memory was recorded (profile with memory on: `--profile-memory`): rows are sorted by name.\n",
        ),
        _ => {}
    }
    if let Some(c) = &report.ceilings {
        out.push('\n');
        out.push_str(&roofline_block(&rows, device, name_width));
        out.push_str(&ceilings_footer(c, device));
        out.push_str(&reading_footer(&report.reading_thresholds, device));
        let env = &report.environment;
        if c.threads != env.threads || c.build != env.build() {
            out.push_str(&format!(
                "Warning: the ceilings were measured with {} threads in a {} build, this profile ran with {} threads \
                 in a {} build: its Roofline % is against another configuration's roofs.\n",
                c.threads,
                c.build,
                env.threads,
                env.build()
            ));
        }
    }
    for w in &report.warnings {
        out.push_str(&format!("Warning: {w}\n"));
    }
    out
}

/// The memory footer: the totals, the peak, what the allocation column is, and on CUDA what
/// is not measured.
fn memory_footer(m: &formats::report::ReportMemory, steps: usize) -> String {
    let during = if m.peak_during == crate::STEP_ROW {
        "outside every op".to_string()
    } else {
        format!("during {}", m.peak_during)
    };
    let mut out = format!(
        "Self CPU Mem total: {} in {} allocations (compute threads; other threads allocated {} in {} allocations, in no row).\n\
         Peak live memory: {} ({during}, step {}; every counted block, weights included).\n\
         CPU Mem: bytes allocated minus bytes freed inside the op, children included (Self: without them), \
         summed over the {steps} active step{}; Self Allocs: allocations made inside the op, the course's own column.\n",
        format_bytes(m.cpu_mem_bytes),
        m.allocs,
        format_bytes(m.other_threads_alloc_bytes as i64),
        m.other_threads_allocs,
        format_bytes(m.peak_bytes),
        m.peak_step,
        if steps == 1 { "" } else { "s" },
    );
    if let Some(why) = &m.cuda_not_measured {
        out.push_str(&format!("CUDA Mem: not measured on CUDA ({why}).\n"));
    }
    out
}

/// The second block: the rows again, by name and share, with their kernel, roofline columns
/// and reading.
fn roofline_block(rows: &[&ReportRow], device: bool, name_width: usize) -> String {
    let header = [
        "Name",
        if device { "Self CUDA %" } else { "Self CPU %" },
        "Kernel",
        "GFLOP/s",
        "GB/s",
        "FLOP/B",
        "Roofline %",
        "Bound",
        "Reading",
    ];
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let share = if device {
                r.self_cuda_pct.unwrap_or(0.0)
            } else {
                r.self_cpu_pct
            };
            let mut c = vec![
                cut(&r.name, MAX_NAME_WIDTH),
                format_pct(share),
                r.kernel.clone().unwrap_or_default(),
            ];
            match &r.roofline {
                Some(x) => c.extend([
                    format!("{:.2}", x.gflops_per_s),
                    format!("{:.2}", x.gbytes_per_s),
                    format!("{:.2}", x.intensity),
                    format!("{:.1}%", x.pct_of_roofline),
                    x.bound.to_string(),
                ]),
                None => c.extend(std::iter::repeat_n(String::new(), 5)),
            }
            // A reading is only ever taken from a roofline: without one, say so.
            c.push(match (&r.roofline, r.reading) {
                (_, Some(x)) => x.label().to_string(),
                (None, None) => "no roofline".to_string(),
                (Some(_), None) => String::new(),
            });
            c
        })
        .collect();
    block(&header, &cells, &[0], Widths::Tight { name_width }).0
}

impl crate::recording::Profile {
    /// The key-averages table, PyTorch style.
    pub fn table(&self, options: TableOptions) -> String {
        let report = self.report_with(options);
        render(
            &report,
            options.row_limit,
            options.with_flops || self.with_flops,
        )
    }
}

/// What ran and how its rows were made, where the caller said (`Environment::model`, `tier`).
fn model_line(env: &crate::Environment) -> Option<String> {
    let model = env.model.as_deref().unwrap_or("the model");
    let how = match env.tier.as_deref()? {
        "engine" => "the engine's ops, one row each, with a roofline where the op declares its work".to_string(),
        "spans" => "the tracing spans the model opens, without work counts, so without a roofline (its time \
                    outside every span is a row of its own)"
            .to_string(),
        other => format!("tier {other}"),
    };
    Some(format!("Model: {model}; rows: {how}.\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_line_says_how_the_rows_were_made() {
        let mut env = crate::Environment::capture(crate::Target::default());
        assert_eq!(model_line(&env), None, "nothing said, nothing printed");
        env.model = Some("m.gguf".into());
        env.tier = Some("spans".into());
        assert!(model_line(&env).unwrap().starts_with(
            "Model: m.gguf; rows: the tracing spans the model opens, without work counts"
        ));
        env.tier = Some("engine".into());
        assert!(model_line(&env)
            .unwrap()
            .contains("a roofline where the op declares its work"));
    }

    #[test]
    fn units_switch_like_pytorch() {
        assert_eq!(format_us(0.5), "0.500us");
        assert_eq!(format_us(999.9994), "999.999us");
        assert_eq!(format_us(1_500.0), "1.500ms");
        assert_eq!(format_us(2_345_678.0), "2.346s");
    }

    #[test]
    fn long_names_are_cut() {
        assert_eq!(cut("abcdef", 5), "ab...");
        assert_eq!(cut("abc", 5), "abc");
    }
}
