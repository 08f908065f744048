//! Reading the measured results a learner's own runs write under `results/`, as `course check`
//! reads them and as the reference solutions derive their answers from them: one reader, so a
//! solution's answer and the grade it gets come from the same figures.
//!
//! - [`profile_report`]: the profiler's `report.json`, checked for consistency and ranked by the
//!   device's self time.
//!
//! The parsing helpers below are what every results reader shares (the grader's readers of
//! `bench.json` and the other results files use them too): a file that does not parse is a
//! problem with a line and column, and one that contradicts itself is
//! [`ProblemKind::Tampered`].

pub mod profile_report;

use crate::problem::{Location, Problem, ProblemKind};
use serde::de::DeserializeOwned;

/// Parse JSON text into `T`; a syntax or type error names the line and column.
pub fn parse_json<T: DeserializeOwned>(
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
pub fn tampered(file: &str, message: String, regenerate: &str) -> Problem {
    Problem::new(
        ProblemKind::Tampered,
        Some(Location::file(file)),
        message,
        regenerate.to_string(),
    )
}

/// A results file whose `"schema"` is not `format`'s current one, as a problem: an earlier
/// version with what it lacks and `rerun` (what writes a current file), anything else as
/// tampered with `regenerate`.
pub fn check_schema(
    schema: &str,
    format: &formats::version::FileSchema,
    file: &str,
    rerun: &str,
    regenerate: &str,
) -> Result<(), Problem> {
    let current = format.current;
    if let Some(lacks) = format.lacks(schema) {
        return Err(tampered(
            file,
            format!("this report is {schema:?}, {lacks}; the grader reads {current:?}"),
            rerun,
        ));
    }
    if schema != current {
        return Err(tampered(
            file,
            format!("the schema is {schema:?}, but the grader reads {current:?}"),
            regenerate,
        ));
    }
    Ok(())
}

/// A results file as its reader knows it: the schema it reads, what a parse error calls the
/// file, and the ways out of a bad one. Every reader parses then checks the schema the same way,
/// in [`ResultsFile::parse`].
pub struct ResultsFile {
    pub format: formats::version::FileSchema,
    /// The file's name in a parse error, e.g. "profiler report" (its current schema follows).
    pub what: &'static str,
    /// How to write a current file, for one of an earlier version.
    pub rerun: &'static str,
    /// What to do about a file that does not parse or names another schema.
    pub regenerate: &'static str,
}

impl ResultsFile {
    /// Parse `text` (of the file named `file`) into `T`, then check its `"schema"`, which
    /// `schema` reads: a syntax or type error names the line and column ([`parse_json`]), a
    /// schema not the current one is a problem as [`check_schema`] says.
    pub fn parse<T: DeserializeOwned>(
        &self,
        text: &str,
        file: &str,
        schema: impl Fn(&T) -> &str,
    ) -> Result<T, Problem> {
        let what = format!("{} ({})", self.what, self.format.current);
        let raw: T = parse_json(text, file, &what, self.regenerate)?;
        check_schema(
            schema(&raw),
            &self.format,
            file,
            self.rerun,
            self.regenerate,
        )?;
        Ok(raw)
    }
}

/// `a ≈ b` within an absolute or a relative tolerance.
pub(crate) fn close(a: f64, b: f64, abs: f64, rel: f64) -> bool {
    (a - b).abs() <= abs.max(rel * a.abs().max(b.abs()))
}
