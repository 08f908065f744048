//! The course's inference engine below its models, shared by every model family it runs
//! (GPT-2 in `gpt2`, the Llama family in `llama`).
//!
//! - [`ops`]: the forward pass's ops, one function per profiler row: each opens its row,
//!   attaches its work ([`work_counts`]) and picks its kernel; [`ops::list`] is the one home of
//!   the rows' names and budget lines.
//! - [`cpu`]: the engine's own CPU kernels and the [`cpu::KernelPath`] a model is built for.
//! - [`linear`]: dense layers, each weight laid out once for its device and kernel path.
//! - [`cache`] and [`pass`]: each sequence's KV cache, and one forward pass over sequences of
//!   any lengths (continuous batching's pass).
//! - [`loader`]: the one checkpoint loader (Hub, folder, synthetic; GGUF's place), with
//!   [`checkpoint`] (a folder's safetensors files) and [`tokenizer`] (its `tokenizer.json`).
//! - [`generate`] and [`sampler`]: batched generation of any model, continuous batching's
//!   passes and the sampling of each next token.
//! - [`CausalLm`]: what the tools need of a model; [`profile`] records a forward pass of any
//!   model with this machine's [`ceilings`], [`model_cases`] times the benchmark's cases.

use std::path::PathBuf;

/// Where the course keeps what it makes once (synthetic checkpoints, measured ceilings):
/// `COURSE_CACHE` ([`settings::CACHE`]), else `$XDG_CACHE_HOME/gpt2-course`, else
/// `~/.cache/gpt2-course`.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = settings::CACHE.var_os() {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("gpt2-course")
}

pub mod cache;
pub mod causal_lm;
pub mod ceilings;
pub mod checkpoint;
pub mod cpu;
pub mod device_flags;
pub mod error;
pub mod generate;
/// ggml's tensor types (block sizes and layouts), shared by the GGUF reader and the quantized kernels.
pub mod ggml_type;
pub mod gguf;
pub mod linear;
pub mod loader;
pub mod memory;
pub mod model_cases;
pub mod ops;
pub mod parity;
pub mod pass;
pub mod profile;
pub mod quant;
pub mod run_args;
pub mod sampler;
pub mod settings;
pub mod tokenizer;
pub mod work_counts;

pub use cache::SeqCache;
pub use causal_lm::CausalLm;
pub use error::{Error, Result};
pub use pass::{Logits, Segment};
