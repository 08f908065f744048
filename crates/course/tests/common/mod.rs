//! What every `course` integration test needs: the binary under test, the real course it
//! copies from, and a file writer that makes the folders on the way.

use std::path::{Path, PathBuf};

pub const BIN: &str = env!("CARGO_BIN_EXE_course");

/// The course this crate belongs to (the workspace root).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Writes `text` to `path`, creating its folders.
pub fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}
