//! The learner's progress file, `exercises/.course-progress.json`: written by `course`
//! (atomically, so it survives a crash or a restart) and read by `course grade` for flags such
//! as "looked at the solution before passing". It sits in the exercises folder so that a
//! submission of only that folder carries it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// File name, inside the exercises folder.
pub const PROGRESS_FILE: &str = ".course-progress.json";

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ExerciseProgress {
    #[serde(default)]
    pub passed: bool,
    /// Best score of `course check`, in percent.
    #[serde(default)]
    pub best_percent: f64,
    #[serde(default)]
    pub checks: u32,
    #[serde(default)]
    pub hints_revealed: usize,
    #[serde(default)]
    pub solution_viewed: bool,
    /// `course solution N --force` before the exercise passed.
    #[serde(default)]
    pub solution_viewed_before_pass: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    pub format: u32,
    /// Exercise progress by number (as text: JSON keys are strings).
    #[serde(default)]
    pub exercises: BTreeMap<String, ExerciseProgress>,
}

impl Default for Progress {
    fn default() -> Self {
        Progress {
            format: 1,
            exercises: BTreeMap::new(),
        }
    }
}

impl Progress {
    pub fn parse(text: &str) -> Result<Progress, serde_json::Error> {
        serde_json::from_str(text)
    }

    /// Read the progress file; a missing file is a fresh start.
    pub fn load(path: &Path) -> Result<Progress, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Progress::parse(&text).map_err(|e| {
                format!(
                    "{}:{}:{}: the progress file is damaged ({e}); delete it to start the progress table afresh (your answers are not in it)",
                    path.display(),
                    e.line(),
                    e.column()
                )
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Progress::default()),
            Err(e) => Err(format!("{}: cannot read the progress file: {e}", path.display())),
        }
    }

    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
        output::write_file(path, (text + "\n").as_bytes(), output::Flush::ToDisk)
    }

    pub fn exercise(&self, number: u32) -> ExerciseProgress {
        self.exercises
            .get(&number.to_string())
            .cloned()
            .unwrap_or_default()
    }

    pub fn exercise_mut(&mut self, number: u32) -> &mut ExerciseProgress {
        self.exercises.entry(number.to_string()).or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn survives_a_save_and_a_reload() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PROGRESS_FILE);
        assert_eq!(Progress::load(&path).unwrap(), Progress::default());
        let mut p = Progress::default();
        p.exercise_mut(3).hints_revealed = 2;
        p.exercise_mut(3).passed = true;
        p.save(&path).unwrap();
        let back = Progress::load(&path).unwrap();
        assert_eq!(back.exercise(3).hints_revealed, 2);
        assert!(back.exercise(3).passed);
        assert!(!back.exercise(4).passed);
    }

    #[test]
    fn a_damaged_file_says_how_to_recover() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(PROGRESS_FILE);
        std::fs::write(&path, "{ not json").unwrap();
        assert!(Progress::load(&path).unwrap_err().contains("delete it"));
    }
}
