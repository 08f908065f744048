//! The experiments: one module each, named as its measured file is. Each runs the workspace's
//! own programs, reads the results they write, and turns them into figures (a pure function of
//! those results, tested on small fixtures).

pub mod aa;
pub mod bench_figures;
pub mod ceilings;
pub mod exercise2;
pub mod exercise3;
pub mod exercise4;
pub mod exercise5;
pub mod exercise7;
pub mod exercise8;
pub mod serving;

#[cfg(test)]
pub mod fixtures;

use std::path::PathBuf;
use std::sync::LazyLock;

use anyhow::Result;

use crate::run::Ctx;

/// One experiment: what it measures, the commands it runs (as `--help` lists them: the full
/// run's; `--quick` gives them the tiny model and fewer repeats), the files it writes, the
/// packages whose programs it runs, and the code that runs it.
pub struct Experiment {
    pub name: &'static str,
    pub what: &'static str,
    pub commands: &'static [&'static str],
    pub writes: &'static [&'static str],
    pub programs: &'static [&'static str],
    pub run: fn(&mut Ctx) -> Result<Vec<PathBuf>>,
}

/// Every experiment, in the order a full run takes them: the ceilings first, so the profiles
/// after it read the ceilings just measured on the same quiet machine.
pub static EXPERIMENTS: &[Experiment] = &[
    Experiment {
        name: "ceilings",
        what: "this machine's measured memory read rate and matmul peak, as the profiler's ceilings cache holds them",
        commands: &["gpt2 profile --model synthetic --device cpu --mlp stock --batch 1 --seq 8 --warmup 1 --active 1 --remeasure-ceilings"],
        writes: &["book/measured/ceilings.json"],
        programs: &["gpt2"],
        run: ceilings::run,
    },
    Experiment {
        name: "exercise-3",
        what: "exercise 3's profile of one GPT-2 small forward (B=1, T=8, stock MLP): every row's share, time a step and a call, roofline columns; the budget lines; the table, flame graph and budget chart",
        commands: &[
            "exercise-3 --model synthetic --device cpu --warmup 2 --active 5 --exercise-dir SCRATCH",
            "course bench budget --report SCRATCH/results/report.json --label \"GPT-2 small forward (B=1, T=8, CPU)\" --svg book/src/images/budget.svg",
        ],
        writes: &[
            "book/measured/exercise-3.json",
            "book/src/images/exercise-3-table.txt",
            "book/src/images/flamegraph-gpt2-forward.svg",
            "book/src/images/budget.svg",
        ],
        programs: &["exercise-3", "course"],
        run: exercise3::run,
    },
    Experiment {
        name: "exercise-2",
        what: "batch 8 against 16 on serve (GPT-2 small, synthetic weights): each one's saturation, the two rates, the six comparisons (ratio, 95% interval, verdict); the latency CDF picture",
        commands: &["solution-2 --model synthetic --device cpu --server target/debug/serve --no-progress --exercise-dir SCRATCH"],
        writes: &[
            "book/measured/exercise-2.json",
            "book/src/images/latency-batch-8-vs-16.svg",
        ],
        programs: &["solution-2", "serve"],
        run: exercise2::run,
    },
    Experiment {
        name: "exercise-4",
        what: "the ladder of fewer bytes, f32 then bf16 then q8_0: the three profiles (step time, the matmul and lm_head rows), each rung's cut measured against the cut exercise 4's arithmetic predicts from the f32 columns",
        commands: &[
            "gpt2 profile --model synthetic --device cpu --mlp stock --batch 1 --seq 8 --warmup 2 --active 5 --dtype f32",
            "gpt2 profile ... --dtype bf16 --remeasure-ceilings",
            "gpt2 profile ... --dtype q8_0",
            "solution-4 --profile SCRATCH/f32/report.json --exercise-dir SCRATCH (COURSE_LEARNER_ID=book-measure)",
        ],
        writes: &["book/measured/exercise-4.json"],
        programs: &["gpt2", "solution-4"],
        run: exercise4::run,
    },
    Experiment {
        name: "exercise-5",
        what: "stock against fused MLP: the three stages' profiles (the activation row's share, GB/s, roofline %, reading), the step times, and generation's tokens/s both ways with its ratio, interval and verdict",
        commands: &["solution-5 --model synthetic --device cpu --exercise-dir SCRATCH"],
        writes: &["book/measured/exercise-5.json"],
        programs: &["solution-5"],
        run: exercise5::run,
    },
    Experiment {
        name: "exercise-7",
        what: "the traffic sweep against gpt2 serve (batch 8): the lone TTFT and target, each rate's P90 and verdict, the knee with its interval, R and 2R with their P90s and verdicts; the sweep picture and its text",
        commands: &[
            "gpt2 serve --model synthetic --device cpu --port 0 --max-batch-size 8",
            "solution-7 --base-url URL --no-progress --exercise-dir SCRATCH",
        ],
        writes: &[
            "book/measured/exercise-7.json",
            "book/src/images/exercise-7-sweep.svg",
            "book/src/images/exercise-7-sweep.txt",
        ],
        programs: &["gpt2", "solution-7"],
        run: exercise7::run,
    },
    Experiment {
        name: "exercise-8",
        what: "the synthetic SmolLM2-135M's profile on the engine (B=1, T=8): every row's share and roofline columns",
        commands: &["solution-8 --model synthetic-smollm2-135m --device cpu --warmup 2 --active 5 --exercise-dir SCRATCH"],
        writes: &["book/measured/exercise-8.json"],
        programs: &["solution-8"],
        run: exercise8::run,
    },
    Experiment {
        name: "aa",
        what: "the A/A calibration on a simulated server (crates/bench/tests/aa_simulation.rs): coverage of the true P90 and how often identical systems are called different, per regime and method",
        commands: &["cargo test -p bench --test aa_simulation -- --nocapture"],
        writes: &["book/measured/aa.json"],
        programs: &[],
        run: aa::run,
    },
    Experiment {
        name: "serving",
        what: "gpt2 serve's serving table (batch 8, continuous batching): a lone request, then open loop at 1, 4 and 8 req/s: TTFT, queue, prefill and ITL medians and P90s, output tokens/s",
        commands: &[
            "gpt2 serve --model synthetic --device cpu --port 0 --max-batch-size 8",
            "course bench --base-url URL --model synthetic --concurrency 1 --requests 8 --max-tokens 16 --ignore-eos --seed 900",
            "course bench --base-url URL --model synthetic --rate R --requests 40 --max-tokens 16 --ignore-eos --seed 100+R (R = 1, 4, 8)",
        ],
        writes: &["book/measured/serving.json"],
        programs: &["gpt2", "course"],
        run: serving::run,
    },
];

/// `--list`, and the end of `--help`.
pub fn listing() -> String {
    let mut out = String::from(
        "Experiments (the full run's commands; the programs are built first with `cargo build -p ...` \
         and run from target/debug; SCRATCH is a temporary folder):\n",
    );
    for e in EXPERIMENTS {
        out.push_str(&format!("\n  {}\n      {}\n", e.name, e.what));
        for c in e.commands {
            out.push_str(&format!("      runs   {c}\n"));
        }
        for w in e.writes {
            out.push_str(&format!("      writes {w}\n"));
        }
    }
    out.push_str(
        "\nWith --quick each runs the tiny synthetic model (synthetic-tiny, synthetic-llama-tiny) with few \
         repeats and a reduced A/A simulation, into target/book-measure-quick (or --out); a full run takes \
         minutes (measure on an otherwise idle machine, then commit book/measured and book/src/images).\n",
    );
    out
}

pub static HELP: LazyLock<String> = LazyLock::new(listing);

/// The GPT-2 checkpoint a run profiles: GPT-2 small's shapes, or the tiny one with --quick.
pub fn gpt2_model(ctx: &Ctx) -> &'static str {
    if ctx.quick {
        "synthetic-tiny"
    } else {
        "synthetic"
    }
}

/// The GPT-2 checkpoint as a measured file's note says it.
pub fn model_said(ctx: &Ctx) -> &'static str {
    if ctx.quick {
        "the tiny synthetic GPT-2"
    } else {
        "the synthetic GPT-2 small"
    }
}

/// How a solution's settings are said: its defaults, or --quick's reductions.
pub fn defaults(ctx: &Ctx) -> &'static str {
    if ctx.quick {
        ", --quick's few requests and repeats"
    } else {
        " with its defaults"
    }
}

/// Warm-up and recorded forwards of a profile.
pub fn schedule(ctx: &Ctx) -> [&'static str; 4] {
    if ctx.quick {
        ["--warmup", "1", "--active", "2"]
    } else {
        ["--warmup", "2", "--active", "5"]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_experiment_is_named_as_its_file_and_listed() {
        let list = listing();
        for e in EXPERIMENTS {
            assert!(
                e.writes
                    .contains(&format!("book/measured/{}.json", e.name).as_str()),
                "{}",
                e.name
            );
            assert!(list.contains(&format!("\n  {}\n", e.name)), "{}", e.name);
        }
        let names: Vec<&str> = EXPERIMENTS.iter().map(|e| e.name).collect();
        assert_eq!(
            names,
            [
                "ceilings",
                "exercise-3",
                "exercise-2",
                "exercise-4",
                "exercise-5",
                "exercise-7",
                "exercise-8",
                "aa",
                "serving"
            ]
        );
    }
}
