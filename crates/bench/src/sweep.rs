//! `course bench --sweep`: the SLO knee, the highest request rate at which a latency target
//! still holds, with a 95% interval.
//!
//! The target is spelled with the SLO flags (`--slo-ttft-ms`, `--slo-tpot-ms`,
//! `--slo-e2el-ms`, one meaning of SLO across the tool) and `--slo-percentile` (90 by
//! default): "P90 TTFT ≤ 500 ms" is `--slo-ttft-ms 500`. Where goodput asks it of each request,
//! the sweep asks it of the run's percentile: the target holds at a rate when, for every bound
//! given, that percentile of the metric over the run's completed requests is within it.
//!
//! The sweep runs one open-loop load run per rate, in increasing order, and stops after the
//! first rate at which the target fails. Each run is summarised by its **margin**: the largest
//! ratio of percentile to bound (≤ 1 means the target holds). The knee is where the margin
//! crosses 1, interpolated linearly between the last rate that held and the first that failed.
//! Its interval comes from the margins' own 95% intervals (crate::intervals): where the upper
//! ends cross 1 the target surely held below, and where the lower ends cross it surely failed
//! above; the two crossings are the knee's interval. A knee beyond the last rate
//! tried, or before the first, is reported as such rather than extrapolated.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;
use serde::{Deserialize, Serialize};

use crate::intervals;
use crate::load::{self, LoadConfig, Traffic};
use crate::metrics::{self, Slo};
use crate::percentile;
use crate::run::Run;

/// One bound of the target: `percentile` of `metric` at most `bound_ms`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    /// `ttft_ms`, `tpot_ms` or `e2el_ms`.
    pub metric: String,
    pub percentile: f64,
    pub bound_ms: f64,
}

impl Bound {
    /// The bounds the SLO flags set, each at `percentile`.
    pub fn from_slo(slo: &Slo, percentile: f64) -> Result<Vec<Bound>> {
        if !(percentile > 0.0 && percentile < 100.0) {
            bail!("--slo-percentile must be between 0 and 100 (e.g. 90 for P90); got {percentile}");
        }
        let bounds: Vec<Bound> = [
            ("ttft_ms", slo.ttft_ms),
            ("tpot_ms", slo.tpot_ms),
            ("e2el_ms", slo.e2el_ms),
        ]
        .into_iter()
        .filter_map(|(metric, bound)| {
            bound.map(|bound_ms| Bound {
                metric: metric.into(),
                percentile,
                bound_ms,
            })
        })
        .collect();
        if bounds.is_empty() {
            bail!("--sweep needs a target: give --slo-ttft-ms, --slo-tpot-ms or --slo-e2el-ms (e.g. --slo-ttft-ms 500 for P90 TTFT ≤ 500 ms)");
        }
        if let Some(b) = bounds
            .iter()
            .find(|b| !(b.bound_ms.is_finite() && b.bound_ms > 0.0))
        {
            bail!(
                "the --slo-{} bound must be a positive number of ms; got {}",
                b.metric.trim_end_matches("_ms"),
                b.bound_ms
            );
        }
        Ok(bounds)
    }

    /// "P90 TTFT ≤ 500 ms".
    pub fn describe(&self) -> String {
        format!(
            "P{} {} ≤ {} ms",
            self.percentile,
            self.metric.trim_end_matches("_ms").to_uppercase(),
            self.bound_ms
        )
    }

    /// The bound's metric over a run's completed requests, grouped by replicate.
    fn values(&self, run: &Run) -> Vec<Vec<f64>> {
        metrics::by_replicate(&run.requests, run.metrics.replicates, |r| {
            match self.metric.as_str() {
                "ttft_ms" => vec![r.ttft_ms],
                "tpot_ms" => r.tpot_ms().into_iter().collect(),
                _ => vec![r.e2el_ms],
            }
        })
    }
}

/// One rate of the sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Point {
    pub rate: f64,
    /// The percentile of each bound's metric, in the order of `Sweep::bounds` (ms).
    pub values_ms: Vec<f64>,
    /// Largest percentile / bound ratio: the target holds when it is at most 1.
    pub margin: f64,
    pub holds: bool,
}

/// Where the knee lies.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Knee {
    /// Between two rates tried: the interpolated crossing.
    At(f64),
    /// The target held at every rate tried: the knee is beyond the last one.
    Above(f64),
    /// The target failed already at the first rate tried.
    Below(f64),
}

/// The whole sweep, as written to `bench.json` under `sweep`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    pub bounds: Vec<Bound>,
    pub points: Vec<Point>,
    pub knee: Knee,
    /// 95% interval of the knee (req/s), within the rates tried.
    pub ci95_knee: Option<[f64; 2]>,
}

/// Margin of one run against the bounds (largest percentile / bound), each bound's percentile,
/// and the margin's 95% interval (`[low, ∞)` where a percentile has no upper bound; `None`
/// with fewer than four samples).
fn margin(bounds: &[Bound], run: &Run) -> (f64, Vec<f64>, Option<[f64; 2]>) {
    let mut values = Vec::with_capacity(bounds.len());
    let (mut m, mut low, mut high) = (0.0f64, 0.0f64, 0.0f64);
    let mut interval = true;
    for b in bounds {
        let groups = b.values(run);
        let value = percentile::percentile(&groups.concat(), b.percentile).unwrap_or(f64::INFINITY);
        values.push(value);
        m = m.max(value / b.bound_ms);
        match intervals::percentile(&groups, b.percentile) {
            Some(e) => {
                low = low.max(e.interval.low / b.bound_ms);
                high = high.max(e.interval.high / b.bound_ms);
            }
            None => interval = false,
        }
    }
    (m, values, interval.then_some([low, high]))
}

/// The knee from (rate, margin) pairs in increasing rate order.
fn knee_of(points: &[(f64, f64)]) -> Option<Knee> {
    let (first, last) = (points.first()?, points.last()?);
    Some(match points.iter().position(|&(_, m)| m > 1.0) {
        None => Knee::Above(last.0),
        Some(0) => Knee::Below(first.0),
        Some(i) => {
            let ((r0, m0), (r1, m1)) = (points[i - 1], points[i]);
            Knee::At(r0 + (1.0 - m0) / (m1 - m0) * (r1 - r0))
        }
    })
}

impl Knee {
    /// The rate an end of the knee's interval counts (a knee beyond the rates tried counts as their end).
    fn rate(self) -> f64 {
        match self {
            Knee::At(r) | Knee::Above(r) | Knee::Below(r) => r,
        }
    }
}

/// Summarise a sweep's runs (one per rate, in increasing order) against `bounds`.
pub fn analyse(bounds: &[Bound], runs: &[(f64, &Run)]) -> Result<Sweep> {
    if let Some((rate, _)) = runs.iter().find(|(_, run)| run.metrics.completed == 0) {
        bail!("no request completed at {rate} req/s: nothing to measure the target on (is the server up?)");
    }
    let margins: Vec<(f64, Vec<f64>, Option<[f64; 2]>)> =
        runs.iter().map(|(_, run)| margin(bounds, run)).collect();
    let points: Vec<Point> = runs
        .iter()
        .zip(&margins)
        .map(|((rate, _), (m, values_ms, _))| Point {
            rate: *rate,
            values_ms: values_ms.clone(),
            margin: *m,
            holds: *m <= 1.0,
        })
        .collect();
    let pairs: Vec<(f64, f64)> = points.iter().map(|p| (p.rate, p.margin)).collect();
    let knee = knee_of(&pairs).ok_or_else(|| anyhow!("the sweep ran no rates"))?;
    // Where the upper ends cross, the target surely held below; where the lower ends cross, it
    // surely failed above.
    let ends: Option<Vec<(f64, [f64; 2])>> = runs
        .iter()
        .zip(&margins)
        .map(|((rate, _), (_, _, ci))| ci.map(|ci| (*rate, ci)))
        .collect();
    let ci95_knee = ends.and_then(|ends| {
        let upper: Vec<(f64, f64)> = ends.iter().map(|&(r, [_, hi])| (r, hi)).collect();
        let lower: Vec<(f64, f64)> = ends.iter().map(|&(r, [lo, _])| (r, lo)).collect();
        Some([knee_of(&upper)?.rate(), knee_of(&lower)?.rate()])
    });
    Ok(Sweep {
        bounds: bounds.to_vec(),
        points,
        knee,
        ci95_knee,
    })
}

impl Sweep {
    /// The lines printed after a sweep.
    pub fn text(&self) -> String {
        let target: Vec<String> = self.bounds.iter().map(Bound::describe).collect();
        let mut out = format!("Sweep against the target {}\n", target.join(" and "));
        for p in &self.points {
            let values: Vec<String> = self
                .bounds
                .iter()
                .zip(&p.values_ms)
                .map(|(b, v)| format!("{} {v:.1} ms", b.metric))
                .collect();
            out += &format!(
                "  {:>8.3} req/s: {}  margin {:.2}  {}\n",
                p.rate,
                values.join(", "),
                p.margin,
                if p.holds { "holds" } else { "FAILS" }
            );
        }
        let ci = self
            .ci95_knee
            .map(|[lo, hi]| format!("  [95% CI {lo:.2}, {hi:.2}]"))
            .unwrap_or_default();
        out += &match self.knee {
            Knee::At(r) => format!("knee: the target holds up to about {r:.2} req/s{ci}\n"),
            Knee::Above(r) => format!("knee: beyond {r} req/s (the target held at every rate tried; add higher rates){ci}\n"),
            Knee::Below(r) => format!("knee: below {r} req/s (the target already failed there; add lower rates){ci}\n"),
        };
        out
    }

    /// `sweep.svg`: the first bound's percentile against the rate, its target line, the knee
    /// and its interval.
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        let bound = &self.bounds[0];
        let points: Vec<(f64, f64)> = self
            .points
            .iter()
            .map(|p| (p.rate, p.values_ms[0]))
            .collect();
        let finite = points.iter().map(|p| p.1).filter(|v| v.is_finite());
        let y_max = finite.fold(bound.bound_ms, f64::max) * 1.15;
        let x_max = points.iter().map(|p| p.0).fold(0.0, f64::max) * 1.1;
        let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
        let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(
                    format!("SLO sweep: {} against the request rate", bound.describe()),
                    ("sans-serif", 20),
                )
                .margin(16)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
            chart
                .configure_mesh()
                .x_desc("request rate (req/s, Poisson arrivals)")
                .y_desc(format!(
                    "P{} {} (ms)",
                    bound.percentile,
                    bound.metric.trim_end_matches("_ms").to_uppercase()
                ))
                .draw()?;
            if let Some([lo, hi]) = self.ci95_knee {
                chart
                    .draw_series(std::iter::once(Rectangle::new(
                        [(lo, 0.0), (hi, y_max)],
                        RGBColor(44, 160, 44).mix(0.15).filled(),
                    )))?
                    .label("knee, 95% interval")
                    .legend(|(x, y)| {
                        Rectangle::new(
                            [(x, y - 5), (x + 20, y + 5)],
                            RGBColor(44, 160, 44).mix(0.3).filled(),
                        )
                    });
            }
            if let Knee::At(k) = self.knee {
                chart
                    .draw_series(LineSeries::new(
                        [(k, 0.0), (k, y_max)],
                        RGBColor(44, 160, 44).stroke_width(2),
                    ))?
                    .label(format!("knee {k:.2} req/s"))
                    .legend(|(x, y)| {
                        PathElement::new(
                            vec![(x, y), (x + 20, y)],
                            RGBColor(44, 160, 44).stroke_width(2),
                        )
                    });
            }
            chart
                .draw_series(DashedLineSeries::new(
                    [(0.0, bound.bound_ms), (x_max, bound.bound_ms)],
                    6,
                    4,
                    RED.stroke_width(2),
                ))?
                .label(format!("target {} ms", bound.bound_ms))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
            let blue = RGBColor(31, 119, 180);
            chart
                .draw_series(LineSeries::new(
                    points.iter().copied().filter(|p| p.1.is_finite()),
                    blue.stroke_width(2),
                ))?
                .label(format!("measured P{}", bound.percentile))
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2))
                });
            chart.draw_series(
                points
                    .iter()
                    .filter(|p| p.1.is_finite())
                    .map(|&p| Circle::new(p, 4, blue.filled())),
            )?;
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
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
}

/// Runs the sweep: `config`'s load, open loop at each of `rates` (increasing) in turn, until
/// the first rate at which `bounds` fail, then [`analyse`]. Only the first run warms the server
/// up. `slo` is the per-request target each run's goodput counts against (the same flags).
/// Returns each rate's run and the analysis; `course bench --sweep` and exercise 7 both use it.
pub fn run(
    runtime: &tokio::runtime::Runtime,
    config: &LoadConfig,
    rates: &[f64],
    bounds: &[Bound],
    slo: &Slo,
) -> Result<(Vec<(f64, Run)>, Sweep)> {
    if rates.is_empty()
        || rates.iter().any(|r| !(r.is_finite() && *r > 0.0))
        || rates.windows(2).any(|w| w[1] <= w[0])
    {
        bail!("a sweep takes increasing positive rates, e.g. --sweep 0.5,1,2,4; got {rates:?}");
    }
    // The arrivals keep the seed the configuration gives them (the same at every rate).
    let arrivals = match config.traffic {
        Traffic::OpenLoop { seed, .. } => seed,
        Traffic::ClosedLoop { .. } => 0,
    };
    let mut runs: Vec<(f64, Run)> = Vec::new();
    for &rate in rates {
        let mut swept = config.clone();
        swept.traffic = Traffic::OpenLoop {
            rate,
            seed: arrivals,
        };
        if !runs.is_empty() {
            swept.warmup = 0;
        }
        eprintln!("sweep: {rate} req/s ...");
        let outcome = runtime.block_on(load::run(&swept))?;
        let run = Run::from_load(swept.default_label(), &swept, slo, outcome)?;
        let holds = run.metrics.completed > 0 && margin(bounds, &run).0 <= 1.0;
        runs.push((rate, run));
        if !holds {
            break;
        }
    }
    let result = analyse(bounds, &runs_by_rate(&runs))?;
    Ok((runs, result))
}

/// The runs of a sweep as `(rate, run)` pairs, for [`analyse`].
pub fn runs_by_rate(runs: &[(f64, Run)]) -> Vec<(f64, &Run)> {
    runs.iter().map(|(rate, run)| (*rate, run)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::RequestRecord;

    /// One run whose completed requests have these TTFTs, in this arrival order.
    fn run(ttfts: impl IntoIterator<Item = f64>) -> Run {
        let requests: Vec<RequestRecord> = ttfts
            .into_iter()
            .map(|t| RequestRecord {
                ok: true,
                ttft_ms: t,
                e2el_ms: t + 10.0,
                output_tokens: 2,
                ..Default::default()
            })
            .collect();
        let metrics = metrics::compute(&requests, &[1.0], &Slo::default());
        Run {
            label: "test".into(),
            config: serde_json::Value::Null,
            metrics,
            requests,
            repeat_tokens_per_s: vec![],
            server_metrics: None,
        }
    }

    /// 1..=100 ms times `scale`, in an order with no trend (37 is coprime with 100).
    fn spread(scale: f64) -> impl Iterator<Item = f64> {
        (0..100).map(move |i| ((i * 37) % 100 + 1) as f64 * scale)
    }

    fn p90_ttft(bound: f64) -> Vec<Bound> {
        Bound::from_slo(
            &Slo {
                ttft_ms: Some(bound),
                ..Default::default()
            },
            90.0,
        )
        .unwrap()
    }

    #[test]
    fn the_knee_is_where_the_percentile_crosses_the_target() {
        // P90 of 1..=100 ms scaled: 0.5 → ~45 ms, 1 → ~90 ms, 2 → ~180 ms; target 135 ms lies
        // halfway between rates 1 and 2 on the margin.
        let runs: Vec<(f64, Run)> = [(0.5, 0.5), (1.0, 1.0), (2.0, 2.0)]
            .iter()
            .map(|&(rate, s)| (rate, run(spread(s))))
            .collect();
        let sweep = analyse(&p90_ttft(135.0), &runs_by_rate(&runs)).unwrap();
        assert_eq!(
            sweep.points.iter().map(|p| p.holds).collect::<Vec<_>>(),
            vec![true, true, false]
        );
        let Knee::At(k) = sweep.knee else {
            panic!("{:?}", sweep.knee)
        };
        assert!((k - 1.5).abs() < 0.01, "{k}");
        let [lo, hi] = sweep.ci95_knee.unwrap();
        assert!(lo <= k && k <= hi && lo >= 1.0 && hi <= 2.0, "[{lo}, {hi}]");
        assert!(
            sweep.text().contains("holds up to about 1.50"),
            "{}",
            sweep.text()
        );
    }

    #[test]
    fn a_queue_building_up_at_a_rate_widens_the_knee_to_the_rates_around_it() {
        // At 2 req/s latency climbs through the run: its P90 has no upper bound, so the knee's
        // interval reaches down to the last rate that held.
        let runs = vec![
            (1.0, run(spread(1.0))),
            (2.0, run((1..=100).map(|i| f64::from(i) * 3.0))),
        ];
        let sweep = analyse(&p90_ttft(135.0), &runs_by_rate(&runs)).unwrap();
        assert_eq!(sweep.ci95_knee.map(|[lo, _]| lo), Some(1.0), "{sweep:?}");
    }

    #[test]
    fn a_knee_beyond_the_rates_tried_is_not_extrapolated() {
        let runs = vec![(1.0, run([10.0; 20])), (2.0, run([20.0; 20]))];
        assert_eq!(
            analyse(&p90_ttft(500.0), &runs_by_rate(&runs))
                .unwrap()
                .knee,
            Knee::Above(2.0)
        );
        assert_eq!(
            analyse(&p90_ttft(5.0), &runs_by_rate(&runs)).unwrap().knee,
            Knee::Below(1.0)
        );
        // A sweep without a target, or with a nonsense one, is refused with what to give.
        assert!(Bound::from_slo(&Slo::default(), 90.0)
            .unwrap_err()
            .to_string()
            .contains("--slo-ttft-ms"));
        assert!(Bound::from_slo(
            &Slo {
                ttft_ms: Some(500.0),
                ..Default::default()
            },
            120.0
        )
        .is_err());
        assert!(Bound::from_slo(
            &Slo {
                ttft_ms: Some(-1.0),
                ..Default::default()
            },
            90.0
        )
        .is_err());
    }
}
