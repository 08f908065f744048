//! The exercise manifest, `exercises/info.toml`: the one source of truth for exercise metadata.
//!
//! `course` (list, run, check, hint, reset, solution), the grader and the cohort gradebook all
//! read it; nothing else lists the exercises. The format is documented at the top of the file.

use crate::text::line_column;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// Where the manifest lives, relative to the course root.
pub const MANIFEST_PATH: &str = "exercises/info.toml";

/// Which check routine grades an exercise (see `crate::exercise_checks`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CheckKind {
    /// Quiz questions answered by id under `[quiz]` (exercises 1 and 6).
    Quiz,
    /// A benchmark verdict checked against `results/bench.json` (exercise 2).
    BenchVerdict,
    /// The top three ops of the learner's own profile, and a sentence (exercise 3).
    TopOps,
    /// Savings arithmetic on the illustrative table and on the learner's profile (exercise 4).
    Budget,
    /// Fused-op correctness, before/after profiles and the benchmark verdict (exercise 5).
    Fuse,
    /// P90 TTFT at a rate and at twice the rate against a target (exercise 7).
    Traffic,
}

/// One exercise's entry.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExerciseInfo {
    pub number: u32,
    /// Short machine name, e.g. `name-the-question`.
    pub name: String,
    /// Title as the book shows it.
    pub title: String,
    /// The exercise folder, relative to the course root.
    pub dir: String,
    /// Its cargo package (`cargo run -p PACKAGE`).
    pub package: String,
    /// The reference solution's folder, relative to the course root.
    pub solution_dir: String,
    /// The book page of the exercise, relative to the course root.
    pub chapter: String,
    /// The chapters to read first.
    #[serde(default)]
    pub reading: Vec<String>,
    /// Whether the package has its own tests (`cargo test -p PACKAGE`); without, `course check` grades without a build.
    pub test: bool,
    /// The check routine that grades `answers.toml` and the results.
    pub check: CheckKind,
    /// Quiz files (in the grader's bank, `crates/grader/bank/`) whose questions this exercise asks.
    #[serde(default)]
    pub quizzes: Vec<String>,
    /// Quiz question ids asked of every learner, in order (quiz checks only).
    #[serde(default)]
    pub questions: Vec<String>,
    /// Quiz checks: how many more questions each learner is asked, drawn with their id from
    /// the quiz file's other questions (its pool) and asked before `questions`
    /// (`crate::quiz_variant`). 0 asks `questions` only.
    #[serde(default)]
    pub draw: usize,
    /// Results files by role, relative to the exercise folder (`../exercise-3/...` reaches a
    /// sibling exercise's results).
    #[serde(default)]
    pub results: BTreeMap<String, String>,
    /// Hints, revealed one at a time by `course hint N`.
    pub hints: Vec<String>,
    /// The starting `answers.toml`: its comments document the answer schema.
    pub answers_template: String,
}

impl ExerciseInfo {
    /// `exercise-N`, the folder name a submission is recognised by.
    pub fn folder_name(&self) -> String {
        format!("exercise-{}", self.number)
    }

    /// Path of a results role relative to the exercises folder (e.g. `exercise-3/results/report.json`),
    /// or `None` when the role is not declared or leaves the exercises folder.
    pub fn result_path(&self, role: &str) -> Option<String> {
        let rel = self.results.get(role)?;
        normalize_relative(&format!("{}/{}", self.folder_name(), rel))
    }

    /// `exercise-N/answers.toml`, relative to the exercises folder.
    pub fn answers_path(&self) -> String {
        format!("{}/answers.toml", self.folder_name())
    }
}

/// The whole manifest.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub format: u32,
    pub exercises: Vec<ExerciseInfo>,
}

/// A manifest that cannot be used; the message names the file, line and fix.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ManifestError(pub String);

impl Manifest {
    pub fn parse(text: &str, display_path: &str) -> Result<Manifest, ManifestError> {
        let manifest: Manifest = toml::from_str(text).map_err(|e| {
            let at = match e.span() {
                Some(span) => {
                    let (line, column) = line_column(text, span.start);
                    format!("{display_path}:{line}:{column}")
                }
                None => display_path.to_string(),
            };
            ManifestError(format!("{at}: {}; fix the exercise manifest", e.message().trim()))
        })?;
        manifest.validate(display_path)?;
        Ok(manifest)
    }

    pub fn load(path: &Path) -> Result<Manifest, ManifestError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ManifestError(format!("{}: cannot read the exercise manifest: {e}", path.display())))?;
        Manifest::parse(&text, &path.display().to_string())
    }

    fn validate(&self, display_path: &str) -> Result<(), ManifestError> {
        if self.format != 1 {
            return Err(ManifestError(format!(
                "{display_path}: format {} is not known to this grader (it reads format 1); update the `course` binary",
                self.format
            )));
        }
        let mut seen = std::collections::BTreeSet::new();
        for (index, exercise) in self.exercises.iter().enumerate() {
            if exercise.number != index as u32 + 1 {
                return Err(ManifestError(format!(
                    "{display_path}: exercise entries must be numbered 1, 2, 3... in order; entry {} has number {}",
                    index + 1,
                    exercise.number
                )));
            }
            if !seen.insert(exercise.name.clone()) {
                return Err(ManifestError(format!("{display_path}: two exercises are named `{}`", exercise.name)));
            }
            for (role, path) in &exercise.results {
                if exercise.result_path(role).is_none() {
                    return Err(ManifestError(format!(
                        "{display_path}: exercise {} results.{role} = {path:?} leaves the exercises folder",
                        exercise.number
                    )));
                }
            }
            if exercise.check == CheckKind::Quiz && (exercise.quizzes.len() != 1 || (exercise.questions.is_empty() && exercise.draw == 0)) {
                return Err(ManifestError(format!(
                    "{display_path}: exercise {} is a quiz check: it needs exactly one file in `quizzes`, and a non-empty `questions` list or `draw` above 0",
                    exercise.number
                )));
            }
        }
        Ok(())
    }

    pub fn exercise(&self, number: u32) -> Option<&ExerciseInfo> {
        self.exercises.iter().find(|e| e.number == number)
    }
}

/// Resolve `.` and `..` in a `/`-separated relative path; `None` if it is absolute or climbs
/// above its start.
pub fn normalize_relative(path: &str) -> Option<String> {
    if path.starts_with('/') || path.starts_with('\\') {
        return None;
    }
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p if p.contains(':') => return None,
            p => parts.push(p),
        }
    }
    Some(parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalize_keeps_paths_inside() {
        assert_eq!(normalize_relative("exercise-4/../exercise-3/results/report.json").as_deref(), Some("exercise-3/results/report.json"));
        assert_eq!(normalize_relative("a/./b//c").as_deref(), Some("a/b/c"));
        assert_eq!(normalize_relative("../x"), None);
        assert_eq!(normalize_relative("/etc/passwd"), None);
        assert_eq!(normalize_relative("C:/x"), None);
    }

    #[test]
    fn the_course_manifest_parses_and_is_complete() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(MANIFEST_PATH);
        let manifest = Manifest::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(manifest.exercises.len(), 7);
        for exercise in &manifest.exercises {
            assert_eq!(exercise.dir, format!("exercises/exercise-{}", exercise.number));
            assert_eq!(exercise.package, format!("exercise-{}", exercise.number));
            assert!(!exercise.hints.is_empty(), "exercise {} has no hints", exercise.number);
            // The template is what learners start from: it must be valid TOML.
            toml::from_str::<toml::Table>(&exercise.answers_template)
                .unwrap_or_else(|e| panic!("exercise {} template: {e}", exercise.number));
        }
    }

    #[test]
    fn a_bad_manifest_names_the_line() {
        let err = Manifest::parse("format = 1\n[[exercises]]\nnumber = \"one\"\n", "info.toml").unwrap_err();
        assert!(err.0.starts_with("info.toml:3:"), "{}", err.0);
    }
}
