//! Exercise 2: Batch 8 versus 16. Is batch size 16 faster than batch size 8 for my traffic?
//!
//! A benchmarking question against a real server, asked where its answer changes. This program
//! starts the course's `serve` itself (the binary built beside it) at `--max-batch-size 8` and at 16,
//! first to **calibrate**: with twice as many requests in flight as it batches (closed loop), it
//! finds the rate each sustains on this machine, its saturation. Then it sends open-loop traffic
//! (Poisson arrivals, seeded prompts, `--max-tokens` tokens each) at two rates, to batch 8 and to
//! batch 16, one variable changed:
//!
//! - **below** batch 8's saturation (0.6 of it): the batch limit does not bind; both servers keep
//!   up, so both deliver what arrives, and the arrivals set the throughput;
//! - **above** both saturations (twice the larger): both fall behind and run full batches while a
//!   queue waits; batch 16 decodes more sequences a step, which changes throughput and trades the
//!   wait for a first token (TTFT) against the time per token (TPOT). (Just above batch 8's
//!   saturation batch 16 is near its own, where a short run's figures swing most.)
//!
//! Each rate and batch size is `--replicates` independent runs of `--requests` requests (fresh
//! arrivals each), so the 95% intervals see run-to-run change. Batch 16 is compared with batch 8
//! at each rate by your percentile and your verdict (src/stats.rs) on output tokens/s, P90 TTFT
//! and P90 TPOT. Everything goes to results/bench.json and results/latency.svg.
//!
//! The program itself is crates/driver-exercise-2; this file hands it your functions.
//!
//! Solution: src/stats.rs is written, and this run fills in answers.toml from its own results.

mod stats;

use anyhow::Result;
use bench::report::Report;
use driver_exercise_2::Learner;
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let learner = Learner::new(stats::percentile, stats::verdict, fill_in_answers);
    driver_exercise_2::main(env!("CARGO_MANIFEST_DIR"), learner)
}

/// The answers to `[below]`, `[above]` and `[decision]`, read from the comparisons printed above
/// (also in `report`, as results/bench.json holds them).
fn fill_in_answers(report: &Report, dir: &Path) -> Result<()> {
    use answers_file::fill_answers as answers;
    use anyhow::Context;
    use bench::stats::Comparison;
    use driver_exercise_2::SCENARIOS;
    // The answers, as read from the printed comparisons. The decision is about the rate above
    // batch 8's saturation, where the limit binds, and about what each request waits per token.
    let verdict_of = |scenario: &str, metric: &str| -> Result<&Comparison> {
        report
            .comparisons
            .iter()
            .find(|c| c.scenario.as_deref() == Some(scenario) && c.metric == metric)
            .with_context(|| format!("no {metric} comparison {scenario} saturation"))
    };
    let answer = |c: &Comparison| {
        if c.set_by_arrivals {
            "arrivals"
        } else {
            c.verdict.as_str()
        }
    };
    let mut filled = Vec::new();
    for scenario in SCENARIOS {
        for (key, metric) in [
            ("throughput", "output_tokens_per_s"),
            ("ttft_p90", "ttft_ms.p90"),
            ("tpot_p90", "tpot_ms.p90"),
        ] {
            filled.push((
                format!("{scenario}.{key}"),
                answer(verdict_of(scenario, metric)?).into(),
            ));
        }
    }
    filled.push((
        "above.throughput_ratio".into(),
        verdict_of("above", "output_tokens_per_s")?.ratio.into(),
    ));
    filled.push(("decision.meaning".into(), "tpot".into()));
    filled.push((
        "decision.answer".into(),
        answer(verdict_of("above", "tpot_ms.p90")?).into(),
    ));
    answers::fill(&dir.join("answers.toml"), &filled)?;
    println!("Next: `course check 2`.");
    Ok(())
}
