//! Problems: everything that can be wrong with a submission's files, said for people. The
//! results readers below the grader (`crate::results`) report with them too, so a learner's
//! program and `course check` say the same thing about the same file.
//!
//! A problem never stops grading. It is recorded against the student (and the exercise), shown
//! in the report with the file, line and column where there is one, and turned into a flag in
//! the gradebook.

use crate::text::line_column;
use serde::{Deserialize, Serialize};
use std::fmt;

/// What kind of problem this is; each kind is one gradebook flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A file the exercise needs is not there.
    Missing,
    /// A file is not valid TOML or JSON.
    Malformed,
    /// A value has the wrong type (text where a number belongs, ...).
    WrongType,
    /// A file is not UTF-8 text.
    NotUtf8,
    /// A file is over the size cap.
    TooLarge,
    /// A results file contradicts itself (shares that don't add up, an unsorted ranking, ...).
    Tampered,
    /// A symlink or archive entry points outside the student's folder.
    Escapes,
    /// An archive that could not be read, or that expands past the caps (a bomb).
    Archive,
    /// Two submissions carry the same student name.
    DuplicateName,
    /// The submission has no exercise folders, or two copies of the course.
    Layout,
    /// The learner id (`exercises/learner.toml`) is missing, unreadable, or not the name the
    /// submission came under: the per-learner variants may not be the ones this learner saw.
    LearnerId,
}

impl ProblemKind {
    /// The short flag written into `gradebook.csv`.
    pub fn flag(self) -> &'static str {
        match self {
            ProblemKind::Missing => "missing",
            ProblemKind::Malformed => "malformed",
            ProblemKind::WrongType => "wrong-type",
            ProblemKind::NotUtf8 => "not-utf8",
            ProblemKind::TooLarge => "too-large",
            ProblemKind::Tampered => "tampered",
            ProblemKind::Escapes => "escapes",
            ProblemKind::Archive => "archive",
            ProblemKind::DuplicateName => "duplicate-name",
            ProblemKind::Layout => "layout",
            ProblemKind::LearnerId => "learner-id",
        }
    }
}

/// Where in a file a problem sits (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Location {
    pub file: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<usize>,
}

impl Location {
    pub fn file(file: impl Into<String>) -> Self {
        Location {
            file: file.into(),
            line: None,
            column: None,
        }
    }

    /// The location of byte `offset` in `text`.
    pub fn at_offset(file: impl Into<String>, text: &str, offset: usize) -> Self {
        let (line, column) = line_column(text, offset);
        Location {
            file: file.into(),
            line: Some(line),
            column: Some(column),
        }
    }

    pub fn at(file: impl Into<String>, line: usize, column: usize) -> Self {
        Location {
            file: file.into(),
            line: Some(line),
            column: Some(column),
        }
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
            if let Some(column) = self.column {
                write!(f, ":{column}")?;
            }
        }
        Ok(())
    }
}

/// One recorded problem: what, where, and what to do next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Problem {
    pub kind: ProblemKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    pub message: String,
    /// The next step for the learner (or the instructor).
    pub next_step: String,
}

impl Problem {
    pub fn new(
        kind: ProblemKind,
        location: Option<Location>,
        message: impl Into<String>,
        next_step: impl Into<String>,
    ) -> Self {
        Problem {
            kind,
            location,
            message: message.into(),
            next_step: next_step.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(location) = &self.location {
            write!(f, "{location}: ")?;
        }
        write!(f, "{}", self.message)?;
        if !self.next_step.is_empty() {
            write!(f, " — {}", self.next_step)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_and_column_count_characters_from_one() {
        let text = "a = 1\nbé = x\n";
        assert_eq!(line_column(text, 0), (1, 1));
        assert_eq!(line_column(text, 6), (2, 1));
        // 'é' is two bytes; the column after it is 3 in characters.
        assert_eq!(line_column(text, 9), (2, 3));
        // Offsets past the end or inside a character are clamped, never a panic.
        assert_eq!(line_column(text, 8), (2, 2));
        assert_eq!(line_column(text, 999), (3, 1));
    }

    #[test]
    fn display_names_file_line_column_and_next_step() {
        let p = Problem::new(
            ProblemKind::Malformed,
            Some(Location::at("exercises/exercise-1/answers.toml", 3, 7)),
            "expected a string",
            "put the answer in quotes",
        );
        assert_eq!(
            p.to_string(),
            "exercises/exercise-1/answers.toml:3:7: expected a string — put the answer in quotes"
        );
    }
}
