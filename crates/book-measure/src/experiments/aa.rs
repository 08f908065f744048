//! `aa`: the A/A calibration of bench's intervals and verdicts on a simulated server, where the
//! truth is known (crates/bench/tests/aa_simulation.rs, run as the test it is): how often a
//! 95% interval of P90 TTFT covers the true P90, and how often two measurements of the same
//! system are called different, for each regime and method. With --quick the simulation's
//! counts are divided by 4 (AA_SIMULATION_SCALE, as the aarch64 run uses).

use std::path::PathBuf;
use std::process::Command;

use anyhow::{bail, Result};

use super::Ctx;
use crate::sheet::Sheet;

pub fn run(ctx: &mut Ctx) -> Result<Vec<PathBuf>> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args([
        "test",
        "-p",
        "bench",
        "--test",
        "aa_simulation",
        "--quiet",
        "--",
        "--nocapture",
    ]);
    if ctx.quick {
        cmd.env("AA_SIMULATION_SCALE", "4");
    }
    let stdout = ctx.step("A/A simulation", &mut cmd)?;
    let sheet = figures(
        &stdout,
        "cargo test -p bench --test aa_simulation -- --nocapture".into(),
    )?;
    Ok(vec![ctx.write(
        &sheet,
        "a seeded simulation of an open-loop server, where the true P90 is known",
    )?])
}

/// From the simulation's printed table: for each regime (`light`, `knee`) its utilisation
/// (`REGIME.utilisation_pct`), the true P90 (`REGIME.true_p90`, in units of the mean service
/// time), and for each method (`replicates`: 3 replicates, the default; `one_run`: one run a
/// side; `bootstrap`: the per-request bootstrap used before) `REGIME.METHOD.coverage_pct`,
/// `REGIME.METHOD.excludes_one_pct` and `REGIME.METHOD.differs_pct`; and `pairs` (the
/// measurements and pairs per regime).
pub fn figures(stdout: &str, command: String) -> Result<Sheet> {
    let mut sheet = Sheet::new("aa", command);
    let mut regime: Option<&str> = None;
    for line in stdout.lines() {
        if let Some(rest) = line.strip_prefix("A/A simulation:") {
            // "2 slots, 60 requests a run, 1000 measurements and pairs per regime"
            for part in rest.split(',') {
                let words: Vec<&str> = part.split_whitespace().collect();
                if words.len() >= 2 && words[1] == "measurements" {
                    if let Ok(n) = words[0].parse::<f64>() {
                        sheet.num("pairs", n, "", 0);
                    }
                }
            }
            continue;
        }
        if line.contains("(true P90") && line.trim_end().ends_with("):") {
            let name = if line.starts_with("light") {
                "light"
            } else if line.starts_with("near the knee") {
                "knee"
            } else {
                bail!("the A/A simulation printed a regime this reader does not know: {line}");
            };
            regime = Some(name);
            if let Some(u) = between(line, "(", "%)").and_then(|u| u.parse::<f64>().ok()) {
                sheet.num(format!("{name}.utilisation_pct"), u, "%", 0);
            }
            if let Some(t) = between(line, "(true P90 ", "):").and_then(|t| t.parse::<f64>().ok()) {
                sheet.num(format!("{name}.true_p90"), t, "", 3);
            }
            continue;
        }
        let Some(regime) = regime else { continue };
        let t = line.trim_start();
        let method = if t.starts_with("3 replicates") || t.contains("replicates (default)") {
            "replicates"
        } else if t.starts_with("1 run a side") {
            "one_run"
        } else if t.starts_with("per-request bootstrap") {
            "bootstrap"
        } else {
            continue;
        };
        let pcts: Vec<f64> = t
            .split_whitespace()
            .filter_map(|w| w.strip_suffix('%'))
            .filter_map(|w| w.parse::<f64>().ok())
            .take(3)
            .collect();
        if pcts.len() < 3 {
            bail!("cannot read three percentages from the A/A simulation's line: {line}");
        }
        for (field, v) in ["coverage_pct", "excludes_one_pct", "differs_pct"]
            .iter()
            .zip(&pcts)
        {
            sheet.num(format!("{regime}.{method}.{field}"), *v, "%", 1);
        }
    }
    if sheet.value("knee.replicates.coverage_pct").is_none() {
        bail!("the A/A simulation's output has no table (did the test print with --nocapture?):\n{stdout}");
    }
    Ok(sheet)
}

fn between<'a>(s: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = s.find(start)? + start.len();
    let to = s[from..].find(end)? + from;
    Some(&s[from..to])
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUTPUT: &str = "\nrunning 1 test\n\
A/A simulation: 2 slots, 60 requests a run, 1000 measurements and pairs per regime\n\
regime / method               coverage     excl. 1 faster|slower      (limits)\n\
light (30%) (true P90 2.041):\n\
  3 replicates (default)          96.4%        2.0%          0.4%  92–98%, ≤7%, ≤1%\n\
  1 run a side                     0.0%        0.0%          0.0%  —, ≤7%, ≤1%\n\
  per-request bootstrap           87.4%        9.7%          6.3%  (before)\n\
near the knee (85%) (true P90 4.512):\n\
  3 replicates (default)          95.8%        0.2%          0.1%  92–98%, ≤7%, ≤1%\n\
  1 run a side                     0.0%        0.0%          0.0%  —, ≤7%, ≤1%\n\
  per-request bootstrap           22.3%       62.6%         56.8%  (before)\n\
test intervals_cover_the_truth_and_identical_systems_are_rarely_called_different ... ok\n";

    #[test]
    fn the_simulation_s_table_becomes_figures() {
        let s = figures(OUTPUT, "x".into()).unwrap();
        assert_eq!(s.value("pairs"), Some(1000.0));
        assert_eq!(s.value("light.utilisation_pct"), Some(30.0));
        assert_eq!(s.value("knee.utilisation_pct"), Some(85.0));
        assert_eq!(s.value("knee.true_p90"), Some(4.512));
        assert_eq!(s.value("light.replicates.coverage_pct"), Some(96.4));
        assert_eq!(s.value("knee.bootstrap.coverage_pct"), Some(22.3));
        assert_eq!(s.value("knee.bootstrap.differs_pct"), Some(56.8));
        assert_eq!(s.value("knee.replicates.differs_pct"), Some(0.1));
        assert_eq!(s.value("light.one_run.excludes_one_pct"), Some(0.0));
    }

    #[test]
    fn an_output_without_the_table_is_an_error() {
        assert!(figures("running 1 test\ntest x ... ok\n", "x".into()).is_err());
    }
}
