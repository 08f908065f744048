//! R, the rate the question is asked at, by the exercise's rule.

use crate::args::Args;
use anyhow::{bail, Result};
use bench::sweep::Sweep;
use course_model::traffic::{RateRule, RATE_RULE};

/// R by the exercise's rule ([`RATE_RULE`]): the highest rate at which the sweep's target held,
/// or `--rate` where it keeps to the rule (at or below that rate, with 2R above it).
pub(crate) fn pick_rate(args: &Args, knee: &Sweep) -> Result<f64> {
    let rule = RateRule::from_sweep(knee.points.iter().map(|p| (p.rate, p.holds)))
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let rate = args.rate.unwrap_or_else(|| rule.rate());
    if let Err(e) = rule.check(rate, 2.0 * rate) {
        bail!(
            "--rate {rate}: {e}. The exercise's rule: {RATE_RULE}; give a rate above {} and at most {} req/s, or leave --rate out",
            rule.rate() / 2.0,
            rule.rate()
        );
    }
    Ok(rate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bench::sweep::{Knee, Point};
    use clap::Parser;

    /// A sweep at 1, 2 and 4 req/s whose target held at the first two.
    fn held_until_four() -> Sweep {
        let point = |rate: f64, holds: bool| Point {
            rate,
            values_ms: vec![if holds { 50.0 } else { 150.0 }],
            margin: if holds { 0.5 } else { 1.5 },
            holds,
        };
        Sweep {
            bounds: Vec::new(),
            points: vec![point(1.0, true), point(2.0, true), point(4.0, false)],
            knee: Knee::At(3.0),
            ci95_knee: None,
        }
    }

    fn args(words: &[&str]) -> Args {
        Args::parse_from(std::iter::once("exercise-7").chain(words.iter().copied()))
    }

    #[test]
    fn r_is_the_highest_rate_that_held_unless_a_rate_within_the_rule_is_given() {
        assert_eq!(pick_rate(&args(&[]), &held_until_four()).unwrap(), 2.0);
        assert_eq!(
            pick_rate(&args(&["--rate", "1.5"]), &held_until_four()).unwrap(),
            1.5
        );
    }

    #[test]
    fn a_rate_that_breaks_the_rule_says_which_rates_keep_it() {
        for rate in ["0.5", "3"] {
            let e = pick_rate(&args(&["--rate", rate]), &held_until_four()).unwrap_err();
            assert!(
                e.to_string()
                    .contains("give a rate above 1 and at most 2 req/s"),
                "--rate {rate}: {e}"
            );
        }
    }

    #[test]
    fn a_sweep_whose_target_never_held_has_no_r() {
        let mut sweep = held_until_four();
        sweep.points.iter_mut().for_each(|p| p.holds = false);
        assert!(pick_rate(&args(&[]), &sweep).is_err());
    }
}
