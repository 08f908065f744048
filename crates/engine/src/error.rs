//! Errors for people: each names the file or value at fault and what to do next.

use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },

    #[error("{}: invalid config: {message}", path.display())]
    Config { path: PathBuf, message: String },

    #[error("{}: {message}\n  next step: re-download or re-export the checkpoint (e.g. `model.save_pretrained(dir)` in transformers)", path.display())]
    Weights { path: PathBuf, message: String },

    #[error("{}: {message}", path.display())]
    Tokenizer { path: PathBuf, message: String },

    #[error("invalid input: {0}")]
    Input(String),

    #[error("device: {0}")]
    Device(String),

    #[error(transparent)]
    Candle(#[from] candle_core::Error),
}

impl Error {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io { path: path.to_owned(), source }
    }
}
