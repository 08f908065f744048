//! The comparison of B against A, built on the learner's `percentile` and `verdict`.

use crate::{Percentile, VerdictRule};
use bench::intervals::{self, Estimate};
use bench::stats::{self, Better, Comparison, Stat};

/// The learner's two statistics: every percentile and every verdict of the comparisons goes
/// through them.
#[derive(Clone, Copy)]
pub struct Statistics {
    /// The learner's `percentile`.
    pub percentile: Percentile,
    /// The learner's `verdict`.
    pub verdict: VerdictRule,
}

impl Statistics {
    /// `stat` of the pooled `runs` with its 95% interval, by the learner's percentile (the
    /// bench crate's intervals, over independent runs: crates/bench/src/intervals.rs).
    pub fn estimate(&self, stat: Stat, runs: &[Vec<f64>]) -> Option<Estimate> {
        match stat.percentile() {
            None => intervals::mean(runs),
            Some(p) => {
                intervals::percentile_with(runs, p, &|sorted, p| (self.percentile)(sorted, p))
            }
        }
    }

    /// Compares B against A on `stat`: `a` and `b` hold each side's samples, one group per
    /// independent run. The ratio stat(b) / stat(a) and its 95% interval (from each side's
    /// interval over its runs, by the bench crate), with the learner's verdict. `None` when a
    /// side has too few samples or stat(a) is 0.
    pub fn compare(
        &self,
        metric: &str,
        a: &[Vec<f64>],
        b: &[Vec<f64>],
        stat: Stat,
        better: Better,
        min_effect: f64,
    ) -> Option<Comparison> {
        let mut c = stats::compare(
            metric,
            &self.estimate(stat, a)?,
            &self.estimate(stat, b)?,
            better,
            min_effect,
        )?;
        c.verdict = (self.verdict)(c.ci_low, c.ci_high, min_effect, better);
        Some(c)
    }
}
