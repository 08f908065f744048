//! Finding the course root: the folder holding exercises/info.toml.

use anyhow::{bail, Result};
use course_model::manifest::MANIFEST_PATH;
use std::path::{Path, PathBuf};

pub fn find(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(dir) = explicit {
        if dir.join(MANIFEST_PATH).is_file() {
            return Ok(dir.to_path_buf());
        }
        bail!(
            "{} has no {MANIFEST_PATH}: pass --root the folder of your copy of the course",
            dir.display()
        );
    }
    let start = std::env::current_dir()?;
    for dir in start.ancestors() {
        if dir.join(MANIFEST_PATH).is_file() {
            return Ok(dir.to_path_buf());
        }
    }
    bail!(
        "no {MANIFEST_PATH} in {} or any folder above it: run `course` inside your copy of the course, or pass --root",
        start.display()
    )
}
