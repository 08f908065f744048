//! Exercise 8: Your own model — exercise 3's questions, asked of a model you pick.
//!
//! Loads a Llama-family model (a Hugging Face Hub repository, a folder, a synthetic checkpoint
//! with a real model's shapes, or a GGUF file with its weights as stored), runs forward passes
//! under the profiler on the course's own engine, prints the top-ops table with each op's
//! roofline against this machine's ceilings, and saves the profile to results/report.json, which
//! `course check 8` grades your answers against.
//!
//! Before the profile runs, in a terminal, it asks for your prediction (which op will top the
//! table of YOUR model, and its share) when answers.toml holds none yet.
//!
//! This file holds what you write: the functions below, which the program calls before the
//! profile and after it (the program is crates/driver-exercise-8: run.rs reads top to bottom,
//! load.rs loads the model, memory.rs writes results/memory.json).
//!
//! Solution: the same program with the reference's TODO bodies. Without a terminal (the test
//! command) `predict` records the reference guess; after the run `fill_in_answers` fills in
//! answers.toml from its own results/report.json with the grader's reader and rule
//! (`course_model::top_ops_reference`, as solution 3 does): the top three rows and their shares, and
//! the plan the course's rule prefers on this model, on this machine. Before the profile,
//! `predict_memory` writes the memory prediction the course's arithmetic gives from the config.

use std::path::Path;
use std::process::ExitCode;

use driver_exercise_8::{Learner, MemoryGiven, Result};

fn main() -> ExitCode {
    driver_exercise_8::main(
        env!("CARGO_MANIFEST_DIR"),
        Learner::new(predict, predict_memory, fill_in_answers),
    )
}

/// Your prediction, before the profile runs: asked in a terminal when answers.toml holds none
/// yet, and recorded there with the time (without a terminal it says how to make one).
fn predict(dir: &Path) -> Result<()> {
    // Asked in a terminal as the exercise asks; without one, the reference guess.
    course_model::top_ops_reference::predict(dir)
}

/// The answers: the top three rows with their shares, and the plan.
fn fill_in_answers(report: &Path, dir: &Path, on_cuda: bool) -> Result<()> {
    // The same table whichever device ranked it: the report says which column it used.
    let _ = on_cuda;
    course_model::top_ops_reference::fill_in_answers(report, dir, 8)
}

/// Your memory prediction, before the profile runs: the peak of a generation at the given batch
/// and context, by the course's arithmetic on the config printed above (results/memory.json
/// holds it too).
fn predict_memory(given: &MemoryGiven, dir: &Path) -> Result<()> {
    // The weights once; K and V for every layer, key/value head, position and sequence.
    let weights = given.parameters * given.weights_dtype.size_in_bytes();
    let kv_cache = 2
        * given.layers
        * given.kv_heads
        * given.head_dim
        * given.kv_dtype.size_in_bytes()
        * given.context
        * given.batch;
    // Activations at their largest, the prefill of every sequence, one layer at a time: the
    // residual stream, q, k, v and the attention's output (5 × hidden), the MLP's gate, up and
    // product (3 × intermediate), and each position's attention scores (heads × context).
    let per_token =
        5 * given.hidden_size + 3 * given.intermediate_size + given.heads * given.context;
    let activations = given.batch * given.context * per_token * given.kv_dtype.size_in_bytes();
    let answers = [
        ("memory.weights_bytes", weights),
        ("memory.kv_cache_bytes", kv_cache),
        ("memory.peak_bytes", weights + kv_cache + activations),
    ];
    answers_file::fill_answers::fill(
        &dir.join("answers.toml"),
        &answers.map(|(path, bytes)| (path.to_string(), (bytes as f64).into())),
    )
}
