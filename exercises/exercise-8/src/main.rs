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
//! TODO (you): pick a model that fits your machine, run it (`cargo run -p exercise-8 -- --model
//! ID`), predict its memory for a generation at the batch and context it gives (answers.toml's
//! `[memory]`, from the config it prints), read the table, and fill in answers.toml: the three
//! ops with the largest self time with their shares, and your plan to cut the step time by 10%.

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
    // TODO: you type your prediction when asked (or run `course run 8`, which asks too).
    answers_file::prediction::top_op_first(dir, "exercise-8", 8);
    Ok(())
}

/// The answers: the top three rows with their shares, and the plan.
fn fill_in_answers(report: &Path, dir: &Path, on_cuda: bool) -> Result<()> {
    // TODO: you fill in answers.toml from the table (this program leaves it to you).
    let _ = (report, dir);
    println!(
        "Next: copy the first three rows' names and {} shares into answers.toml; for your plan, read the op's Roofline % \
         and Reading before you choose a mechanism; then `course check 8`.",
        if on_cuda { "Self CUDA %" } else { "Self CPU %" }
    );
    Ok(())
}

/// Your memory prediction, before the profile runs: the peak of a generation at the given batch
/// and context, by the course's arithmetic on the config printed above (results/memory.json
/// holds it too).
fn predict_memory(given: &MemoryGiven, dir: &Path) -> Result<()> {
    // TODO: you write weights_bytes, kv_cache_bytes and peak_bytes in answers.toml's [memory].
    let _ = (given, dir);
    println!(
        "Predict before you read the table: answers.toml's [memory] asks for the weights, the KV cache and the \
         peak, in bytes (its comments give the arithmetic)."
    );
    Ok(())
}
