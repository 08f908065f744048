//! GPT-2 in candle, numerically the same model as Hugging Face's `GPT2LMHeadModel`.
//!
//! - [`weights`]: where a checkpoint comes from (the hub's `openai-community/gpt2`, a local
//!   `save_pretrained` directory, a synthetic one with GPT-2 small's shapes, or a GGUF file,
//!   read by [`gguf`] with its matrices kept quantized) and the loader.
//! - [`model`]: the network, instrumented with profiler scopes; [`generate`]: batched
//!   KV-cache decoding with greedy or seeded sampling.
//! - [`cli`]: the `--model/--device/--dtype` flags shared by the `gpt2` command's
//!   subcommands and by the course's exercises.
//!
//! ```no_run
//! use gpt2::CausalLm;
//! let ckpt = gpt2::weights::resolve(&gpt2::WeightSource::parse("synthetic")?, &mut |m| eprintln!("{m}"))?;
//! let kernels = engine::cpu::KernelPath::resolve(None)?; // COURSE_CPU_KERNELS, else the widest
//! let model = gpt2::weights::load(&ckpt, &candle_core::Device::Cpu, candle_core::DType::F32, kernels)?;
//! let mut cache = model.new_cache(8);
//! let logits = model.forward_one(&[464, 2068, 7586], &mut cache, gpt2::Logits::AllPositions)?;
//! # Ok::<(), gpt2::Error>(())
//! ```

// The engine's layers (ops, cpu, profile, ceilings...) keep their own names: `engine::ops`, not
// a second `gpt2::ops`. The types every caller of the model needs are at this crate's root.

pub mod cli;
pub mod config;
pub mod engine_bench;
pub mod generate;
pub mod gguf;
pub mod model;
#[cfg(feature = "serve")]
pub mod serve;
pub mod tokenizer;
pub mod weights;

pub use config::Config;
pub use engine::cache::SeqCache;
pub use engine::device_flags::DeviceChoice;
pub use engine::error::{Error, Result};
pub use engine::CausalLm;
pub use generate::{generate, Completion, FinishReason, Flow, Request, Sampling, TokenEvent};
pub use model::{Logits, MlpActivation, Model, Segment};
pub use tokenizer::Tokenizer;
pub use weights::WeightSource;
