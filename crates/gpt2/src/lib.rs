//! GPT-2 in candle, numerically the same model as Hugging Face's `GPT2LMHeadModel`.
//!
//! - [`weights`]: where a checkpoint comes from (the hub's `openai-community/gpt2`, a local
//!   `save_pretrained` directory, or a synthetic one with GPT-2 small's shapes) and the loader.
//! - [`model`]: the network, instrumented with profiler scopes; [`generate`]: batched
//!   KV-cache decoding with greedy or seeded sampling.
//! - [`cli`]: the `--model/--device/--dtype` flags shared by the `gpt2` command's
//!   subcommands and by the course's exercises.
//!
//! ```no_run
//! let ckpt = gpt2::weights::resolve(&gpt2::WeightSource::parse("synthetic")?, &mut |m| eprintln!("{m}"))?;
//! let model = gpt2::weights::load(&ckpt, &candle_core::Device::Cpu, candle_core::DType::F32)?;
//! let mut cache = model.new_cache(1, 8);
//! let logits = model.forward(&[vec![464, 2068, 7586]], &mut cache, gpt2::Logits::AllPositions)?;
//! # Ok::<(), gpt2::Error>(())
//! ```

pub mod cache;
pub mod ceilings;
pub mod cli;
pub mod config;
pub mod device;
pub mod error;
pub mod generate;
pub mod cpu;
pub mod linear;
pub mod model;
pub mod ops;
pub mod profile;
pub mod sampler;
#[cfg(feature = "serve")]
pub mod serve;
pub mod timing;
pub mod tokenizer;
pub mod weights;
pub mod work;

pub use config::Config;
pub use device::DeviceChoice;
pub use error::{Error, Result};
pub use generate::{generate, Completion, FinishReason, Flow, Request, Sampling, TokenEvent};
pub use cache::{Cache, SeqCache};
pub use model::{Logits, MlpActivation, Model, Segment};
pub use tokenizer::Tokenizer;
pub use weights::WeightSource;
