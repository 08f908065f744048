//! What can go wrong reading, writing or looking up measured figures; each message names the file
//! and says what to do.

use std::path::PathBuf;

/// An error of this crate. Its `Display` is the whole message a reader sees.
#[derive(Debug, thiserror::Error)]
pub enum MeasuredError {
    #[error(
        "{}: no such file, so `{name}.*` figures cannot be rendered. Next step: {command}",
        path.display()
    )]
    MissingFile {
        path: PathBuf,
        name: String,
        command: String,
    },

    #[error("{}: cannot read it: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error(
        "{}: not a measured-figures file: {source}. Next step: {command} (the format is \
         documented in crates/measured/src/file.rs)",
        path.display()
    )]
    Parse {
        path: PathBuf,
        command: String,
        #[source]
        source: serde_json::Error,
    },

    #[error(
        "{}: {}. Next step: {command} (the format is documented in crates/measured/src/file.rs)",
        path.display(), problems.join("; ")
    )]
    Invalid {
        path: PathBuf,
        problems: Vec<String>,
        command: String,
    },

    #[error(
        "{}: no figure `{key}` (it has: {}). Next step: if the key is right, re-run `{command}` \
         (its experiment may not write this key yet: list it in book/measured/wanted/PAGE.tsv); \
         if not, fix the key",
        path.display(), list_keys(known)
    )]
    MissingKey {
        path: PathBuf,
        key: String,
        known: Vec<String>,
        command: String,
    },

    #[error(
        "`{key}` is not a figure's name: write NAME.KEY, the measured file's name then the \
         figure's key (`exercise-3.gelu.share` reads figure `gelu.share` of \
         book/measured/exercise-3.json)"
    )]
    BadKey { key: String },

    #[error("{}: figure `{key}` is a text, where a number is needed", path.display())]
    NotANumber { path: PathBuf, key: String },

    #[error(
        "claim `{claim}` reads `{key}`, which it does not list in its `reads`; add it there \
         (crates/measured/src/claims.rs)"
    )]
    Undeclared { claim: String, key: String },

    #[error("{}: cannot write it: {source}. Next step: check that the folder is writable", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },

    #[error("{}: refusing to write an invalid file: {}", path.display(), problems.join("; "))]
    InvalidWrite {
        path: PathBuf,
        problems: Vec<String>,
    },
}

fn list_keys(keys: &[String]) -> String {
    if keys.is_empty() {
        "no figures".to_string()
    } else {
        keys.join(", ")
    }
}
