//! A checkout of the course, opened: its root folder and its manifest (`exercises/info.toml`),
//! with the paths and the progress file the commands read under it. The learner's `course` and
//! the authors' `course-dev` both open the course through it; finding the root (from the current
//! folder or `--root`) is each binary's own, as each says differently what to do without one.

use anyhow::{Context, Result};
use std::path::PathBuf;

use crate::manifest::{ExerciseInfo, Manifest, MANIFEST_PATH};
use crate::progress::{Progress, PROGRESS_FILE};

pub struct Course {
    pub root: PathBuf,
    pub manifest: Manifest,
}

impl Course {
    /// The course whose root is `root`: its manifest read (an error names the file).
    pub fn open(root: PathBuf) -> Result<Course> {
        let manifest = Manifest::load(&root.join(MANIFEST_PATH))?;
        Ok(Course { root, manifest })
    }

    /// Exercise `n`, or an error that says which numbers there are.
    pub fn exercise(&self, n: u32) -> Result<&ExerciseInfo> {
        self.manifest.exercise(n).with_context(|| {
            format!(
                "there is no exercise {n}: the course has exercises 1 to {} (see `course list`)",
                self.manifest.exercises.len()
            )
        })
    }

    pub fn exercises_dir(&self) -> PathBuf {
        self.root.join("exercises")
    }

    pub fn progress_path(&self) -> PathBuf {
        self.exercises_dir().join(PROGRESS_FILE)
    }

    pub fn progress(&self) -> Result<Progress> {
        Progress::load(&self.progress_path()).map_err(anyhow::Error::msg)
    }

    pub fn save_progress(&self, progress: &Progress) -> Result<()> {
        let path = self.progress_path();
        progress
            .save(&path)
            .with_context(|| format!("cannot save your progress to {}", path.display()))
    }

    /// The first exercise not passed yet (the last one when all have passed).
    pub fn current(&self, progress: &Progress) -> u32 {
        self.manifest
            .exercises
            .iter()
            .find(|e| !progress.exercise(e.number).passed)
            .or(self.manifest.exercises.last())
            .map_or(1, |e| e.number)
    }

    /// A path under the course's root.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root.join(rel)
    }
}
