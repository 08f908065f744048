//! Errors for people: each names the file and what to do next.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ProfilerError {
    #[error("cannot write {path}: {source}. Check that the folder exists and is writable.")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}. Check the path; a report is written by `gpt2 profile --out DIR`.")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not a profiler report: {source} (line {line}, column {column}). Regenerate it with `gpt2 profile`.", line = source.line(), column = source.column())]
    Parse {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("{path} has schema `{found}`, but this profiler reads `{expected}` (see crates/profiler/REPORT.md, section Changes). Re-run the profile that wrote it (`gpt2 profile --out DIR`, or the exercise's own run) to regenerate it.")]
    Schema {
        path: PathBuf,
        found: String,
        expected: &'static str,
    },
    #[error("cannot draw the flame graph {path}: {message}")]
    FlameGraph { path: PathBuf, message: String },
    #[error("cannot draw the memory timeline {path}: {message}")]
    Timeline { path: PathBuf, message: String },
}
