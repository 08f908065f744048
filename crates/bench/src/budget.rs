//! `course bench budget`: a profile read as a budget, drawn as a bar chart.
//!
//! The book's chapter "Reading a profile as a budget" splits one step into four lines:
//! matmuls, attention, activations and element-wise ops, and everything else. Which op is on
//! which line is not this module's to say: every row of a `report.json` carries its line (the
//! op declared it, `profiler::Line`). This module holds the chapter's illustrative (not
//! measured) 40 ms step ([`ILLUSTRATIVE`]), groups a real report by its rows' lines
//! ([`from_report`]) and draws both side by side ([`write_svg`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use plotters::coord::ranged1d::SegmentValue;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use profiler::{DeviceKind, Report, View};
use serde::Serialize;

/// One line of the budget: report.json's own, which every row carries (`line`).
pub use formats::line::Line;
use formats::line::ILLUSTRATIVE_STEP_MS;

fn color(line: Line) -> RGBColor {
    match line {
        Line::Matmuls => RGBColor(31, 119, 180),
        Line::Attention => RGBColor(44, 160, 44),
        // The chapter's flag: the line that does little math for its time.
        Line::Activations => RGBColor(214, 39, 40),
        Line::Other => RGBColor(127, 127, 127),
    }
}

/// The chapter's illustrative decode step, in ms per line: round numbers, **not measured**,
/// defined once with the lines (`formats::line::ILLUSTRATIVE_STEP_MS`).
pub const ILLUSTRATIVE: [(Line, f64); 4] = [
    (Line::ALL[0], ILLUSTRATIVE_STEP_MS[0]),
    (Line::ALL[1], ILLUSTRATIVE_STEP_MS[1]),
    (Line::ALL[2], ILLUSTRATIVE_STEP_MS[2]),
    (Line::ALL[3], ILLUSTRATIVE_STEP_MS[3]),
];

/// One line of [`ILLUSTRATIVE`], in ms.
pub use formats::line::illustrative_ms;

/// One bar: a line's time per step, its share, and the ops that were summed into it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct BudgetLine {
    pub line: Line,
    pub ms: f64,
    pub share_pct: f64,
    pub ops: Vec<String>,
}

/// A step split into the four lines, with a title for the chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Budget {
    pub title: String,
    pub step_ms: f64,
    pub lines: Vec<BudgetLine>,
}

impl Budget {
    fn from_lines(title: String, ms: [(Line, f64, BTreeSet<String>); 4]) -> Budget {
        let step_ms: f64 = ms.iter().map(|(_, t, _)| t).sum();
        let lines = ms
            .into_iter()
            .map(|(line, ms, ops)| BudgetLine {
                line,
                ms,
                share_pct: if step_ms > 0.0 {
                    100.0 * ms / step_ms
                } else {
                    0.0
                },
                ops: ops.into_iter().collect(),
            })
            .collect();
        Budget {
            title,
            step_ms,
            lines,
        }
    }
}

/// The chapter's 40 ms step as a [`Budget`].
pub fn illustrative() -> Budget {
    let lines = ILLUSTRATIVE.map(|(line, ms)| (line, ms, BTreeSet::new()));
    Budget::from_lines(
        "Illustrative 40 ms decode step (not measured)".into(),
        lines,
    )
}

/// Group a profiler report's self times into the four lines, per recorded step. A CUDA
/// report is read by its self CUDA column (the one it is ranked by), a CPU one by self CPU.
pub fn from_report(report: &Report, title: &str) -> Result<Budget> {
    if report.view == View::Module {
        bail!(
            "this report.json has one row per module (it was written with --view module), but a budget \
             groups ops: profile again with `--view op` or `--view all`"
        );
    }
    let steps = report.active_steps.max(1) as f64;
    let cuda = report.device == DeviceKind::Cuda && report.has_device_times();
    let mut lines = Line::ALL.map(|line| (line, 0.0, BTreeSet::new()));
    for row in &report.rows {
        let self_us = if cuda {
            row.self_cuda_us.unwrap_or(0.0)
        } else {
            row.self_cpu_us
        };
        if self_us <= 0.0 {
            continue;
        }
        let entry = &mut lines[row.line as usize];
        entry.1 += self_us / 1000.0 / steps;
        entry.2.insert(row.name.clone());
    }
    if lines.iter().all(|(_, ms, _)| *ms <= 0.0) {
        bail!(
            "the report has no self time in any row: profile again (e.g. `gpt2 profile --out DIR`)"
        );
    }
    let column = if cuda { "self CUDA" } else { "self CPU" };
    let env = &report.environment;
    let step_ms: f64 = lines.iter().map(|l| l.1).sum();
    let title = format!(
        "{title}: {} ms a step, {column} time, {} threads",
        fmt_ms(step_ms),
        env.threads
    );
    Ok(Budget::from_lines(title, lines))
}

/// Milliseconds with three significant figures or so: 40, 6.8, 0.42.
fn fmt_ms(ms: f64) -> String {
    match ms {
        m if m >= 100.0 => format!("{m:.0}"),
        m if m >= 10.0 => format!("{m:.1}"),
        m if m >= 1.0 => format!("{m:.2}"),
        m => format!("{m:.3}"),
    }
}

/// A share in percent, with a decimal only where it would otherwise read as 0%.
fn fmt_pct(pct: f64) -> String {
    if pct < 1.0 {
        format!("{pct:.1}%")
    } else {
        format!("{pct:.0}%")
    }
}

/// The budgets as terminal tables, with the ops summed into each line.
pub fn text(budgets: &[Budget]) -> String {
    let mut out = String::new();
    for budget in budgets {
        out.push_str(&format!("{}\n", budget.title));
        for l in &budget.lines {
            let bar = "█".repeat((l.share_pct / 2.0).round() as usize);
            out.push_str(&format!(
                "  {:<28} {:>9} ms {:>6.1}%  {bar}\n",
                l.line.name(),
                fmt_ms(l.ms),
                l.share_pct
            ));
            if !l.ops.is_empty() {
                out.push_str(&format!("  {:<28} ({})\n", "", l.ops.join(", ")));
            }
        }
        out.push_str(&format!(
            "  {:<28} {:>9} ms  100.0%\n\n",
            "total",
            fmt_ms(budget.step_ms)
        ));
    }
    out
}

/// Draw each budget as a panel of horizontal bars (share of its step, same 0–100% scale in
/// every panel, so the illustrative and a measured budget can be compared by eye).
pub fn write_svg(path: &Path, budgets: &[Budget]) -> Result<()> {
    if budgets.is_empty() {
        bail!("nothing to draw: no budget given");
    }
    // Sized for a book page (about 750 px wide): the fonts stay readable when it is scaled down.
    let panel_height = 230;
    let root =
        SVGBackend::new(path, (800, panel_height * budgets.len() as u32)).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        for (panel, budget) in root.split_evenly((budgets.len(), 1)).iter().zip(budgets) {
            draw_panel(panel, budget)?;
        }
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow!("{e}")).with_context(|| {
        format!(
            "cannot draw {}: check that its folder exists and is writable",
            path.display()
        )
    })
}

type Panel<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

fn draw_panel<'a>(
    area: &Panel<'a>,
    budget: &Budget,
) -> Result<(), Box<dyn std::error::Error + 'a>> {
    let n = budget.lines.len() as i32;
    // Rows are drawn bottom-up; the first line (matmuls) goes at the top, as in the table.
    let row = |i: usize| n - 1 - i as i32;
    // A label that would run past 100% goes inside its bar instead.
    let inside = |pct: f64| pct > 78.0;
    let names: Vec<&'static str> = budget.lines.iter().map(|l| l.line.name()).collect();
    let mut chart = ChartBuilder::on(area)
        .caption(&budget.title, ("sans-serif", 18))
        .margin(12)
        .margin_right(24)
        .x_label_area_size(34)
        .y_label_area_size(215)
        // An integer range is inclusive here: 0..n-1 makes n segments, one per line.
        .build_cartesian_2d(0.0..100.0, (0..n - 1).into_segmented())?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .x_labels(11)
        .x_label_formatter(&|v| format!("{v:.0}"))
        .x_desc("share of the step (%)")
        .x_label_style(("sans-serif", 14))
        .y_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) if (0..n).contains(i) => {
                names[(n - 1 - i) as usize].to_string()
            }
            _ => String::new(),
        })
        .y_label_style(("sans-serif", 16))
        .draw()?;
    chart.draw_series(budget.lines.iter().enumerate().map(|(i, l)| {
        let mut bar = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(row(i))),
                (l.share_pct, SegmentValue::Exact(row(i) + 1)),
            ],
            color(l.line).filled(),
        );
        bar.set_margin(8, 8, 0, 0);
        bar
    }))?;
    let outside =
        TextStyle::from(("sans-serif", 15).into_font()).pos(Pos::new(HPos::Left, VPos::Center));
    let within = outside
        .clone()
        .pos(Pos::new(HPos::Right, VPos::Center))
        .color(&WHITE);
    chart.draw_series(budget.lines.iter().enumerate().map(|(i, l)| {
        let text = format!("{} ms ({})", fmt_ms(l.ms), fmt_pct(l.share_pct));
        let y = SegmentValue::CenterOf(row(i));
        if inside(l.share_pct) {
            Text::new(text, (l.share_pct - 1.0, y), within.clone())
        } else {
            Text::new(text, (l.share_pct + 1.0, y), outside.clone())
        }
    }))?;
    Ok(())
}

/// Draw a profile as a budget: the book's illustrative 40 ms step, and your report.json.
///
/// The illustrative 40 ms decode step (matmuls 22 ms, attention 10 ms, activations and
/// elementwise 6 ms, everything else 2 ms) is round numbers, not a measurement. Given a
/// profiler report (`gpt2 profile --out DIR` writes DIR/report.json; exercise 3 writes
/// exercises/exercise-3/results/report.json), its self times are grouped into the same four
/// lines and drawn below it on the same scale. Prints both budgets, with the ops in each line:
/// matmuls are matmul and lm_head; attention is attn_qk, softmax, attn_v, mask, split_heads,
/// merge_heads and kv_cache; activations and elementwise are any *gelu* op, the bias and
/// residual adds and layer_norm; everything else is the rest (embedding, module self time,
/// the ProfilerStep* row).
///
/// Examples:
///   course bench budget --svg budget.svg
///   course bench budget --report exercises/exercise-3/results/report.json --svg budget.svg
#[derive(Args, Debug, Clone)]
#[command(verbatim_doc_comment)]
pub struct BudgetArgs {
    /// A profiler report.json to group into budget lines and draw below the illustrative one.
    #[arg(long, value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// Title of the measured panel, e.g. what was profiled.
    #[arg(long, default_value = "Your profile")]
    pub label: String,
    /// Where to write the bar chart.
    #[arg(long, value_name = "FILE", default_value = "budget.svg")]
    pub svg: PathBuf,
    /// Leave out the illustrative panel (draw only the report's budget).
    #[arg(long, requires = "report")]
    pub no_illustrative: bool,
}

/// Run `course bench budget`.
pub fn run(args: &BudgetArgs) -> Result<ExitCode> {
    let mut budgets = Vec::new();
    if !args.no_illustrative {
        budgets.push(illustrative());
    }
    if let Some(path) = &args.report {
        if !path.is_file() {
            bail!(
                "{} does not exist: write one with `gpt2 profile --out DIR` (DIR/report.json) or run exercise 3 \
                 (exercises/exercise-3/results/report.json)",
                path.display()
            );
        }
        let report =
            Report::read_json(path).map_err(|e| anyhow!("{e}: profile again to rewrite it"))?;
        budgets.push(
            from_report(&report, &args.label)
                .with_context(|| format!("cannot read {} as a budget", path.display()))?,
        );
    }
    print!("{}", text(&budgets));
    if let Some(dir) = args.svg.parent().filter(|d| !d.as_os_str().is_empty()) {
        if !dir.is_dir() {
            bail!(
                "cannot write {}: the folder {} does not exist (create it first)",
                args.svg.display(),
                dir.display()
            );
        }
    }
    write_svg(&args.svg, &budgets)?;
    println!("wrote {}", args.svg.display());
    Ok(ExitCode::SUCCESS)
}
