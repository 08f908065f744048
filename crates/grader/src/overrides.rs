//! Manual overrides: an instructor's grade for one question wins over the autograder, and keeps
//! winning on every re-grade because it lives in its own file (nbgrader's rule). By default
//! `course grade` reads `OUT/overrides.toml`.
//!
//! ```toml
//! [[override]]
//! student = "alice"
//! exercise = 3
//! question = "plan.mechanism"      # the question id the report shows
//! points = 3
//! reason = "Right idea in other words"
//! ```

use crate::report::{ExerciseReport, OverrideNote};
use course_model::text::line_column;
use serde::Deserialize;
use std::path::Path;

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Override {
    pub student: String,
    pub exercise: u32,
    pub question: String,
    pub points: f64,
    #[serde(default)]
    pub reason: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overrides {
    #[serde(default, rename = "override")]
    pub entries: Vec<Override>,
}

#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct OverridesError(pub String);

impl Overrides {
    pub fn parse(text: &str, display_path: &str) -> Result<Overrides, OverridesError> {
        toml::from_str(text).map_err(|e| {
            let at = match e.span() {
                Some(span) => {
                    let (line, column) = line_column(text, span.start);
                    format!("{display_path}:{line}:{column}")
                }
                None => display_path.to_string(),
            };
            OverridesError(format!(
                "{at}: the overrides file is not valid: {}; fix it and grade again",
                e.message().trim()
            ))
        })
    }

    /// Read the file; a missing file means no overrides.
    pub fn load(path: &Path) -> Result<Overrides, OverridesError> {
        match std::fs::read_to_string(path) {
            Ok(text) => Overrides::parse(&text, &path.display().to_string()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Overrides::default()),
            Err(e) => Err(OverridesError(format!(
                "{}: cannot read the overrides file: {e}",
                path.display()
            ))),
        }
    }

    /// Apply the student's overrides to their reports; return the ones that matched nothing.
    pub fn apply(&self, student: &str, reports: &mut [ExerciseReport]) -> Vec<&Override> {
        let mut unmatched = Vec::new();
        for o in self.entries.iter().filter(|o| o.student == student) {
            let target = reports
                .iter_mut()
                .filter(|r| r.exercise == o.exercise)
                .flat_map(|r| r.questions.iter_mut())
                .find(|q| q.id == o.question);
            let Some(q) = target else {
                unmatched.push(o);
                continue;
            };
            let autograded = q
                .overridden
                .as_ref()
                .map_or(q.points, |n| n.autograded_points);
            let points = o.points.clamp(0.0, q.max_points);
            let reason = if o.reason.is_empty() {
                "instructor's grade".to_string()
            } else {
                o.reason.clone()
            };
            let reason_text = q.reason.clone();
            *q = q.clone().partial(
                if q.max_points > 0.0 {
                    points / q.max_points
                } else {
                    0.0
                },
                reason_text,
            );
            q.points = points;
            q.needs_review = false;
            q.overridden = Some(OverrideNote {
                autograded_points: autograded,
                reason,
            });
        }
        for report in reports.iter_mut() {
            report.total();
        }
        unmatched
    }
}
