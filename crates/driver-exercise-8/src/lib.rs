//! The program around exercise 8's TODOs: everything `exercises/exercise-8` and
//! `solutions/exercise-8` would otherwise both carry, so the exercise's files hold what the
//! learner edits and the two differ only in the TODO bodies.
//!
//! The program loads a model of the learner's choosing (a Hugging Face Hub repository, a folder,
//! a synthetic checkpoint with a real model's shapes, or a GGUF file), asks for the learner's
//! prediction of the top op, runs forward passes under the profiler (the Llama family on the
//! course's own engine, other models through their tracing spans), prints the top-ops table with
//! each op's roofline against this machine's ceilings and saves the profile to
//! results/report.json, which `course check 8` grades against. For a safetensors checkpoint on the
//! engine it first writes results/memory.json (the config the memory prediction is graded by) and
//! asks that prediction; `--profile-memory` then measures a generation beside it.
//!
//! - [`args`]: the command line.
//! - [`run`]: one run, in the order it happens: the prediction, the tier, the table, the answers.
//! - [`load`]: a first-tier model on the engine, refused before its weights are read when it
//!   cannot fit.
//! - [`memory`]: the memory prediction's givens ([`MemoryGiven`]), results/memory.json, and the
//!   measured generation.

pub mod args;
pub mod load;
pub mod memory;
pub mod run;

use std::path::Path;
use std::process::ExitCode;

pub use anyhow::Result;
/// The element types [`MemoryGiven`] names (`size_in_bytes()` gives their bytes).
pub use candle_core::DType;
pub use memory::MemoryGiven;

/// Counts allocations, so that a profile can record memory (the profiler's memory columns).
#[global_allocator]
static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;

/// The functions the learner writes: the exercise's TODOs, called by the run in this order.
#[derive(Clone, Copy)]
pub struct Learner {
    pub(crate) predict: fn(dir: &Path) -> Result<()>,
    pub(crate) predict_memory: fn(given: &MemoryGiven, dir: &Path) -> Result<()>,
    pub(crate) fill_in_answers: fn(report: &Path, dir: &Path, on_cuda: bool) -> Result<()>,
}

impl Learner {
    /// `predict` runs before anything loads, with the exercise's folder: the prediction of the
    /// top op. `predict_memory` runs before the profile, for a safetensors checkpoint on the
    /// engine: the memory prediction from the givens the run printed (and wrote to
    /// results/memory.json). `fill_in_answers` runs after the profile, with
    /// results/report.json's path, the exercise's folder, and whether the table was ranked by
    /// CUDA time: the answers.
    pub fn new(
        predict: fn(dir: &Path) -> Result<()>,
        predict_memory: fn(given: &MemoryGiven, dir: &Path) -> Result<()>,
        fill_in_answers: fn(report: &Path, dir: &Path, on_cuda: bool) -> Result<()>,
    ) -> Self {
        Self {
            predict,
            predict_memory,
            fill_in_answers,
        }
    }
}

/// Exercise 8's `main`: parses the command line, runs the profile around the `learner`'s functions
/// and exits by the course's rule (`course_model::exercise::main`). `manifest_dir` is the
/// exercise's own folder, `env!("CARGO_MANIFEST_DIR")` in its crate: its answers.toml and
/// results/ by default, and where a panic counts as the learner's (a `todo!()` left).
pub fn main(manifest_dir: &str, learner: Learner) -> ExitCode {
    course_model::exercise::main(manifest_dir, |args, dir| run::run(args, dir, learner))
}
