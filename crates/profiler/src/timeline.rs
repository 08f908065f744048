//! The memory timeline (like PyTorch's `export_memory_timeline`, with the course's categories
//! instead of training's): live bytes at every scope boundary of the active steps, split into
//! weights, KV cache, activations and temporaries ([`Category`]), drawn as a stacked SVG with
//! plotters, the peak marked and labelled by the range that reached it. A caller may add a
//! series it computed (the KV cache's positions in use), drawn apart and labelled as computed.

use std::path::Path;

use plotters::prelude::*;

use crate::aggregate::STEP_ROW;
use crate::alloc::Category;
use crate::error::ProfilerError;
use crate::memory::format_bytes;
use crate::recording::Profile;

/// One point of the timeline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TimelinePoint {
    /// Milliseconds since the first active step began.
    pub t_ms: f64,
    /// Live bytes per category, in [`Category::ALL`]'s order.
    pub by_category: [i64; 4],
    /// Live bytes in all (its own counter: the categories add up to it).
    pub live: i64,
}

/// The peak of a timeline: the most bytes live at once, when, and in which range.
#[derive(Debug, Clone, PartialEq)]
pub struct TimelinePeak {
    pub t_ms: f64,
    pub bytes: i64,
    /// The range that was innermost when the peak was reached (`ProfilerStep*` outside every
    /// range).
    pub during: String,
    /// The step it fell in.
    pub step: usize,
}

/// The live bytes of a profile's active steps, one point per scope boundary.
#[derive(Debug, Clone, PartialEq)]
pub struct Timeline {
    pub points: Vec<TimelinePoint>,
    pub peak: TimelinePeak,
}

const COLORS: [RGBColor; 4] = [
    RGBColor(140, 140, 140),
    RGBColor(31, 119, 180),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
];

impl Profile {
    /// The memory timeline, or `None` when memory was not recorded.
    pub fn memory_timeline(&self) -> Option<Timeline> {
        if !self.has_memory() {
            return None;
        }
        let origin = self.steps.first()?.start_ns;
        let ms = |ns: u64| ns.saturating_sub(origin) as f64 / 1e6;
        let mut points = Vec::new();
        for step in &self.steps {
            let m = step.memory.as_ref()?;
            points.extend(m.samples.iter().map(|s| TimelinePoint {
                t_ms: ms(s.t_ns),
                by_category: s.by_category,
                live: s.live,
            }));
        }
        let (bytes, number, during) = self.memory_peak()?;
        let step = self.steps.iter().find(|s| s.number == number)?;
        let peak_ns = step.memory.as_ref()?.peak_ns;
        Some(Timeline {
            points,
            peak: TimelinePeak {
                t_ms: ms(peak_ns),
                bytes,
                during: during.to_string(),
                step: number,
            },
        })
    }

    /// Draw the memory timeline at `path`. `computed` is an optional series the caller
    /// computed, `(milliseconds, bytes)` on the timeline's clock, drawn as a dashed line under
    /// its `label` (e.g. the KV cache's positions in use).
    pub fn memory_timeline_svg(
        &self,
        path: impl AsRef<Path>,
        title: &str,
        computed: Option<(&str, &[(f64, i64)])>,
    ) -> Result<(), ProfilerError> {
        let path = path.as_ref();
        let fail = |message: String| ProfilerError::Timeline {
            path: path.to_path_buf(),
            message,
        };
        let timeline = self.memory_timeline().ok_or_else(|| {
            fail("the profile recorded no memory (profile with memory on)".to_string())
        })?;
        draw(path, title, &timeline, computed).map_err(fail)
    }
}

/// Megabytes (2^20 bytes) for the axis.
fn mb(bytes: i64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// What one panel stacks and marks.
struct Panel<'a> {
    /// Indices into [`Category::ALL`], bottom first.
    categories: &'a [usize],
    y_desc: &'a str,
    legend: bool,
    /// The peak's point on this panel (its label is the absolute figure).
    peak: Option<(f64, f64, String)>,
    computed: Option<(&'a str, Vec<(f64, f64)>)>,
}

/// Two panels: every category (the weights dwarf the rest), then the bytes beside the weights
/// (KV cache, activations, temporaries), where a step's rise and fall and the peak show.
fn draw(
    path: &Path,
    title: &str,
    t: &Timeline,
    computed: Option<(&str, &[(f64, i64)])>,
) -> Result<(), String> {
    let root = SVGBackend::new(path, (800, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let root = root.titled(title, ("sans-serif", 18)).map_err(err)?;
    let (top, bottom) = root.split_vertically(170);
    // The weights live at the peak's moment: the nearest sample's.
    let weights_at = |t_ms: f64| -> i64 {
        t.points
            .iter()
            .min_by(|a, b| (a.t_ms - t_ms).abs().total_cmp(&(b.t_ms - t_ms).abs()))
            .map_or(0, |p| p.by_category[0])
    };
    let during = if t.peak.during == STEP_ROW {
        "outside every op".to_string()
    } else {
        format!("in {}", t.peak.during)
    };
    let label = format!(
        "peak {} {during} (step {})",
        format_bytes(t.peak.bytes),
        t.peak.step
    );
    panel(
        &top,
        t,
        &Panel {
            categories: &[0, 1, 2, 3],
            y_desc: "all live (MiB)",
            legend: false,
            peak: None,
            computed: None,
        },
    )?;
    let beside = mb(t.peak.bytes - weights_at(t.peak.t_ms));
    panel(
        &bottom,
        t,
        &Panel {
            categories: &[1, 2, 3],
            y_desc: "live beside the weights (MiB)",
            legend: true,
            peak: Some((t.peak.t_ms, beside, label)),
            computed: computed.map(|(label, series)| {
                (
                    label,
                    series.iter().map(|(x, b)| (*x, mb(*b))).collect::<Vec<_>>(),
                )
            }),
        },
    )?;
    root.present().map_err(err)
}

fn panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    t: &Timeline,
    p: &Panel<'_>,
) -> Result<(), String> {
    let stacked = |pt: &TimelinePoint| -> f64 {
        p.categories
            .iter()
            .map(|k| mb(pt.by_category[*k].max(0)))
            .sum()
    };
    let x_max = t.points.last().map_or(1.0, |pt| pt.t_ms).max(1e-3);
    let y_max = t
        .points
        .iter()
        .map(stacked)
        .chain(p.peak.iter().map(|(_, y, _)| *y))
        .chain(
            p.computed
                .iter()
                .flat_map(|(_, s)| s.iter().map(|(_, y)| *y)),
        )
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.15;
    let mut chart = ChartBuilder::on(area)
        .margin(10)
        .x_label_area_size(if p.legend { 36 } else { 20 })
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..x_max, 0.0..y_max)
        .map_err(err)?;
    let mut mesh = chart.configure_mesh();
    mesh.y_desc(p.y_desc);
    if p.legend {
        mesh.x_desc("time since the first recorded step (ms)");
    }
    mesh.draw().map_err(err)?;
    // Stacked bands, bottom first: each a polygon between the running sums.
    let mut below: Vec<f64> = vec![0.0; t.points.len()];
    for &k in p.categories {
        let above: Vec<f64> = t
            .points
            .iter()
            .zip(&below)
            .map(|(pt, b)| b + mb(pt.by_category[k].max(0)))
            .collect();
        let mut outline: Vec<(f64, f64)> = t
            .points
            .iter()
            .zip(&above)
            .map(|(pt, y)| (pt.t_ms, *y))
            .collect();
        outline.extend(
            t.points
                .iter()
                .zip(&below)
                .rev()
                .map(|(pt, y)| (pt.t_ms, *y)),
        );
        let color = COLORS[k];
        let drawn = chart
            .draw_series(std::iter::once(Polygon::new(
                outline,
                color.mix(0.75).filled(),
            )))
            .map_err(err)?;
        if p.legend {
            drawn
                .label(Category::ALL[k].as_str())
                .legend(move |(x, y)| {
                    Rectangle::new([(x, y - 5), (x + 14, y + 5)], color.filled())
                });
        }
        below = above;
    }
    if let Some((label, series)) = &p.computed {
        chart
            .draw_series(DashedLineSeries::new(
                series.iter().copied(),
                6,
                4,
                BLACK.stroke_width(2),
            ))
            .map_err(err)?
            .label(format!("{label} (computed)"))
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 14, y)], BLACK.stroke_width(2)));
    }
    if let Some((x, y, label)) = &p.peak {
        chart
            .draw_series(std::iter::once(Circle::new((*x, *y), 5, RED.filled())))
            .map_err(err)?;
        // The label sits left of the mark when the peak is in the right half.
        let anchor = if *x > x_max / 2.0 {
            -(7 * label.len() as i32)
        } else {
            8
        };
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((*x, *y))
                    + Text::new(label.clone(), (anchor, -16), ("sans-serif", 14)),
            ))
            .map_err(err)?;
    }
    if p.legend {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
    }
    Ok(())
}
