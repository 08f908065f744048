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
//! Solution: the same program; after the runs `fill_in_answers` fills in answers.toml: the
//! target, the knee, both P90 TTFTs, and at each rate the verdict its 95% interval gives against
//! the target (the rule `course check 7` grades by, `course_model::traffic::Verdict::of`).

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
    use answers_file::fill_answers as answers;
    use anyhow::bail;
    use bench::sweep::Knee;
    use course_model::traffic::Verdict;
    let (Some((at_rate, ci_rate)), Some((at_double, ci_double))) = (p90[0].clone(), p90[1].clone())
    else {
        bail!("a run has no TTFT figures (did every request fail?), so there is nothing to answer");
    };
    let Knee::At(knee_rps) = knee.knee else {
        bail!("the sweep found no knee between the rates it tried ({}); give --sweep-rates that reach past it", knee.text().trim_end());
    };
    let (holds_at_rate, holds_at_double) = (
        Verdict::of([ci_rate.low, ci_rate.high], target),
        Verdict::of([ci_double.low, ci_double.high], target),
    );
    println!(
        "Against {target} ms: at R the answer is \"{}\", at 2R \"{}\".",
        holds_at_rate.as_answer(),
        holds_at_double.as_answer()
    );
    answers::fill(
        &dir.join("answers.toml"),
        &[
            ("target_p90_ttft_ms".into(), target.into()),
            ("knee_rps".into(), knee_rps.into()),
            ("p90_ttft_ms_at_rate".into(), at_rate.into()),
            (
                "target_holds_at_rate".into(),
                holds_at_rate.as_answer().into(),
            ),
            ("p90_ttft_ms_at_double".into(), at_double.into()),
            (
                "target_holds_at_double".into(),
                holds_at_double.as_answer().into(),
            ),
        ],
    )?;
    println!("Next: `course check 7`.");
    Ok(())
}
