//! Calibration of the intervals and verdicts on a simulated server, where the truth is known.
//!
//! A seeded discrete-event simulation of an open-loop server: Poisson arrivals, two service
//! slots taken first come first served, lognormal service times (mean 1, σ = 0.6), TTFT = the
//! wait for a slot plus the service. Each run is 60 requests (the length of exercise 7's runs)
//! and starts from an empty queue, as a real run does after its warm-up requests. Two regimes:
//! 30% utilisation (light) and 85% (near the knee, where a target of 4 × the lone median TTFT
//! is just met).
//!
//! The truth a run's interval must cover is the P90 of the TTFTs pooled over 20,000 runs of the
//! same length: a short run from an empty queue has a lower P90 than the long-run one.
//! For each regime:
//! - coverage: 1,000 measurements (each of the method's default 3 replicates): how often the
//!   95% interval of P90 TTFT holds the truth. Must lie in 92–98%.
//! - A/A: 1,000 pairs of independent measurements of the same system: how often the interval of
//!   B/A leaves out 1 (at most 7%) and how often the verdict is faster or slower (at most 1%),
//!   for the default 3 replicates and for one run a side (the learner's two saved files).
//! - the same figures for a per-request percentile bootstrap (one run a side, 2000 resamples),
//!   printed beside them for comparison; it fails near the knee.
//!
//! Seeds are fixed (not chosen to pass). `AA_SIMULATION_SCALE` divides the counts, for a slow
//! machine or an emulator (the bounds stay the same).

use bench::stats::{self, Better, Stat, Verdict};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Exp, LogNormal};

const REQUESTS: usize = 60;
const SLOTS: usize = 2;
const SIGMA: f64 = 0.6;
const REPLICATES: usize = 3;
const MIN_EFFECT: f64 = 0.05;

/// One simulated run: the TTFTs of `REQUESTS` requests in arrival order.
fn run(rng: &mut StdRng, utilisation: f64) -> Vec<f64> {
    let arrivals = Exp::new(utilisation * SLOTS as f64).expect("positive rate");
    let service = LogNormal::new(-SIGMA * SIGMA / 2.0, SIGMA).expect("valid σ");
    let mut free_at = [0.0f64; SLOTS];
    let mut now = 0.0;
    (0..REQUESTS)
        .map(|_| {
            now += arrivals.sample(rng);
            let slot = (0..SLOTS)
                .min_by(|&a, &b| free_at[a].total_cmp(&free_at[b]))
                .expect("slots");
            let done = free_at[slot].max(now) + service.sample(rng);
            free_at[slot] = done;
            done - now
        })
        .collect()
}

fn runs(rng: &mut StdRng, utilisation: f64, count: usize) -> Vec<Vec<f64>> {
    (0..count).map(|_| run(rng, utilisation)).collect()
}

/// A per-request percentile bootstrap (what this crate's intervals are compared with): resample one run's
/// requests as if independent, 2000 times; the P90's central 95%, and the ratio's.
struct Bootstrap {
    rng: StdRng,
}

impl Bootstrap {
    const RESAMPLES: usize = 2000;

    fn p90s(&mut self, xs: &[f64]) -> Vec<f64> {
        let mut buf = vec![0.0; xs.len()];
        (0..Self::RESAMPLES)
            .map(|_| {
                for slot in buf.iter_mut() {
                    *slot = xs[self.rng.random_range(0..xs.len())];
                }
                p90(&mut buf)
            })
            .collect()
    }

    fn interval(&mut self, xs: &[f64]) -> [f64; 2] {
        central(self.p90s(xs))
    }

    fn ratio(&mut self, a: &[f64], b: &[f64]) -> [f64; 2] {
        let (pa, pb) = (self.p90s(a), self.p90s(b));
        central(pa.iter().zip(&pb).map(|(a, b)| b / a).collect())
    }
}

/// The P90 by numpy's linear interpolation, found by selection (the bootstrap's hot loop).
fn p90(buf: &mut [f64]) -> f64 {
    let rank = 0.9 * (buf.len() - 1) as f64;
    let lo = rank.floor() as usize;
    let (_, &mut a, above) = buf.select_nth_unstable_by(lo, f64::total_cmp);
    let b = above.iter().copied().fold(f64::INFINITY, f64::min);
    let frac = rank - lo as f64;
    if frac == 0.0 {
        a
    } else {
        a + (b - a) * frac
    }
}

fn central(mut xs: Vec<f64>) -> [f64; 2] {
    xs.sort_by(f64::total_cmp);
    [
        stats::percentile_sorted(&xs, 2.5).expect("values"),
        stats::percentile_sorted(&xs, 97.5).expect("values"),
    ]
}

#[derive(Debug, Default)]
struct Rates {
    coverage: f64,
    excludes_one: f64,
    differs: f64,
}

/// Coverage with the default replicates, and A/A rates for `replicates` runs a side.
fn new_method(seed: u64, utilisation: f64, truth: f64, count: usize, replicates: usize) -> Rates {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut covered = 0;
    let mut estimates = Vec::with_capacity(2 * count);
    for _ in 0..2 * count {
        let measurement = runs(&mut rng, utilisation, replicates);
        let e = Stat::P90.estimate(&measurement).expect("enough samples");
        estimates.push(e);
    }
    for e in &estimates[..count] {
        covered += usize::from(e.interval.low <= truth && truth <= e.interval.high);
    }
    let (mut excludes, mut differs) = (0, 0);
    for pair in estimates.chunks(2) {
        let c = stats::compare("ttft_ms.p90", &pair[0], &pair[1], Better::Lower, MIN_EFFECT)
            .expect("positive");
        excludes += usize::from(c.excludes_one);
        differs += usize::from(matches!(c.verdict, Verdict::Faster | Verdict::Slower));
    }
    let n = count as f64;
    Rates {
        coverage: covered as f64 / n,
        excludes_one: excludes as f64 / n,
        differs: differs as f64 / n,
    }
}

fn old_method(seed: u64, utilisation: f64, truth: f64, count: usize) -> Rates {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut boot = Bootstrap {
        rng: StdRng::seed_from_u64(seed ^ 0xB007),
    };
    let samples = runs(&mut rng, utilisation, 2 * count);
    let covered = samples[..count]
        .iter()
        .filter(|xs| {
            let [lo, hi] = boot.interval(xs);
            lo <= truth && truth <= hi
        })
        .count();
    let (mut excludes, mut differs) = (0, 0);
    for pair in samples.chunks(2) {
        let [lo, hi] = boot.ratio(&pair[0], &pair[1]);
        excludes += usize::from(verdict::excludes_one(lo, hi));
        differs +=
            usize::from(verdict::verdict(lo, hi, MIN_EFFECT, Better::Lower).is_a_difference());
    }
    let n = count as f64;
    Rates {
        coverage: covered as f64 / n,
        excludes_one: excludes as f64 / n,
        differs: differs as f64 / n,
    }
}

/// The P90 of the TTFTs of `count` runs pooled.
fn truth(seed: u64, utilisation: f64, count: usize) -> f64 {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut pooled = runs(&mut rng, utilisation, count).concat();
    p90(&mut pooled)
}

#[test]
fn intervals_cover_the_truth_and_identical_systems_are_rarely_called_different() {
    let scale: usize = std::env::var("AA_SIMULATION_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
        .max(1);
    let count = 1000 / scale;
    let mut failures = Vec::new();
    println!("A/A simulation: {SLOTS} slots, {REQUESTS} requests a run, {count} measurements and pairs per regime");
    println!(
        "{:<26}{:>12}{:>12}{:>14}{:>14}",
        "regime / method", "coverage", "excl. 1", "faster|slower", "(limits)"
    );
    for (name, utilisation, seed) in [
        ("light (30%)", 0.30, 11u64),
        ("near the knee (85%)", 0.85, 12),
    ] {
        let truth = truth(seed * 1000, utilisation, 20_000 / scale);
        let replicated = new_method(seed, utilisation, truth, count, REPLICATES);
        let lone = new_method(seed + 100, utilisation, truth, count, 1);
        let old = old_method(seed + 200, utilisation, truth, count);
        println!("{name} (true P90 {truth:.3}):");
        let row = |label: &str, r: &Rates, limits: &str| {
            println!(
                "  {label:<24}{:>11.1}%{:>11.1}%{:>13.1}%  {limits}",
                r.coverage * 100.0,
                r.excludes_one * 100.0,
                r.differs * 100.0
            )
        };
        row(
            &format!("{REPLICATES} replicates (default)"),
            &replicated,
            "92–98%, ≤7%, ≤1%",
        );
        row("1 run a side", &lone, "—, ≤7%, ≤1%");
        row("per-request bootstrap", &old, "(for comparison)");
        if !(0.92..=0.98).contains(&replicated.coverage) {
            failures.push(format!(
                "{name}: coverage {:.3} outside 92–98%",
                replicated.coverage
            ));
        }
        for (label, r) in [("replicates", &replicated), ("one run", &lone)] {
            if r.excludes_one > 0.07 {
                failures.push(format!(
                    "{name}, {label}: A/A intervals left out 1 in {:.1}% (limit 7%)",
                    r.excludes_one * 100.0
                ));
            }
            if r.differs > 0.01 {
                failures.push(format!(
                    "{name}, {label}: A/A verdicts faster/slower in {:.1}% (limit 1%)",
                    r.differs * 100.0
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
