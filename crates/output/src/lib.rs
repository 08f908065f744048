//! How the course's programs write what they make.
//!
//! - [`write_file`] and [`write_dir`]: a file or a folder replaced in one step, so that a crash,
//!   or two programs writing at once, never leaves half of one behind (the gradebook, a learner's
//!   answers, the measured ceilings, a synthetic checkpoint). The one home of atomic writes.
//! - [`pipe`]: a table piped into `head` or `less` ends quietly, exit status 0, when the reader
//!   closes the pipe, instead of panicking on the broken pipe.

pub mod pipe;

use std::io::Write;
use std::path::{Path, PathBuf};

/// Whether [`write_file`] waits for the disk before the rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flush {
    /// Flushed to the disk first: a power cut leaves the old content or the new one. For what a
    /// learner or an instructor cannot make again (answers, progress, a gradebook).
    ToDisk,
    /// Renamed without waiting for the disk: for files that are cheap to make again (feedback
    /// pages, a cache), where one flush each would dominate the time to write them.
    Later,
}

/// Replaces `path` with `bytes` in one step: they go to a temporary file in the same folder
/// (created with its parents if missing), which is renamed over `path`. A reader sees the old
/// file or the new one, never part of one; of two concurrent writers, one whole file stays.
pub fn write_file(path: &Path, bytes: &[u8], flush: Flush) -> std::io::Result<()> {
    let dir = parent(path);
    std::fs::create_dir_all(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempfile_in(dir)?;
    tmp.write_all(bytes)?;
    if flush == Flush::ToDisk {
        tmp.as_file().sync_all()?;
    }
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// How [`write_dir`] failed: `fill`'s own error, or the file system's on `path`.
#[derive(Debug)]
pub enum DirError<E> {
    Fill(E),
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Writes the folder `dir` in one step: `fill` writes its files into a temporary sibling folder,
/// which is then renamed to `dir`, so a crash or a concurrent writer never leaves a half-written
/// folder (a checkpoint) behind. Where another process finished `dir` first, its folder is kept
/// and this one's copy removed. A failed `fill` leaves nothing behind.
pub fn write_dir<E>(
    dir: &Path,
    fill: impl FnOnce(&Path) -> Result<(), E>,
) -> Result<(), DirError<E>> {
    let parent = parent(dir);
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| DirError::Io { path, source }
    };
    std::fs::create_dir_all(parent).map_err(io(parent))?;
    let tmp = tempfile::Builder::new()
        .prefix(".partial-")
        .tempdir_in(parent)
        .map_err(io(parent))?;
    fill(tmp.path()).map_err(DirError::Fill)?;
    let tmp = tmp.keep();
    match std::fs::rename(&tmp, dir) {
        Ok(()) => Ok(()),
        Err(_) if dir.is_dir() => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Err(io(dir)(e))
        }
    }
}

/// The folder a file or folder is written in (`.` for a bare name).
fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_replaced_whole_and_no_temporary_stays() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/gradebook.csv");
        write_file(&path, b"a,b\n1,2\n", Flush::ToDisk).unwrap();
        write_file(&path, b"a\n", Flush::Later).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a\n");
        assert_eq!(names(&dir.path().join("sub")), ["gradebook.csv"]);
    }

    #[test]
    fn a_folder_appears_whole_a_finished_one_is_kept_and_a_failed_fill_leaves_nothing() {
        let base = tempfile::tempdir().unwrap();
        let dir = base.path().join("cache/model");
        write_dir(&dir, |tmp| std::fs::write(tmp.join("config.json"), "{}")).unwrap();
        assert_eq!(names(&dir), ["config.json"]);
        // A second writer that finishes later keeps the first one's folder.
        write_dir(&dir, |tmp| std::fs::write(tmp.join("other.json"), "{}")).unwrap();
        assert_eq!(names(&dir), ["config.json"]);
        assert_eq!(names(&base.path().join("cache")), ["model"]);
        // A failed fill: its error, and no partial folder beside the others.
        let failed = write_dir(&base.path().join("cache/broken"), |tmp| {
            std::fs::write(tmp.join("half"), "x")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(matches!(failed, Err(DirError::Fill(e)) if e.to_string() == "disk full"));
        assert_eq!(names(&base.path().join("cache")), ["model"]);
    }
}
