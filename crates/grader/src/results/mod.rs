//! Measured results the learner's own runs wrote under `results/`: the profiler's `report.json`,
//! the benchmark's `bench.json` and exercise 5's `fused_check.json`.
//!
//! Each file is parsed into only the fields the grader needs (extra fields are ignored), and
//! checked for consistency: a results file that contradicts itself is reported as tampered.

pub mod bench_report;
pub mod budget_lines;
pub mod fused_check;
pub mod profile_report;

use crate::problem::{Location, Problem, ProblemKind};
use serde::de::DeserializeOwned;

/// Parse JSON text into `T`; a syntax or type error names the line and column.
pub(crate) fn parse_json<T: DeserializeOwned>(
    text: &str,
    file: &str,
    what: &str,
    regenerate: &str,
) -> Result<T, Problem> {
    serde_json::from_str(text).map_err(|e| {
        let location = if e.line() > 0 {
            Some(Location::at(file, e.line(), e.column().max(1)))
        } else {
            Some(Location::file(file))
        };
        let kind = match e.classify() {
            serde_json::error::Category::Data => ProblemKind::WrongType,
            _ => ProblemKind::Malformed,
        };
        // serde_json appends " at line L column C"; the location already says it.
        let message = e.to_string();
        let message = message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_string();
        Problem::new(
            kind,
            location,
            format!("this is not a valid {what}: {message}"),
            regenerate.to_string(),
        )
    })
}

/// A consistency failure in a results file.
pub(crate) fn tampered(file: &str, message: String, regenerate: &str) -> Problem {
    Problem::new(
        ProblemKind::Tampered,
        Some(Location::file(file)),
        message,
        regenerate.to_string(),
    )
}

/// `a ≈ b` within an absolute or a relative tolerance.
pub(crate) fn close(a: f64, b: f64, abs: f64, rel: f64) -> bool {
    (a - b).abs() <= abs.max(rel * a.abs().max(b.abs()))
}
