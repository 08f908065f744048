//! The temporary course roots the dev check runs `course` on, and the scratch folder that holds
//! them.
//!
//! A root is what `course` needs and nothing a learner's own work could leak into: the manifest,
//! the exercise folders as git would commit them (an untouched exercise's files, or a solution's
//! in the exercise's place; never a results/ folder or a progress file, which git ignores), a
//! learner id, and links to the checkout's book/ and crates/ (the question bank and the answer
//! key the grader reads).

use anyhow::{bail, Context, Result};
use course_model::learner_id::LEARNER_FILE;
use course_model::manifest::{ExerciseInfo, MANIFEST_PATH};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where a root's exercise folders come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Each exercise's own folder (`dir`), as a learner gets it.
    Exercises,
    /// Each exercise's reference solution (`solution_dir`), copied into the exercise's folder.
    Solutions,
}

impl Source {
    fn dir(self, exercise: &ExerciseInfo) -> &str {
        match self {
            Source::Exercises => &exercise.dir,
            Source::Solutions => &exercise.solution_dir,
        }
    }
}

/// The checkout's folders a root links to rather than copies: read, never written.
const LINKED: [&str; 2] = ["book", "crates"];

/// The files of `dir` (relative to `checkout`) that git would commit: tracked or new, not
/// ignored, and still there; relative to `dir`, sorted.
pub fn committable_files(checkout: &Path, dir: &str) -> Result<Vec<String>> {
    let output = Command::new("git")
        .current_dir(checkout)
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
            "--",
        ])
        .arg(dir)
        .stdin(Stdio::null())
        .output()
        .context("cannot run git, which lists the exercise files a learner gets: install git")?;
    if !output.status.success() {
        bail!(
            "`git ls-files {dir}` failed in {}: {}; run `course-dev check` in a git checkout of the course",
            checkout.display(),
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let prefix = format!("{}/", dir.trim_end_matches('/'));
    let mut files: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .split('\0')
        .filter_map(|path| path.strip_prefix(&prefix))
        .filter(|rel| !rel.is_empty() && checkout.join(dir).join(rel).is_file())
        .map(String::from)
        .collect();
    files.sort();
    files.dedup();
    if files.is_empty() {
        bail!(
            "{} holds no file git knows of: restore it with `git checkout -- {dir}`",
            checkout.join(dir).display()
        );
    }
    Ok(files)
}

/// Makes a course root at `root` for `exercises`: `exercises/info.toml`, each exercise's folder
/// from `source`, `exercises/learner.toml` holding `learner`, and the links of [`LINKED`].
/// `files` lists each folder's files (normally [`committable_files`]).
pub fn make(
    checkout: &Path,
    root: &Path,
    exercises: &[&ExerciseInfo],
    source: Source,
    learner: &str,
    files: impl Fn(&str) -> Result<Vec<String>>,
) -> Result<()> {
    let manifest = root.join(MANIFEST_PATH);
    create_dir(manifest.parent().unwrap_or(root))?;
    std::fs::copy(checkout.join(MANIFEST_PATH), &manifest)
        .with_context(|| format!("cannot copy {MANIFEST_PATH} to {}", manifest.display()))?;
    for exercise in exercises {
        let from = source.dir(exercise);
        for rel in files(from)? {
            let (src, dst) = (
                checkout.join(from).join(&rel),
                root.join(&exercise.dir).join(&rel),
            );
            create_dir(dst.parent().unwrap_or(root))?;
            std::fs::copy(&src, &dst)
                .with_context(|| format!("cannot copy {} to {}", src.display(), dst.display()))?;
        }
    }
    let learner_file = root.join("exercises").join(LEARNER_FILE);
    std::fs::write(&learner_file, format!("id = \"{learner}\"\n"))
        .with_context(|| format!("cannot write {}", learner_file.display()))?;
    for name in LINKED {
        link(&checkout.join(name), &root.join(name))?;
    }
    Ok(())
}

fn create_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create the folder {}", dir.display()))
}

#[cfg(unix)]
pub fn link(target: &Path, link: &Path) -> Result<()> {
    std::os::unix::fs::symlink(target, link)
        .with_context(|| format!("cannot link {} to {}", link.display(), target.display()))
}

#[cfg(not(unix))]
pub fn link(_: &Path, _: &Path) -> Result<()> {
    bail!("`course-dev check` links folders and runs a pseudo-terminal: it needs Linux, macOS or another Unix system")
}

/// The folder every root and log of one dev check goes in, removed when the check ends unless
/// it is kept (`--keep`).
pub struct Scratch {
    pub dir: PathBuf,
    keep: bool,
}

impl Scratch {
    pub fn new(keep: bool) -> Result<Scratch> {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let dir =
            std::env::temp_dir().join(format!("course-dev-check-{}-{stamp}", std::process::id()));
        std::fs::create_dir(&dir).with_context(|| format!("cannot create the scratch folder {} (is the temporary folder writable? set TMPDIR)", dir.display()))?;
        Ok(Scratch { dir, keep })
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            // The links inside are removed, never followed: the checkout's book/ stays.
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use course_model::manifest::Manifest;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn a_root_holds_the_manifest_the_chosen_folders_a_learner_and_links() {
        let dir = tempfile::tempdir().unwrap();
        let checkout = dir.path().join("checkout");
        let real = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../..")
            .join(MANIFEST_PATH);
        write(
            &checkout.join(MANIFEST_PATH),
            &std::fs::read_to_string(real).unwrap(),
        );
        write(
            &checkout.join("exercises/exercise-3/answers.toml"),
            "[plan]\nattack = \"\"\n",
        );
        write(
            &checkout.join("solutions/exercise-3/answers.toml"),
            "[plan]\nattack = \"matmul\"\n",
        );
        write(
            &checkout.join("solutions/exercise-3/src/main.rs"),
            "fn main() {}\n",
        );
        write(&checkout.join("book/src/SUMMARY.md"), "# Summary\n");
        std::fs::create_dir_all(checkout.join("crates/grader")).unwrap();
        let manifest = Manifest::load(&checkout.join(MANIFEST_PATH)).unwrap();
        let three = manifest.exercise(3).unwrap();
        let listed = |from: &str| -> Result<Vec<String>> {
            Ok(match from {
                "solutions/exercise-3" => vec!["answers.toml".into(), "src/main.rs".into()],
                _ => vec!["answers.toml".into()],
            })
        };

        let solved = dir.path().join("solved");
        make(
            &checkout,
            &solved,
            &[three],
            Source::Solutions,
            "dev-check",
            listed,
        )
        .unwrap();
        assert!(solved.join(MANIFEST_PATH).is_file());
        assert_eq!(
            std::fs::read_to_string(solved.join("exercises/exercise-3/answers.toml")).unwrap(),
            "[plan]\nattack = \"matmul\"\n"
        );
        assert!(
            solved.join("exercises/exercise-3/src/main.rs").is_file(),
            "the solution's files, in the exercise's folder"
        );
        assert!(
            !solved.join("solutions").exists() && !solved.join("exercises/exercise-1").exists(),
            "only what was asked for"
        );
        assert_eq!(
            std::fs::read_to_string(solved.join("exercises/learner.toml")).unwrap(),
            "id = \"dev-check\"\n"
        );
        assert!(
            solved.join("book/src/SUMMARY.md").is_file() && solved.join("crates/grader").is_dir(),
            "book/ and crates/ are linked"
        );
        assert!(std::fs::symlink_metadata(solved.join("book"))
            .unwrap()
            .file_type()
            .is_symlink());

        let untouched = dir.path().join("untouched");
        make(
            &checkout,
            &untouched,
            &[three],
            Source::Exercises,
            "dev-check",
            listed,
        )
        .unwrap();
        assert_eq!(
            std::fs::read_to_string(untouched.join("exercises/exercise-3/answers.toml")).unwrap(),
            "[plan]\nattack = \"\"\n"
        );
    }

    #[test]
    fn git_lists_what_it_would_commit_and_never_results() {
        let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let Ok(files) = committable_files(&checkout, "exercises/exercise-3") else {
            eprintln!("skipped: this copy of the course is no git checkout");
            return;
        };
        assert!(
            files.iter().any(|f| f == "answers.toml") && files.iter().any(|f| f == "src/main.rs"),
            "{files:?}"
        );
        assert!(
            files.iter().all(|f| !f.starts_with("results/")),
            "{files:?}"
        );
    }

    #[test]
    fn the_scratch_folder_goes_unless_kept() {
        let scratch = Scratch::new(false).unwrap();
        let dir = scratch.dir.clone();
        std::fs::write(scratch.path("log"), "x").unwrap();
        drop(scratch);
        assert!(!dir.exists());
        let kept = Scratch::new(true).unwrap();
        let dir = kept.dir.clone();
        drop(kept);
        assert!(dir.exists());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
