//! `latency.svg`: the empirical CDF of TTFT and E2EL for one or more runs.
//!
//! A CDF shows the whole distribution at once: the median is where a curve crosses 0.5, P90
//! where it crosses 0.9, and a long tail is a curve that creeps slowly towards 1.

use std::path::Path;

use anyhow::{anyhow, Context, Result};
use plotters::prelude::*;

use crate::percentile::sorted_copy;
use crate::run::Run;

const PALETTE: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Points (x, F(x)) of the empirical CDF of `samples`.
pub fn cdf_points(samples: &[f64]) -> Vec<(f64, f64)> {
    let sorted = sorted_copy(samples);
    let n = sorted.len() as f64;
    sorted
        .into_iter()
        .enumerate()
        .map(|(i, x)| (x, (i + 1) as f64 / n))
        .collect()
}

/// One curve: its legend name, its points, whether it is dashed, its colour.
type Curve = (String, Vec<(f64, f64)>, bool, RGBColor);

/// Write the CDF plot of every run's TTFT (solid) and E2EL (dashed) to `path`.
pub fn write_latency_cdf(path: &Path, runs: &[&Run]) -> Result<()> {
    let series: Vec<Curve> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, run)| {
            let color = PALETTE[i % PALETTE.len()];
            let ok = || run.requests.iter().filter(|r| r.ok);
            let ttft: Vec<f64> = ok().map(|r| r.ttft_ms).collect();
            let e2el: Vec<f64> = ok().map(|r| r.e2el_ms).collect();
            [
                (
                    format!("{} TTFT", run.label),
                    cdf_points(&ttft),
                    false,
                    color,
                ),
                (
                    format!("{} E2EL", run.label),
                    cdf_points(&e2el),
                    true,
                    color,
                ),
            ]
        })
        .filter(|(_, points, _, _)| !points.is_empty())
        .collect();
    let x_max = series
        .iter()
        .flat_map(|(_, p, _, _)| p.iter().map(|(x, _)| *x))
        .fold(0.0f64, f64::max)
        .max(1e-3)
        * 1.05;

    let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
    let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(
                "Latency CDF: TTFT (solid) and E2EL (dashed)",
                ("sans-serif", 20),
            )
            .margin(16)
            .x_label_area_size(40)
            .y_label_area_size(50)
            .build_cartesian_2d(0.0..x_max, 0.0..1.0)?;
        chart
            .configure_mesh()
            .x_desc("latency (ms)")
            .y_desc("fraction of requests")
            .draw()?;
        for (name, points, dashed, color) in &series {
            let style = color.stroke_width(2);
            let drawn = if *dashed {
                chart.draw_series(DashedLineSeries::new(points.iter().copied(), 6, 4, style))?
            } else {
                chart.draw_series(LineSeries::new(points.iter().copied(), style))?
            };
            // The legend sample is two strokes: touching for a solid line, apart for a dashed one.
            let (legend_color, gap) = (*color, if *dashed { 4 } else { 0 });
            drawn.label(name.as_str()).legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (8, 0)], legend_color.stroke_width(2))
                    + PathElement::new(vec![(8 + gap, 0), (20, 0)], legend_color.stroke_width(2))
            });
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| anyhow!("{e}")).with_context(|| {
        format!(
            "cannot draw {}: check the folder is writable",
            path.display()
        )
    })
}
