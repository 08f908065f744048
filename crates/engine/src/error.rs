//! Errors for people: each names the file or value at fault and what to do next.

use std::path::{Path, PathBuf};

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },

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
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// A folder written in one step (`output::write_dir`, the workspace's one atomic write of a
/// folder, as checkpoints are written): its filler's own error as it was, or the file the
/// folder's own step failed on.
impl From<output::DirError<Error>> for Error {
    fn from(e: output::DirError<Error>) -> Self {
        match e {
            output::DirError::Fill(e) => e,
            output::DirError::Io { path, source } => Error::Io { path, source },
        }
    }
}

/// Candle's message about a checkpoint's weights (it names the tensor), with what usually
/// causes it; `family` names the kind of checkpoint expected (`GPT-2`, `Llama-family`).
pub fn weights_message(e: &candle_core::Error, family: &str) -> String {
    let text = e.to_string();
    if text.contains("shape mismatch") || text.contains("unexpected shape") {
        format!("{text} (does config.json describe these weights?)")
    } else if text.contains("cannot find tensor") {
        format!("{text} (not a {family} checkpoint, or an incomplete one)")
    } else {
        format!("not a readable safetensors file: {text} (truncated or corrupted download? delete it and download it again)")
    }
}
