//! A learner's source files for one exercise (`exercise-N/src/**`), read from a folder or an
//! archive submission into memory under the grader's caps. `course grade --run-tests` writes
//! them into a scratch copy of the course; grading itself never reads them.

use crate::archive::{archive_kind, read_tree};
use crate::submission::{Limits, Submission};
use crate::tree::Tree;
use std::path::Path;

/// The files below `exercise-N/SUBDIR` of a graded submission, the cohort entry at `path` (a
/// folder or an archive; `submission` is what grading read from it, so the exercises folder is
/// the one graded). `Ok` with no files when the folder is absent.
pub fn exercise_sources(
    path: &Path,
    submission: &Submission,
    folder: &str,
    subdir: &str,
    limits: &Limits,
) -> Result<Tree, String> {
    let Some(base) = &submission.base else {
        return Err("no exercise-N folders found".to_string());
    };
    let mut prefix = base.clone();
    prefix.push(folder.to_string());
    prefix.push(subdir.to_string());
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy())
        .unwrap_or_default();
    match archive_kind(&file_name) {
        Some(kind) if path.is_file() => read_tree(path, kind, &prefix, limits),
        _ => {
            let root = path
                .canonicalize()
                .map_err(|e| format!("cannot open the folder: {e}"))?;
            let dir = prefix.iter().fold(root, |p, c| p.join(c));
            let mut tree = Tree::default();
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                walk(&dir, "", limits, &mut tree, 0)?;
            }
            Ok(tree)
        }
    }
}

/// Read a folder's regular files; links are never followed (noted in `skipped`).
fn walk(
    dir: &Path,
    rel: &str,
    limits: &Limits,
    tree: &mut Tree,
    depth: usize,
) -> Result<(), String> {
    let read =
        std::fs::read_dir(dir).map_err(|e| format!("{}: cannot read: {e}", dir.display()))?;
    let mut entries: Vec<_> = read.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let Ok(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_symlink() {
            tree.skipped.push(format!("{rel}: a link, not a file"));
        } else if file_type.is_dir() {
            if depth + 1 >= limits.max_depth * 4 {
                tree.skipped.push(format!("{rel}: too deep"));
            } else {
                walk(&entry.path(), &rel, limits, tree, depth + 1)?;
            }
        } else if file_type.is_file() {
            let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
            if len > limits.max_file_bytes {
                tree.add(rel, Vec::new(), true, limits)?;
            } else {
                let bytes =
                    std::fs::read(entry.path()).map_err(|e| format!("{rel}: cannot read: {e}"))?;
                tree.add(rel, bytes, false, limits)?;
            }
        }
    }
    Ok(())
}
