//! Exercise 4's `results/budget.json`: the learner's exercise-3 profile grouped into the budget
//! chapter's lines (matmuls, attention, activations and element-wise ops, everything else), as
//! the bench crate's `bench::budget` groups rows. Schema `budget-lines/1`, written by exercise 4:
//!
//! ```json
//! {"schema": "budget-lines/1", "profile": "../exercise-3/results/report.json",
//!  "lines": [{"line": "matmuls", "share_pct": 87.2, "ops": ["lm_head", "matmul"]}, ...]}
//! ```
//!
//! The grader keeps no list of which op belongs on which line: each row of the report says its
//! own (`line`, declared by the op). It checks that every op is listed under the line its row
//! names, that each line's share is the sum of its ops' shares in the report it came from, and
//! that the lines cover the report's rows once.

use super::profile_report::ProfileReport;
use super::{tampered, ResultsFile};
use crate::problem::Problem;
use formats::version::FileSchema;
use serde::Deserialize;
use std::collections::BTreeSet;

pub const SCHEMA: &str = "budget-lines/1";

#[derive(Debug, Clone, Deserialize)]
pub struct BudgetLine {
    pub line: String,
    pub share_pct: f64,
    #[serde(default)]
    pub ops: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
pub struct BudgetLines {
    pub schema: String,
    pub lines: Vec<BudgetLine>,
}

const REGENERATE: &str =
    "regenerate it with `course run 4` (after `course run 3`); never edit results by hand";
const LINE_TOLERANCE_PCT: f64 = 0.5;

/// budget.json as the grader reads it; it has had one version, so any other schema is tampered.
const READ: ResultsFile = ResultsFile {
    format: FileSchema {
        file: "budget.json",
        current: SCHEMA,
        old: &[],
        rerun: REGENERATE,
    },
    what: "budget lines file",
    rerun: REGENERATE,
    regenerate: REGENERATE,
};

impl BudgetLines {
    /// Parse and check against the profile the lines were made from.
    pub fn parse(text: &str, file: &str, profile: &ProfileReport) -> Result<BudgetLines, Problem> {
        let lines = READ.parse(text, file, |l: &BudgetLines| &l.schema)?;
        // Whatever is wrong below, the file contradicts itself or the profile: regenerate it.
        let tampered = |message: String| tampered(file, message, REGENERATE);
        if lines.lines.is_empty() {
            return Err(tampered("it has no lines".into()));
        }
        let mut seen = BTreeSet::new();
        for line in &lines.lines {
            let mut sum = 0.0;
            for op in &line.ops {
                let Some(row) = profile.row(op) else {
                    return Err(tampered(format!("line `{}` lists `{op}`, which is not a row of {}: it was made from another profile", line.line, profile.file)));
                };
                if row.line.name() != line.line {
                    return Err(tampered(format!(
                        "line `{}` lists `{op}`, which {} puts on `{}`",
                        line.line,
                        profile.file,
                        row.line.name()
                    )));
                }
                if !seen.insert(row.name.clone()) {
                    return Err(tampered(format!("`{}` is on two lines", row.name)));
                }
                sum += row.share_pct;
            }
            if !line.share_pct.is_finite() || (line.share_pct - sum).abs() > LINE_TOLERANCE_PCT {
                return Err(tampered(format!(
                    "line `{}` claims {:.2}% of the step, but its ops have {sum:.2}% in {}: it was made from another profile",
                    line.line, line.share_pct, profile.file
                )));
            }
        }
        let total: f64 = lines.lines.iter().map(|l| l.share_pct).sum();
        if (total - 100.0).abs() > 1.0 {
            return Err(tampered(format!(
                "the lines add up to {total:.2}%, not 100%: a row of {} is on no line",
                profile.file
            )));
        }
        Ok(lines)
    }

    /// The line with the largest share (the first such line on a tie).
    pub fn largest(&self) -> Option<&BudgetLine> {
        self.lines
            .iter()
            .fold(None, |best: Option<&BudgetLine>, l| match best {
                Some(b) if b.share_pct >= l.share_pct => Some(b),
                _ => Some(l),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::problem::ProblemKind;

    fn profile() -> ProfileReport {
        let text = include_str!("../../tests/fixtures/reports/cpu-b1-t8-stock-mlp.json");
        ProfileReport::parse(text, "report.json").unwrap()
    }

    #[test]
    fn another_schema_is_tampered_and_a_missing_field_names_the_file_kind() {
        let other = r#"{"schema": "budget-lines/2", "lines": []}"#;
        let p = BudgetLines::parse(other, "budget.json", &profile()).unwrap_err();
        assert_eq!(p.kind, ProblemKind::Tampered);
        assert_eq!(
            p.message,
            r#"the schema is "budget-lines/2", but the grader reads "budget-lines/1""#
        );
        assert_eq!(p.next_step, REGENERATE);

        let no_lines = r#"{"schema": "budget-lines/1"}"#;
        let p = BudgetLines::parse(no_lines, "budget.json", &profile()).unwrap_err();
        assert_eq!(p.kind, ProblemKind::WrongType);
        assert!(
            p.message
                .starts_with("this is not a valid budget lines file (budget-lines/1): "),
            "{p}"
        );
    }
}
