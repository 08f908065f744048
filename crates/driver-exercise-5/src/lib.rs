//! The program around exercise 5's TODOs: everything `exercises/exercise-5` and
//! `solutions/exercise-5` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
//!
//! What it does, with the learner's two fused ops (stage 1, the fusion; stage 2, the kernel
//! fix: their `src/fused.rs`, passed in as a [`Learner`]): checks them against candle's unfused
//! `broadcast_add` + `gelu` ([`correctness`], `results/fused_check.json`); asks the learner's
//! `predict_first`; profiles a GPT-2 forward pass with the stock ops and with each stage in the
//! MLP, printing what moved in the roofline columns ([`profile`]); benchmarks generation end to
//! end, the last stage against the stock ops ([`benchmark`], `results/bench.json`); and hands
//! over to the learner's `fill_in_answers`.
//!
//! It also holds what the learner's ops are built on but do not write ([`op`]: the input checks,
//! the vectorisable `exp`; `cuda`, with `--features cuda`: the kernel's launch), and the tests of
//! each stage ([`stage_tests!`], over [`checks`]).

mod args;
pub mod benchmark;
pub mod checks;
pub mod correctness;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod op;
pub mod profile;
mod run;

use anyhow::Result;
use candle_core::CustomOp2;
use engine::ops::BiasActivation;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

pub use args::Args;
pub use op::{exp, inputs, Fused, NOT_WRITTEN, PARALLEL_MIN, SQRT_2_OVER_PI};

/// A stage of the story: its op, where its profile goes, and how the page names it.
pub struct Stage {
    /// How the run names it: "stage 1, the fusion".
    pub label: &'static str,
    /// The learner's op.
    pub op: Arc<dyn BiasActivation>,
    /// Its folder under results/ (`stage1`, `stage2`).
    pub dir: &'static str,
}

/// What a run measured and wrote, for the learner's `fill_in_answers`.
pub struct Measured<'a> {
    /// The exercise's folder (its answers.toml).
    pub dir: &'a Path,
    /// Its results/ folder, with the files this run wrote.
    pub results: &'a Path,
    /// The stages that ran.
    pub stages: &'a [Stage],
    /// The fused ops' largest difference from the unfused ops (the worst stage's).
    pub max_abs_error: f32,
    /// The benchmark's verdict.
    pub verdict: &'a str,
}

/// The learner's code, which the program calls.
pub struct Learner {
    /// Stage 1, the fusion (`FusedBiasGelu`).
    pub stage1: Arc<dyn BiasActivation>,
    /// Stage 2, the kernel fix (`FastFusedBiasGelu`).
    pub stage2: Arc<dyn BiasActivation>,
    /// Asks for the prediction before the first profile: the exercise's folder, and the report
    /// the first profile writes.
    pub predict_first: fn(dir: &Path, first_report: &Path),
    /// Fills in answers.toml from what the run measured.
    pub fill_in_answers: fn(measured: &Measured) -> Result<()>,
}

impl Learner {
    /// The learner's two stages (candle custom ops, stage 1 then stage 2) and functions.
    pub fn new<S1, S2>(
        (stage1, stage2): (S1, S2),
        predict_first: fn(dir: &Path, first_report: &Path),
        fill_in_answers: fn(measured: &Measured) -> Result<()>,
    ) -> Learner
    where
        S1: CustomOp2 + Send + Sync + 'static,
        S2: CustomOp2 + Send + Sync + 'static,
    {
        Learner {
            stage1: Arc::new(Fused(stage1)),
            stage2: Arc::new(Fused(stage2)),
            predict_first,
            fill_in_answers,
        }
    }
}

/// Exercise 5's program, for the package whose folder is `manifest_dir` (its
/// `env!("CARGO_MANIFEST_DIR")`): parses the command line, runs, and exits as every exercise does
/// (`course_model::exercise::main`).
pub fn main(manifest_dir: &str, learner: Learner) -> ExitCode {
    course_model::exercise::main(manifest_dir, |args: Args, dir: &Path| {
        run::run(&learner, &args, dir)
    })
}
