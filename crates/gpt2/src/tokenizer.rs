//! GPT-2's tokenizer: the engine's [`engine::tokenizer::Tokenizer`] over the checkpoint's
//! byte-level BPE `tokenizer.json`, and the end-of-text token its synthetic one ends with.

use std::path::Path;

use engine::error::Result;

pub use engine::tokenizer::{TextStream, Tokenizer};

/// The end-of-text token of GPT-2's vocabulary (its last id).
pub const END_OF_TEXT: &str = "<|endoftext|>";

/// The synthetic checkpoint's tokenizer: `vocab_size` ids, `<|endoftext|>` last, as in GPT-2.
pub fn write_synthetic(path: &Path, vocab_size: usize, seed: u64) -> Result<()> {
    engine::tokenizer::write_synthetic(path, vocab_size, seed, END_OF_TEXT)
}
