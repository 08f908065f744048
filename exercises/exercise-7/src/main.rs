//! Exercise 7: Double the traffic. Does the P90 TTFT target still hold at twice the rate?
//!
//! A benchmarking question against a real HTTP server (`gpt2 serve`, or any OpenAI-compatible
//! server), in two steps:
//!
//! 1. **Calibrate.** A few requests one at a time give a lone request's TTFT
//!    (`results/lone/`); the target is the exercise page's rule, 4 × its median (or
//!    `--target-ms`, when your instructor sets one). A short sweep (open-loop runs at rising
//!    rates, stopping at the first that breaks the target) finds the knee: the highest rate at
//!    which P90 TTFT still meets the target, with its 95% interval. `results/sweep/` gets its
//!    bench.json and sweep.svg.
//! 2. **Ask the question.** R is the highest rate at which the calibration sweep's target held,
//!    so that 2R is above it (`course_model::traffic::RATE_RULE`, the rule `course check 7`
//!    checks the runs by; with the sweep's doubling rates 2R is the first rate that failed).
//!    Then the same load (Poisson arrivals, seeded prompts, fixed output length) runs at R and
//!    at 2R, one variable changed.
//!    Each run writes its bench.json into results/rate-1x/ and results/rate-2x/.
//!
//! The program itself is crates/driver-exercise-7; this file hands it your `fill_in_answers`.
//!
//! TODO (you): start the server, run this, and fill in answers.toml: the target, the knee, both
//! P90 TTFTs, and at each rate whether the target holds, fails, or cannot be told apart from it
//! at this sample size (read the 95% interval of each P90, not just the number).

use anyhow::Result;
use bench::sweep::Sweep;
use driver_exercise_7::P90Ttft;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    driver_exercise_7::main(env!("CARGO_MANIFEST_DIR"), fill_in_answers)
}

/// The answers: the target, the knee, both P90 TTFTs, and at each rate what its 95% interval
/// says against the target. `target` is the P90 TTFT target in ms, `knee` the calibration sweep,
/// `p90` each run's P90 TTFT in ms with its 95% interval (at R, then at 2R; `None` where a run
/// has none), `dir` the exercise's folder.
fn fill_in_answers(target: f64, knee: &Sweep, p90: &[P90Ttft], dir: &Path) -> Result<()> {
    // TODO: you compare each interval with the target and fill in answers.toml.
    let _ = (target, knee, p90, dir);
    println!(
        "Next: compare each interval with the target, fill in answers.toml, then `course check 7`."
    );
    Ok(())
}
