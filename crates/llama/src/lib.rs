//! The Llama family on the course's engine: Llama 2, 3, 3.1 and 3.2, SmolLM and SmolLM2,
//! TinyLlama, Mistral, Qwen2 and Qwen2.5, Qwen3, all one decoder with a few switches
//! ([`config::Config`]), built on the same ops, kernels and KV caches as GPT-2 (`engine`), so a
//! profile of any of them has one named row per op, with its work count and roofline.
//!
//! ```no_run
//! use engine::CausalLm;
//! let model = llama::weights::load(std::path::Path::new("SmolLM2-135M"), &candle_core::Device::Cpu,
//!     candle_core::DType::F32, engine::cpu::KernelPath::resolve(None)?)?;
//! let mut cache = model.new_cache(8);
//! let logits = model.forward_one(&[1, 2, 3], &mut cache, engine::Logits::AllPositions)?;
//! # Ok::<(), engine::Error>(())
//! ```

pub mod config;
pub mod generate;
pub mod gguf;
pub mod model;
pub mod rope;
pub mod source;
pub mod synthetic;
pub mod synthetic_gguf;
pub mod weights;

pub use config::{Config, Family};
pub use model::Model;
