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

    #[error("{}: no figure `{key}` ({}). Next step: {next}", path.display(), nearest(key, known))]
    MissingKey {
        path: PathBuf,
        key: String,
        known: Vec<String>,
        next: String,
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

/// The figures whose keys are nearest `key` (sharing its leading segments, or its last one), at
/// most eight, and how many the file has.
fn nearest(key: &str, known: &[String]) -> String {
    if known.is_empty() {
        return "the file has no figures".to_string();
    }
    let wanted: Vec<&str> = key.split('.').collect();
    let score = |k: &str| {
        let segments: Vec<&str> = k.split('.').collect();
        let leading = segments
            .iter()
            .zip(&wanted)
            .take_while(|(a, b)| a == b)
            .count();
        2 * leading + usize::from(segments.last() == wanted.last())
    };
    let mut scored: Vec<(usize, &String)> = known.iter().map(|k| (score(k), k)).collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let best = scored[0].0;
    let shown: Vec<&str> = scored
        .iter()
        .take_while(|(s, _)| best == 0 || *s > 0)
        .take(8)
        .map(|(_, k)| k.as_str())
        .collect();
    let all = if known.len() > shown.len() {
        format!("; {} figures in all", known.len())
    } else {
        String::new()
    };
    let label = if best == 0 { "it has" } else { "nearest" };
    format!("{label}: {}{all}", shown.join(", "))
}
