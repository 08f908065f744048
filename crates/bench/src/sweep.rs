//! `course bench --sweep`: the SLO knee, the highest request rate at which a latency target
//! still holds, with a bootstrap interval.
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
//! Its interval comes from a bootstrap: every run's requests are resampled with replacement,
//! the margins and the crossing recomputed, 2000 times; the 2.5th and 97.5th percentiles of
//! those knees are the 95% interval (clipped to the rates tried). A knee beyond the last rate
//! tried, or before the first, is reported as such rather than extrapolated.

use std::path::Path;

use anyhow::{anyhow, bail, Context, Result};
use plotters::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use crate::load::{self, LoadConfig, Traffic};
use crate::metrics::{RequestRecord, Slo};
use crate::report::Run;
use crate::stats;

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
        let bounds: Vec<Bound> = [("ttft_ms", slo.ttft_ms), ("tpot_ms", slo.tpot_ms), ("e2el_ms", slo.e2el_ms)]
            .into_iter()
            .filter_map(|(metric, bound)| bound.map(|bound_ms| Bound { metric: metric.into(), percentile, bound_ms }))
            .collect();
        if bounds.is_empty() {
            bail!("--sweep needs a target: give --slo-ttft-ms, --slo-tpot-ms or --slo-e2el-ms (e.g. --slo-ttft-ms 500 for P90 TTFT ≤ 500 ms)");
        }
        if let Some(b) = bounds.iter().find(|b| !(b.bound_ms.is_finite() && b.bound_ms > 0.0)) {
            bail!("the --slo-{} bound must be a positive number of ms; got {}", b.metric.trim_end_matches("_ms"), b.bound_ms);
        }
        Ok(bounds)
    }

    /// "P90 TTFT ≤ 500 ms".
    pub fn describe(&self) -> String {
        format!("P{} {} ≤ {} ms", self.percentile, self.metric.trim_end_matches("_ms").to_uppercase(), self.bound_ms)
    }

    fn values(&self, records: &[&RequestRecord]) -> Vec<f64> {
        records
            .iter()
            .filter_map(|r| match self.metric.as_str() {
                "ttft_ms" => Some(r.ttft_ms),
                "tpot_ms" => r.tpot_ms(),
                _ => Some(r.e2el_ms),
            })
            .collect()
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
    /// 95% bootstrap interval of the knee (req/s), within the rates tried.
    pub ci95_knee: Option<[f64; 2]>,
}

/// Margin of one run's completed requests against the bounds, and each bound's percentile.
fn margin(bounds: &[Bound], ok: &[&RequestRecord]) -> (f64, Vec<f64>) {
    let values: Vec<f64> = bounds.iter().map(|b| stats::percentile(&b.values(ok), b.percentile).unwrap_or(f64::INFINITY)).collect();
    let m = bounds.iter().zip(&values).map(|(b, v)| v / b.bound_ms).fold(0.0, f64::max);
    (m, values)
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
    /// The rate a bootstrap replicate counts (a knee beyond the rates tried counts as their end).
    fn rate(self) -> f64 {
        match self {
            Knee::At(r) | Knee::Above(r) | Knee::Below(r) => r,
        }
    }
}

/// Summarise a sweep's runs (one per rate, in increasing order) against `bounds`.
pub fn analyse(bounds: &[Bound], runs: &[(f64, &[RequestRecord])], resamples: usize, seed: u64) -> Result<Sweep> {
    let oks: Vec<Vec<&RequestRecord>> = runs.iter().map(|(_, records)| records.iter().filter(|r| r.ok).collect()).collect();
    if let Some(i) = oks.iter().position(Vec::is_empty) {
        bail!("no request completed at {} req/s: nothing to measure the target on (is the server up?)", runs[i].0);
    }
    let points: Vec<Point> = runs
        .iter()
        .zip(&oks)
        .map(|((rate, _), ok)| {
            let (m, values_ms) = margin(bounds, ok);
            Point { rate: *rate, values_ms, margin: m, holds: m <= 1.0 }
        })
        .collect();
    let pairs: Vec<(f64, f64)> = points.iter().map(|p| (p.rate, p.margin)).collect();
    let knee = knee_of(&pairs).ok_or_else(|| anyhow!("the sweep ran no rates"))?;

    let mut rng = StdRng::seed_from_u64(seed);
    let mut knees = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let resampled: Vec<(f64, f64)> = runs
            .iter()
            .zip(&oks)
            .map(|((rate, _), ok)| {
                let draw: Vec<&RequestRecord> = (0..ok.len()).map(|_| ok[rng.random_range(0..ok.len())]).collect();
                (*rate, margin(bounds, &draw).0)
            })
            .collect();
        if let Some(k) = knee_of(&resampled) {
            knees.push(k.rate());
        }
    }
    knees.sort_by(|a, b| a.total_cmp(b));
    let ci95_knee = match (stats::percentile_sorted(&knees, 2.5), stats::percentile_sorted(&knees, 97.5)) {
        (Some(lo), Some(hi)) => Some([lo, hi]),
        _ => None,
    };
    Ok(Sweep { bounds: bounds.to_vec(), points, knee, ci95_knee })
}

impl Sweep {
    /// The lines printed after a sweep.
    pub fn text(&self) -> String {
        let target: Vec<String> = self.bounds.iter().map(Bound::describe).collect();
        let mut out = format!("Sweep against the target {}\n", target.join(" and "));
        for p in &self.points {
            let values: Vec<String> = self.bounds.iter().zip(&p.values_ms).map(|(b, v)| format!("{} {v:.1} ms", b.metric)).collect();
            out += &format!(
                "  {:>8.3} req/s: {}  margin {:.2}  {}\n",
                p.rate,
                values.join(", "),
                p.margin,
                if p.holds { "holds" } else { "FAILS" }
            );
        }
        let ci = self.ci95_knee.map(|[lo, hi]| format!("  [95% CI {lo:.2}, {hi:.2}]")).unwrap_or_default();
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
        let points: Vec<(f64, f64)> = self.points.iter().map(|p| (p.rate, p.values_ms[0])).collect();
        let finite = points.iter().map(|p| p.1).filter(|v| v.is_finite());
        let y_max = finite.fold(bound.bound_ms, f64::max) * 1.15;
        let x_max = points.iter().map(|p| p.0).fold(0.0, f64::max) * 1.1;
        let root = SVGBackend::new(path, (900, 560)).into_drawing_area();
        let draw = || -> Result<(), Box<dyn std::error::Error + '_>> {
            root.fill(&WHITE)?;
            let mut chart = ChartBuilder::on(&root)
                .caption(format!("SLO sweep: {} against the request rate", bound.describe()), ("sans-serif", 20))
                .margin(16)
                .x_label_area_size(40)
                .y_label_area_size(60)
                .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
            chart
                .configure_mesh()
                .x_desc("request rate (req/s, Poisson arrivals)")
                .y_desc(format!("P{} {} (ms)", bound.percentile, bound.metric.trim_end_matches("_ms").to_uppercase()))
                .draw()?;
            if let Some([lo, hi]) = self.ci95_knee {
                chart
                    .draw_series(std::iter::once(Rectangle::new([(lo, 0.0), (hi, y_max)], RGBColor(44, 160, 44).mix(0.15).filled())))?
                    .label("knee, 95% interval")
                    .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 20, y + 5)], RGBColor(44, 160, 44).mix(0.3).filled()));
            }
            if let Knee::At(k) = self.knee {
                chart
                    .draw_series(LineSeries::new([(k, 0.0), (k, y_max)], RGBColor(44, 160, 44).stroke_width(2)))?
                    .label(format!("knee {k:.2} req/s"))
                    .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RGBColor(44, 160, 44).stroke_width(2)));
            }
            chart
                .draw_series(DashedLineSeries::new([(0.0, bound.bound_ms), (x_max, bound.bound_ms)], 6, 4, RED.stroke_width(2)))?
                .label(format!("target {} ms", bound.bound_ms))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], RED.stroke_width(2)));
            let blue = RGBColor(31, 119, 180);
            chart
                .draw_series(LineSeries::new(points.iter().copied().filter(|p| p.1.is_finite()), blue.stroke_width(2)))?
                .label(format!("measured P{}", bound.percentile))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], blue.stroke_width(2)));
            chart.draw_series(points.iter().filter(|p| p.1.is_finite()).map(|&p| Circle::new(p, 4, blue.filled())))?;
            chart
                .configure_series_labels()
                .position(SeriesLabelPosition::UpperLeft)
                .background_style(WHITE.mix(0.85))
                .border_style(BLACK)
                .draw()?;
            root.present()?;
            Ok(())
        };
        draw().map_err(|e| anyhow!("{e}")).with_context(|| format!("cannot draw {}: check the folder is writable", path.display()))
    }
}

/// Runs the sweep: `config`'s load, open loop at each of `rates` (increasing) in turn, until
/// the first rate at which `bounds` fail, then [`analyse`]. Only the first run warms the server
/// up. `slo` is the per-request target each run's goodput counts against (the same flags).
/// Returns each rate's run and the analysis; `course bench --sweep` and exercise 7 both use it.
pub fn run(runtime: &tokio::runtime::Runtime, config: &LoadConfig, rates: &[f64], bounds: &[Bound], slo: &Slo, seed: u64) -> Result<(Vec<(f64, Run)>, Sweep)> {
    if rates.is_empty() || rates.iter().any(|r| !(r.is_finite() && *r > 0.0)) || rates.windows(2).any(|w| w[1] <= w[0]) {
        bail!("a sweep takes increasing positive rates, e.g. --sweep 0.5,1,2,4; got {rates:?}");
    }
    // The arrivals keep the seed the configuration gives them (the same at every rate).
    let arrivals = match config.traffic {
        Traffic::OpenLoop { seed: arrivals, .. } => arrivals,
        Traffic::ClosedLoop { .. } => seed,
    };
    let mut runs: Vec<(f64, Run)> = Vec::new();
    for &rate in rates {
        let mut swept = config.clone();
        swept.traffic = Traffic::OpenLoop { rate, seed: arrivals };
        if !runs.is_empty() {
            swept.warmup = 0;
        }
        eprintln!("sweep: {rate} req/s ...");
        let outcome = runtime.block_on(load::run(&swept))?;
        let run = crate::cli::load_run(crate::cli::default_label(&swept), &swept, slo, seed, outcome)?;
        let ok: Vec<&RequestRecord> = run.requests.iter().filter(|r| r.ok).collect();
        let holds = !ok.is_empty() && margin(bounds, &ok).0 <= 1.0;
        runs.push((rate, run));
        if !holds {
            break;
        }
    }
    let result = analyse(bounds, &rates_and_records(&runs), stats::DEFAULT_RESAMPLES, seed)?;
    Ok((runs, result))
}

/// The runs of a sweep as `(rate, records)` pairs, for [`analyse`].
pub fn rates_and_records(runs: &[(f64, Run)]) -> Vec<(f64, &[RequestRecord])> {
    runs.iter().map(|(rate, run)| (*rate, run.requests.as_slice())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn records(ttfts: impl IntoIterator<Item = f64>) -> Vec<RequestRecord> {
        ttfts.into_iter().map(|t| RequestRecord { ok: true, ttft_ms: t, e2el_ms: t + 10.0, output_tokens: 2, ..Default::default() }).collect()
    }

    fn p90_ttft(bound: f64) -> Vec<Bound> {
        Bound::from_slo(&Slo { ttft_ms: Some(bound), ..Default::default() }, 90.0).unwrap()
    }

    #[test]
    fn the_knee_is_where_the_percentile_crosses_the_target() {
        // P90 of 1..=100 ms scaled: 0.5 → ~45 ms, 1 → ~90 ms, 2 → ~180 ms; target 135 ms lies
        // halfway between rates 1 and 2 on the margin.
        let runs: Vec<(f64, Vec<RequestRecord>)> =
            [(0.5, 0.5), (1.0, 1.0), (2.0, 2.0)].iter().map(|&(rate, s)| (rate, records((1..=100).map(|i| i as f64 * s)))).collect();
        let pairs: Vec<(f64, &[RequestRecord])> = runs.iter().map(|(r, v)| (*r, v.as_slice())).collect();
        let sweep = analyse(&p90_ttft(135.0), &pairs, 500, 1).unwrap();
        assert_eq!(sweep.points.iter().map(|p| p.holds).collect::<Vec<_>>(), vec![true, true, false]);
        let Knee::At(k) = sweep.knee else { panic!("{:?}", sweep.knee) };
        assert!((k - 1.5).abs() < 0.01, "{k}");
        let [lo, hi] = sweep.ci95_knee.unwrap();
        assert!(lo <= k && k <= hi && lo >= 1.0 && hi <= 2.0, "[{lo}, {hi}]");
        assert!(sweep.text().contains("holds up to about 1.50"), "{}", sweep.text());
    }

    #[test]
    fn a_knee_beyond_the_rates_tried_is_not_extrapolated() {
        let runs = vec![(1.0, records([10.0; 20])), (2.0, records([20.0; 20]))];
        let pairs: Vec<(f64, &[RequestRecord])> = runs.iter().map(|(r, v)| (*r, v.as_slice())).collect();
        assert_eq!(analyse(&p90_ttft(500.0), &pairs, 100, 1).unwrap().knee, Knee::Above(2.0));
        assert_eq!(analyse(&p90_ttft(5.0), &pairs, 100, 1).unwrap().knee, Knee::Below(1.0));
        // A sweep without a target, or with a nonsense one, is refused with what to give.
        assert!(Bound::from_slo(&Slo::default(), 90.0).unwrap_err().to_string().contains("--slo-ttft-ms"));
        assert!(Bound::from_slo(&Slo { ttft_ms: Some(500.0), ..Default::default() }, 120.0).is_err());
        assert!(Bound::from_slo(&Slo { ttft_ms: Some(-1.0), ..Default::default() }, 90.0).is_err());
    }
}
