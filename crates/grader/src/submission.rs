//! A student's files, read into memory with every safety check done up front: size caps,
//! UTF-8, and no symlink or archive entry that leads outside the student's folder. Grading then
//! works on this map and never touches the student's files again (and never runs their code).
//!
//! A submission is found by its `exercise-N/` folders: the student's whole copy of the course
//! or only its `exercises/` folder, as a folder, a `.zip` or a `.tar.gz` (see `crate::archive`).

use crate::problem::{Location, Problem, ProblemKind};
use course_model::learner_id::{id_matches_name, parse_learner_file, LEARNER_FILE};
use course_model::manifest::Manifest;
use course_model::progress::{Progress, PROGRESS_FILE};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Caps that keep one submission from exhausting the grader.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Largest file read (answers, results).
    pub max_file_bytes: u64,
    /// Most bytes an archive may expand to while it is scanned.
    pub max_archive_bytes: u64,
    /// Most entries an archive (or a folder walk) may hold.
    pub max_entries: usize,
    /// How deep below the student's folder the exercise folders are searched for.
    pub max_depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_file_bytes: 16 << 20,
            max_archive_bytes: 512 << 20,
            max_entries: 200_000,
            max_depth: 6,
        }
    }
}

/// The files a grader wants, relative to the exercises folder (`exercise-3/answers.toml`, ...).
#[derive(Debug, Clone)]
pub struct Wanted {
    pub paths: BTreeSet<String>,
    /// `exercise-N` folder names the manifest knows.
    pub folders: BTreeSet<String>,
}

impl Wanted {
    pub fn from_manifest(manifest: &Manifest) -> Wanted {
        let mut paths = BTreeSet::new();
        let mut folders = BTreeSet::new();
        for exercise in &manifest.exercises {
            folders.insert(exercise.folder_name());
            paths.insert(exercise.answers_path());
            for role in exercise.results.keys() {
                if let Some(path) = exercise.result_path(role) {
                    paths.insert(path);
                }
            }
        }
        paths.insert(PROGRESS_FILE.to_string());
        paths.insert(LEARNER_FILE.to_string());
        Wanted { paths, folders }
    }
}

/// What a lookup found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FileState<'a> {
    Text(&'a str),
    Missing,
    Problem(&'a Problem),
}

#[derive(Debug, Clone, Default)]
pub struct Submission {
    /// How paths are shown: `exercises` for a learner, `alice.zip:course/exercises` for a cohort.
    pub display_root: String,
    pub(crate) files: BTreeMap<String, Result<String, Problem>>,
    /// Problems of the submission as a whole (escaping links, archive trouble, layout).
    pub problems: Vec<Problem>,
    /// `exercise-N` folders present.
    pub folders: BTreeSet<String>,
    pub progress: Option<Progress>,
    /// When each file read was last modified, where the submission says (a folder's files and
    /// a tar's entries do; a zip's local times without a zone are not trusted).
    pub(crate) modified: BTreeMap<String, std::time::SystemTime>,
    /// Where the exercises folder was found: path components below the student's folder or the
    /// archive's root (empty when the `exercise-N` folders sit at the top). `None` when none was
    /// found, or for a learner's own folder. `course grade --run-tests` reads the sources there.
    pub base: Option<Vec<String>>,
}

impl Submission {
    /// When the file was last modified, if the submission records it.
    pub fn modified(&self, rel: &str) -> Option<std::time::SystemTime> {
        self.modified.get(rel).copied()
    }

    /// Record a file's modification time (tests, and archives that carry one).
    pub fn set_modified(&mut self, rel: &str, at: std::time::SystemTime) {
        self.modified.insert(rel.to_string(), at);
    }

    pub fn display(&self, rel: &str) -> String {
        if self.display_root.is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.display_root)
        }
    }

    pub fn file(&self, rel: &str) -> FileState<'_> {
        match self.files.get(rel) {
            Some(Ok(text)) => FileState::Text(text),
            Some(Err(problem)) => FileState::Problem(problem),
            None => FileState::Missing,
        }
    }

    pub fn has_folder(&self, folder: &str) -> bool {
        self.folders.contains(folder)
    }

    /// The learner's id as the submission's `learner.toml` gives it: `Ok(None)` when the file
    /// is absent, `Err` (a message naming the file and the fix) when it is unreadable or holds
    /// no valid id.
    pub fn learner(&self) -> Result<Option<String>, String> {
        match self.file(LEARNER_FILE) {
            FileState::Missing => Ok(None),
            FileState::Problem(p) => Err(p.to_string()),
            FileState::Text(text) => parse_learner_file(text)
                .map(Some)
                .map_err(|e| format!("{}: {e}", self.display(LEARNER_FILE))),
        }
    }

    /// The learner's id, if the submission carries a valid one.
    pub fn learner_id(&self) -> Option<String> {
        self.learner().ok().flatten()
    }

    /// The submission's learner-id problem, if it has one: no `learner.toml`, one that holds no
    /// valid id, or an id that is not the name it was submitted as (`alice.zip` must say
    /// `id = "alice"`). The variants are graded by the stored id either way; this flags the
    /// submission so an instructor looks (a copied folder carries someone else's id).
    pub fn learner_problem(&self, submitted_as: &str) -> Option<Problem> {
        let at = Some(Location::file(self.display(LEARNER_FILE)));
        match self.learner() {
            Ok(Some(id)) if id_matches_name(&id, submitted_as) => None,
            Ok(Some(id)) => Some(Problem::new(
                ProblemKind::LearnerId,
                at,
                format!("the learner id is {id:?}, but the submission is named {submitted_as:?}: its variants are {id:?}'s"),
                "check that this is the learner's own work; name the submission after its id (or fix the id with `course id NAME`)",
            )),
            Ok(None) => Some(Problem::new(
                ProblemKind::LearnerId,
                at,
                "there is no learner id (learner.toml is missing): the per-learner questions cannot be graded",
                "the learner runs `course id NAME` (any `course check` asks for it) and submits again",
            )),
            Err(message) => Some(Problem::new(ProblemKind::LearnerId, at, message, "the learner runs `course id NAME` and submits again")),
        }
    }

    /// Build from in-memory files (tests, generated cohorts).
    pub fn from_texts(
        display_root: &str,
        files: impl IntoIterator<Item = (String, String)>,
    ) -> Submission {
        let mut s = Submission {
            display_root: display_root.to_string(),
            ..Default::default()
        };
        for (rel, text) in files {
            if let Some(folder) = rel.split('/').next() {
                s.folders.insert(folder.to_string());
            }
            s.files.insert(rel, Ok(text));
        }
        s.load_progress();
        s
    }

    /// Record one wanted file's raw bytes: size cap and UTF-8 are checked here.
    pub(crate) fn insert_bytes(&mut self, rel: &str, bytes: Vec<u8>, limits: &Limits) {
        let shown = self.display(rel);
        let entry = if bytes.len() as u64 > limits.max_file_bytes {
            Err(too_large(&shown, limits.max_file_bytes))
        } else {
            match String::from_utf8(bytes) {
                Ok(text) => Ok(text),
                Err(e) => {
                    let valid = e.utf8_error().valid_up_to();
                    let prefix = String::from_utf8_lossy(&e.as_bytes()[..valid]).into_owned();
                    Err(Problem::new(
                        ProblemKind::NotUtf8,
                        Some(Location::at_offset(shown, &prefix, valid)),
                        "this file is not UTF-8 text",
                        "save it as UTF-8 (or regenerate it)",
                    ))
                }
            }
        };
        self.files.insert(rel.to_string(), entry);
    }

    pub(crate) fn insert_problem(&mut self, rel: &str, problem: Problem) {
        self.files.insert(rel.to_string(), Err(problem));
    }

    pub(crate) fn load_progress(&mut self) {
        if let FileState::Text(text) = self.file(PROGRESS_FILE) {
            self.progress = Progress::parse(text).ok();
        }
    }

    /// Read a learner's own exercises folder (`course check`): no search, no escape hunt
    /// beyond the files read.
    pub fn from_exercises_dir(
        dir: &Path,
        display_root: &str,
        wanted: &Wanted,
        limits: &Limits,
    ) -> Submission {
        let mut s = Submission {
            display_root: display_root.to_string(),
            ..Default::default()
        };
        let jail = dir.canonicalize().unwrap_or_else(|_| dir.to_path_buf());
        for folder in &wanted.folders {
            if dir.join(folder).is_dir() {
                s.folders.insert(folder.clone());
            }
        }
        read_wanted(&mut s, dir, &jail, wanted, limits);
        s.load_progress();
        s
    }

    /// Read a student's folder from a cohort: find the exercises folder, flag links that lead
    /// outside the student's folder, read the wanted files.
    pub fn from_student_dir(
        student_dir: &Path,
        display_name: &str,
        wanted: &Wanted,
        limits: &Limits,
    ) -> Submission {
        let mut s = Submission {
            display_root: display_name.to_string(),
            ..Default::default()
        };
        let jail = match student_dir.canonicalize() {
            Ok(p) => p,
            Err(e) => {
                s.problems.push(Problem::new(
                    ProblemKind::Layout,
                    Some(Location::file(display_name)),
                    format!("cannot open the folder: {e}"),
                    "check the permissions",
                ));
                return s;
            }
        };
        let mut walk = Walk {
            jail: &jail,
            wanted,
            limits,
            entries: 0,
            bases: BTreeMap::new(),
            problems: Vec::new(),
        };
        walk.visit(&jail, &mut Vec::new(), display_name);
        s.problems.append(&mut walk.problems);
        let bases = walk.bases;
        let Some(base) = choose_base(&bases, display_name, &mut s.problems) else {
            s.problems.push(no_exercises(display_name));
            return s;
        };
        s.folders = bases.get(&base).cloned().unwrap_or_default();
        s.base = Some(base.clone());
        let base_dir = base.iter().fold(jail.clone(), |p, c| p.join(c));
        if !base.is_empty() {
            s.display_root = format!("{display_name}/{}", base.join("/"));
        }
        read_wanted(&mut s, &base_dir, &jail, wanted, limits);
        s.load_progress();
        s
    }
}

pub(crate) fn too_large(shown: &str, cap: u64) -> Problem {
    Problem::new(
        ProblemKind::TooLarge,
        Some(Location::file(shown)),
        format!("this file is over the {} size cap", human_bytes(cap)),
        "an answers or results file is small; regenerate it",
    )
}

pub fn human_bytes(n: u64) -> String {
    if n >= 1 << 20 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

fn read_wanted(s: &mut Submission, base_dir: &Path, jail: &Path, wanted: &Wanted, limits: &Limits) {
    for rel in &wanted.paths {
        let path = base_dir.join(rel);
        let shown = s.display(rel);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        // Resolve links (in the file or any folder above it) and keep the result inside.
        let resolved = match path.canonicalize() {
            Ok(p) => p,
            Err(_) => {
                s.insert_problem(
                    rel,
                    Problem::new(
                        ProblemKind::Escapes,
                        Some(Location::file(shown)),
                        "this is a broken link",
                        "replace the link by the file itself",
                    ),
                );
                continue;
            }
        };
        if !resolved.starts_with(jail) {
            s.insert_problem(
                rel,
                Problem::new(
                    ProblemKind::Escapes,
                    Some(Location::file(shown)),
                    "this is a link to a file outside the student's folder",
                    "submit the file itself, not a link",
                ),
            );
            continue;
        }
        let meta = if meta.file_type().is_symlink() {
            std::fs::metadata(&resolved)
        } else {
            Ok(meta)
        };
        match meta {
            Ok(m) if !m.is_file() => {
                s.insert_problem(
                    rel,
                    Problem::new(
                        ProblemKind::Malformed,
                        Some(Location::file(shown)),
                        "this is not a regular file",
                        "replace it by the file",
                    ),
                );
            }
            Ok(m) if m.len() > limits.max_file_bytes => {
                s.insert_problem(rel, too_large(&shown, limits.max_file_bytes))
            }
            Ok(m) => match std::fs::read(&resolved) {
                Ok(bytes) => {
                    if let Ok(at) = m.modified() {
                        s.set_modified(rel, at);
                    }
                    s.insert_bytes(rel, bytes, limits)
                }
                Err(e) => s.insert_problem(
                    rel,
                    Problem::new(
                        ProblemKind::Missing,
                        Some(Location::file(shown)),
                        format!("cannot read this file: {e}"),
                        "check its permissions",
                    ),
                ),
            },
            Err(e) => s.insert_problem(
                rel,
                Problem::new(
                    ProblemKind::Missing,
                    Some(Location::file(shown)),
                    format!("cannot read this file: {e}"),
                    "check its permissions",
                ),
            ),
        }
    }
}

/// Folders never searched for exercises: build output, VCS data, and the reference solutions
/// (`solutions/exercise-N` would otherwise look like a submission).
pub(crate) fn skipped_folder(name: &str) -> bool {
    name.starts_with('.')
        || matches!(
            name,
            "target" | "solutions" | "node_modules" | "book" | "crates" | "__MACOSX"
        )
}

/// Candidate exercises folders (as path components below the student's folder) and the
/// `exercise-N` folders each holds. The one with the most exercises wins, then the shallowest;
/// a tie is two copies of the course, which is reported.
pub(crate) fn choose_base(
    bases: &BTreeMap<Vec<String>, BTreeSet<String>>,
    display_name: &str,
    problems: &mut Vec<Problem>,
) -> Option<Vec<String>> {
    let best = bases.iter().max_by(|a, b| {
        a.1.len()
            .cmp(&b.1.len())
            .then(b.0.len().cmp(&a.0.len()))
            .then(b.0.cmp(a.0))
    })?;
    let rivals: Vec<String> = bases
        .iter()
        .filter(|(base, folders)| {
            *base != best.0 && folders.len() == best.1.len() && base.len() == best.0.len()
        })
        .map(|(base, _)| {
            if base.is_empty() {
                ".".to_string()
            } else {
                base.join("/")
            }
        })
        .collect();
    if !rivals.is_empty() {
        let chosen = if best.0.is_empty() {
            ".".to_string()
        } else {
            best.0.join("/")
        };
        problems.push(Problem::new(
            ProblemKind::Layout,
            Some(Location::file(display_name)),
            format!(
                "two copies of the exercises: graded {chosen}, ignored {}",
                rivals.join(", ")
            ),
            "submit one copy of the course",
        ));
    }
    Some(best.0.clone())
}

pub(crate) fn no_exercises(display_name: &str) -> Problem {
    Problem::new(
        ProblemKind::Layout,
        Some(Location::file(display_name)),
        "no exercise-N folders found",
        "submit your copy of the course, or its exercises/ folder",
    )
}

struct Walk<'a> {
    jail: &'a Path,
    wanted: &'a Wanted,
    limits: &'a Limits,
    entries: usize,
    bases: BTreeMap<Vec<String>, BTreeSet<String>>,
    problems: Vec<Problem>,
}

impl Walk<'_> {
    fn visit(&mut self, dir: &Path, components: &mut Vec<String>, display_name: &str) {
        let Ok(read) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = read.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            self.entries += 1;
            if self.entries > self.limits.max_entries {
                if self.entries == self.limits.max_entries + 1 {
                    self.problems.push(Problem::new(
                        ProblemKind::TooLarge,
                        Some(Location::file(display_name)),
                        format!(
                            "the folder holds more than {} entries; the rest was not searched",
                            self.limits.max_entries
                        ),
                        "submit only the exercises/ folder",
                    ));
                }
                return;
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if file_type.is_symlink() {
                if !link_stays_inside(&path, self.jail) {
                    let shown = format!(
                        "{display_name}/{}",
                        components
                            .iter()
                            .chain([&name])
                            .cloned()
                            .collect::<Vec<_>>()
                            .join("/")
                    );
                    self.problems.push(Problem::new(
                        ProblemKind::Escapes,
                        Some(Location::file(shown)),
                        "a link that points outside the student's folder (not followed)",
                        "remove the link and submit plain files",
                    ));
                }
                continue;
            }
            if !file_type.is_dir() {
                continue;
            }
            if self.wanted.folders.contains(&name) {
                self.bases
                    .entry(components.clone())
                    .or_default()
                    .insert(name);
                continue;
            }
            if skipped_folder(&name) || components.len() + 1 >= self.limits.max_depth {
                continue;
            }
            components.push(name);
            self.visit(&path, components, display_name);
            components.pop();
        }
    }
}

fn link_stays_inside(link: &Path, jail: &Path) -> bool {
    match link.canonicalize() {
        Ok(target) => target.starts_with(jail),
        // A dangling link: judge its text, resolved against its folder.
        Err(_) => match std::fs::read_link(link) {
            Ok(target) if target.is_absolute() => false,
            Ok(target) => {
                let parent = link.parent().unwrap_or(Path::new(""));
                let rel = parent
                    .strip_prefix(jail)
                    .map(PathBuf::from)
                    .unwrap_or_default();
                course_model::manifest::normalize_relative(&rel.join(target).to_string_lossy())
                    .is_some()
            }
            Err(_) => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted() -> Wanted {
        Wanted {
            paths: [
                "exercise-1/answers.toml",
                "exercise-3/results/report.json",
                PROGRESS_FILE,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            folders: ["exercise-1", "exercise-3"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }

    #[test]
    fn finds_the_exercises_in_a_whole_clone_and_ignores_solutions() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("alice");
        std::fs::create_dir_all(root.join("course/exercises/exercise-1")).unwrap();
        std::fs::create_dir_all(root.join("course/solutions/exercise-1")).unwrap();
        std::fs::create_dir_all(root.join("course/solutions/exercise-3")).unwrap();
        std::fs::write(
            root.join("course/exercises/exercise-1/answers.toml"),
            "[quiz]\n",
        )
        .unwrap();
        let s = Submission::from_student_dir(&root, "alice", &wanted(), &Limits::default());
        assert!(s.problems.is_empty(), "{:?}", s.problems);
        assert_eq!(s.display_root, "alice/course/exercises");
        assert_eq!(
            s.file("exercise-1/answers.toml"),
            FileState::Text("[quiz]\n")
        );
        assert_eq!(s.file("exercise-3/results/report.json"), FileState::Missing);
    }

    #[cfg(unix)]
    #[test]
    fn links_outside_are_flagged_and_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret.toml");
        std::fs::write(&secret, "[quiz]\nntq-1 = \"Benchmark\"\n").unwrap();
        let root = dir.path().join("mallory");
        std::fs::create_dir_all(root.join("exercise-1")).unwrap();
        std::os::unix::fs::symlink(&secret, root.join("exercise-1/answers.toml")).unwrap();
        std::os::unix::fs::symlink("/etc", root.join("etc")).unwrap();
        let s = Submission::from_student_dir(&root, "mallory", &wanted(), &Limits::default());
        assert!(
            matches!(s.file("exercise-1/answers.toml"), FileState::Problem(p) if p.kind == ProblemKind::Escapes)
        );
        assert!(
            s.problems.iter().any(|p| p.kind == ProblemKind::Escapes),
            "{:?}",
            s.problems
        );
    }

    #[test]
    fn oversized_and_non_utf8_files_are_problems() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("bob");
        std::fs::create_dir_all(root.join("exercise-1")).unwrap();
        std::fs::create_dir_all(root.join("exercise-3/results")).unwrap();
        std::fs::write(
            root.join("exercise-1/answers.toml"),
            b"[quiz]\nntq-1 = \"\xff\"\n",
        )
        .unwrap();
        std::fs::write(
            root.join("exercise-3/results/report.json"),
            vec![b' '; 2048],
        )
        .unwrap();
        let limits = Limits {
            max_file_bytes: 1024,
            ..Limits::default()
        };
        let s = Submission::from_student_dir(&root, "bob", &wanted(), &limits);
        let FileState::Problem(p) = s.file("exercise-1/answers.toml") else {
            panic!()
        };
        assert_eq!(p.kind, ProblemKind::NotUtf8);
        assert_eq!(p.location.as_ref().unwrap().line, Some(2));
        assert!(
            matches!(s.file("exercise-3/results/report.json"), FileState::Problem(p) if p.kind == ProblemKind::TooLarge)
        );
    }

    #[test]
    fn a_submission_carries_its_learner_id_and_the_name_check_ignores_the_extension() {
        let s = Submission::from_texts(
            "alice.zip",
            [(LEARNER_FILE.to_string(), "id = \"Alice\"\n".to_string())],
        );
        assert_eq!(s.learner_id().as_deref(), Some("Alice"));
        assert!(id_matches_name("Alice", "alice.zip"));
        assert!(id_matches_name("alice", "ALICE.tar.gz"));
        assert!(id_matches_name("bob", "bob"));
        assert!(!id_matches_name("bob", "alice.zip"));
        let broken = Submission::from_texts(
            "carol",
            [(LEARNER_FILE.to_string(), "id = 3\n".to_string())],
        );
        assert!(broken.learner().unwrap_err().contains("carol/learner.toml"));
    }

    #[test]
    fn a_missing_broken_or_foreign_id_is_a_learner_id_problem() {
        let with = |text: &str| {
            Submission::from_texts("bob.zip", [(LEARNER_FILE.to_string(), text.to_string())])
        };
        assert_eq!(with("id = \"bob\"\n").learner_problem("bob.zip"), None);
        let foreign = with("id = \"alice\"\n").learner_problem("bob.zip").unwrap();
        assert_eq!(foreign.kind, ProblemKind::LearnerId);
        assert!(
            foreign.message.contains("\"alice\"") && foreign.message.contains("bob.zip"),
            "{}",
            foreign.message
        );
        let missing = Submission::from_texts(
            "bob",
            [("exercise-4/answers.toml".to_string(), String::new())],
        )
        .learner_problem("bob")
        .unwrap();
        assert!(
            missing.message.contains("learner.toml is missing"),
            "{}",
            missing.message
        );
        let broken = with("id = \"a b\"\n").learner_problem("bob.zip").unwrap();
        assert!(
            broken.message.contains("bob.zip/learner.toml"),
            "{}",
            broken.message
        );
    }

    #[test]
    fn a_folder_without_exercises_is_a_layout_problem() {
        let dir = tempfile::tempdir().unwrap();
        let s = Submission::from_student_dir(dir.path(), "carol", &wanted(), &Limits::default());
        assert!(s.folders.is_empty());
        assert_eq!(s.problems[0].kind, ProblemKind::Layout);
    }
}
