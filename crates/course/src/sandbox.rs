//! `course grade --run-tests`: each learner's exercise tests, re-run on their own code, in a
//! child process with a time limit, a memory limit and no network.
//!
//! **What runs where.** A scratch workspace (`--test-dir`, default the course's
//! `target/grade-tests/workspace`), never the instructor's own files, is rebuilt for every learner and exercise from what the course
//! trusts: the instructor's root `Cargo.toml`, `Cargo.lock`, `.cargo/`, `crates/` and
//! `exercises/`, and of the exercise's own package everything but `src/` (so its `Cargo.toml`,
//! `build.rs` and `tests/` are the course's: a submission cannot add a dependency, a build
//! script or weaken an integration test). Only the learner's `exercise-N/src/` is laid over it.
//! The trusted files keep their modification times and the scratch path never changes, so the
//! one build folder (`target/grade-tests/target`, as CARGO_TARGET_DIR) compiles the dependencies and
//! the course's crates once for the whole cohort, and again only the learner's package.
//!
//! **Isolation** is [`crate::containment`]'s: each build and test binary runs contained (its own
//! process group, a time limit, a memory limit, no network), and what is not isolated is said.
//!
//! **As root**, each test binary runs as an unprivileged user (`--test-user`, default `nobody`):
//! the learner's package (with their `src/`) and the test binaries are copied into a folder of
//! their own, mode 0700 and owned by that user, under a root-owned folder (mode 0711) in the
//! system's temporary folder, and the tests run there; the folder is removed when the exercise's
//! tests end, before the next learner's run. The test user can reach nothing else of the
//! course, the cohort or the gradebook (the instructor's folders are root's), and where the
//! kernel allows it (probed once) every other folder is read-only to the test, the
//! world-writable ones included: see [`crate::containment`].

use crate::cargo::Build;
use crate::containment::{contained, probe_files, probe_network, Confine, Files, Network, RunAs};
use anyhow::{bail, Context, Result};
use course_model::manifest::ExerciseInfo;
use grader::cohort::{Entry, StudentResult, TestOutcome, TestRun};
use grader::sources::exercise_sources;
use grader::submission::Limits as ReadLimits;
use grader::tree::Tree;
use grader::Grader;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// The instructor's limits for each learner's tests.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Per test binary.
    pub test_timeout: Duration,
    /// For compiling one learner's package (the first one also compiles the dependencies).
    pub build_timeout: Duration,
    /// RLIMIT_AS of each test binary.
    pub memory_bytes: u64,
}

/// Most bytes of a test's output kept for the feedback.
const OUTPUT_TAIL: u64 = 64 << 10;

pub struct Sandbox {
    course_root: PathBuf,
    workspace: PathBuf,
    target: PathBuf,
    limits: Limits,
    network: Network,
    /// As root: the user the test binaries run as, and the folder their own folders go in.
    unprivileged: Option<Unprivileged>,
    /// Held while this run uses the folder: two runs would overwrite each other's workspace.
    _lock: std::fs::File,
}

/// The test user and the root-owned folder (mode 0711) that holds one 0700 folder per run.
struct Unprivileged {
    name: String,
    user: RunAs,
    base: PathBuf,
    /// Whether the rest of the file system is read-only to the tests here.
    files: Files,
    runs: std::cell::Cell<usize>,
}

impl Drop for Unprivileged {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// `NAME` from /etc/passwd, or `UID:GID`. Root (uid 0) is refused.
pub fn resolve_user(spec: &str) -> Result<RunAs> {
    let user = if let Some((uid, gid)) = spec.split_once(':') {
        match (uid.parse(), gid.parse()) {
            (Ok(uid), Ok(gid)) => RunAs { uid, gid },
            _ => bail!("--test-user {spec}: write a user name or UID:GID (both numbers)"),
        }
    } else {
        let passwd = std::fs::read_to_string("/etc/passwd")
            .context("/etc/passwd: cannot read the users to find --test-user")?;
        let found = passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.len() > 3 && fields[0] == spec)
                .then(|| {
                    Some(RunAs {
                        uid: fields[2].parse().ok()?,
                        gid: fields[3].parse().ok()?,
                    })
                })
                .flatten()
        });
        match found {
            Some(user) => user,
            None => bail!(
                "--test-user {spec}: no such user in /etc/passwd. Create one for the tests \
                 (useradd --system --no-create-home --shell /usr/sbin/nologin {spec}) or name another \
                 (a user name or UID:GID)"
            ),
        }
    };
    if user.uid == 0 || user.gid == 0 {
        bail!("--test-user {spec}: that is root's user or group; the tests must run unprivileged");
    }
    Ok(user)
}

impl Sandbox {
    /// Prepare `dir` (the scratch workspace and the shared build folder go inside) and find
    /// out how the network can be cut off here.
    pub fn new(
        course_root: &Path,
        dir: &Path,
        limits: Limits,
        test_user: Option<&str>,
    ) -> Result<Sandbox> {
        if cfg!(not(unix)) {
            bail!("--run-tests needs Linux or another Unix system: there is no way here to limit the tests' time and memory");
        }
        let course_root = course_root
            .canonicalize()
            .with_context(|| format!("{}: cannot open the course", course_root.display()))?;
        // Checked before anything is created there, and again once the path is resolved.
        let dir = std::path::absolute(dir)
            .with_context(|| format!("{}: not a usable folder", dir.display()))?;
        refuse_inside(&course_root, &dir)?;
        std::fs::create_dir_all(&dir).with_context(|| {
            format!(
                "{}: cannot create the test folder (--test-dir)",
                dir.display()
            )
        })?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("{}: cannot open the test folder", dir.display()))?;
        refuse_inside(&course_root, &dir)?;
        let lock = lock(&dir)?;
        let network = probe_network();
        let unprivileged = if rustix::process::geteuid().is_root() {
            let name = test_user.unwrap_or("nobody").to_string();
            let user = resolve_user(&name)?;
            // The shared build folder holds every learner's compiled code: root's alone.
            set_mode(&dir, 0o700)?;
            let base =
                std::env::temp_dir().join(format!("course-grade-tests-{}", std::process::id()));
            if base.exists() {
                std::fs::remove_dir_all(&base)
                    .with_context(|| format!("{}: cannot clear", base.display()))?;
            }
            std::fs::create_dir(&base)
                .with_context(|| format!("{}: cannot create", base.display()))?;
            set_mode(&base, 0o711)?;
            let files = probe_files(&base);
            Some(Unprivileged {
                name,
                user,
                base,
                files,
                runs: std::cell::Cell::new(0),
            })
        } else {
            if let Some(user) = test_user {
                bail!("--test-user {user}: only root can run the tests as another user; start course grade as root, or leave --test-user out");
            }
            None
        };
        Ok(Sandbox {
            course_root,
            workspace: dir.join("workspace"),
            target: dir.join("target"),
            limits,
            network,
            unprivileged,
            _lock: lock,
        })
    }

    /// What is and what is not isolated, for the instructor (printed once).
    pub fn describe(&self) -> String {
        let network = match &self.network {
            Network::Namespace => "own network namespace (unshare CLONE_NEWNET, as root): no interface up, not even loopback".to_string(),
            Network::UserNamespace => "own user and network namespace (unshare CLONE_NEWUSER|CLONE_NEWNET): no interface up, not even loopback".to_string(),
            Network::NotIsolated(why) => format!("NOT ISOLATED: {why}; a test can reach the network"),
        };
        let files = match &self.unprivileged {
            Some(u) => format!(
                "files:   each test binary runs as user {} (uid {}), in a copy of the learner's package in a 0700 \
                 folder of its own under {}, removed after each exercise; the course, the cohort and the gradebook \
                 are out of its reach\n  \
                 {}",
                u.name,
                u.user.uid,
                u.base.display(),
                match &u.files {
                    Files::ReadOnly => "every other folder is read-only to it, /tmp, /var/tmp and /dev/shm included \
                                        (a mount namespace of its own)\n  \
                                        NOT isolated: processes that leave the process group (setsid)"
                        .to_string(),
                    Files::NotIsolated(why) => format!(
                        "NOT isolated: the file system's world-writable folders (/tmp, /var/tmp, /dev/shm): {why}; \
                         and processes that leave the process group (setsid)"
                    ),
                }
            ),
            None => "NOT isolated: the file system (tests run as this user and can read and write what it can) and the \
                     shared build folder; start course grade as root to run the tests as an unprivileged user, or use a \
                     container"
                .to_string(),
        };
        format!(
            "tests run in {} (build folder {}), cargo --offline\n  \
             network: {network}\n  \
             memory:  RLIMIT_AS {} per test binary (address space, not resident memory)\n  \
             time:    {} s per test binary, {} s per build; then the whole process group is killed\n  \
             {files}",
            self.workspace.display(),
            self.target.display(),
            grader::submission::human_bytes(self.limits.memory_bytes),
            self.limits.test_timeout.as_secs_f64(),
            self.limits.build_timeout.as_secs_f64()
        )
    }

    /// As root: refuse to run the tests while the test user could open `folder` (the cohort, whose
    /// other submissions a hostile test would read).
    pub fn require_private(&self, folder: &Path, what: &str) -> Result<()> {
        let Some(u) = &self.unprivileged else {
            return Ok(());
        };
        let folder = folder
            .canonicalize()
            .with_context(|| format!("{}: cannot open", folder.display()))?;
        if reachable_by(&folder, u.user) {
            bail!(
                "{}: the {what} can be read by user {} (uid {}), which runs the learners' tests; make it private \
                 first (chmod 700 {}) and grade again",
                folder.display(),
                u.name,
                u.user.uid,
                folder.display()
            );
        }
        Ok(())
    }

    /// One sentence on the network, for the end of the output.
    pub fn isolation_line(&self) -> String {
        match &self.network {
            Network::NotIsolated(why) => format!("The network was NOT isolated: {why}."),
            _ if self.unprivileged.is_some() => {
                "Network: none (own namespace). Files: each test ran as an unprivileged user in its own folder."
                    .to_string()
                    + match self.unprivileged.as_ref().map(|u| &u.files) {
                        Some(Files::ReadOnly) => " Every other folder was read-only to it.",
                        _ => " The world-writable folders (/tmp) were NOT closed to it.",
                    }
            }
            _ => "Network: none (own namespace). Files: not isolated.".to_string(),
        }
    }

    /// Re-run the tests of every exercise with `test = true` that the submission holds.
    pub fn run_student(
        &self,
        grader: &Grader,
        entry: &Entry,
        student: &StudentResult,
    ) -> Vec<TestRun> {
        let submission = grader::cohort::load_entry(grader, entry);
        let mut runs = Vec::new();
        for exercise in grader.manifest.exercises.iter().filter(|e| e.test) {
            if !submission.has_folder(&exercise.folder_name()) {
                continue;
            }
            let run = match exercise_sources(
                &entry.path,
                &submission,
                &exercise.folder_name(),
                "src",
                &ReadLimits::default(),
            ) {
                Ok(tree) if tree.files.is_empty() => not_run(
                    exercise,
                    format!("{}/src/ is empty or missing", exercise.folder_name()),
                ),
                Ok(tree) => self
                    .run_exercise(exercise, &tree)
                    .unwrap_or_else(|e| not_run(exercise, format!("{e:#}"))),
                Err(e) => not_run(exercise, e),
            };
            eprintln!(
                "==> tests: {} exercise {}: {}",
                student.student,
                exercise.number,
                run.summary()
            );
            runs.push(run);
        }
        runs
    }

    fn run_exercise(&self, exercise: &ExerciseInfo, tree: &Tree) -> Result<TestRun> {
        let package_dir = self.course_root.join(&exercise.dir);
        if !package_dir.join("Cargo.toml").is_file() {
            bail!(
                "the course has no {}/Cargo.toml to build the learner's code with",
                exercise.dir
            );
        }
        self.prepare(exercise, tree)?;
        let mut notes: Vec<String> = tree
            .skipped
            .iter()
            .map(|s| format!("not copied: {s}"))
            .collect();
        if let Network::NotIsolated(why) = &self.network {
            notes.push(format!("network NOT isolated ({why})"));
        }

        // Build the tests (no memory limit: rustc's address space is far larger than its use).
        let logs = self.workspace.join(".logs");
        std::fs::create_dir_all(&logs)
            .with_context(|| format!("{}: cannot create", logs.display()))?;
        let mut build = crate::cargo::command(
            &self.workspace,
            "test",
            &exercise.package,
            &Build::default(),
            &[],
        )?;
        build
            .args([
                "--no-run",
                "--offline",
                "--message-format",
                "json-render-diagnostics",
            ])
            .env("CARGO_TARGET_DIR", &self.target);
        let messages = logs.join("build.json");
        let build_log = logs.join("build.log");
        let finished = contained(
            &mut build,
            &messages,
            Some(&build_log),
            &self.network,
            None,
            self.limits.build_timeout,
            None,
        )?;
        if finished.timed_out {
            notes.insert(
                0,
                "the build ran past its time limit (--test-build-timeout)".to_string(),
            );
            return Ok(self.run_of(
                exercise,
                TestOutcome::TimedOut {
                    seconds: self.limits.build_timeout.as_secs_f64(),
                },
                notes,
            ));
        }
        if !finished.success {
            let log = tail(&build_log, OUTPUT_TAIL);
            let last: Vec<&str> = log.lines().rev().take(40).collect();
            notes.insert(
                0,
                self.tidy(&last.into_iter().rev().collect::<Vec<_>>().join("\n")),
            );
            return Ok(self.run_of(exercise, TestOutcome::BuildFailed, notes));
        }
        let binaries = test_binaries(&std::fs::read_to_string(&messages).unwrap_or_default());
        if binaries.is_empty() {
            notes.insert(
                0,
                format!("cargo built no test binary for {}", exercise.package),
            );
            return Ok(self.run_of(exercise, TestOutcome::NotRun, notes));
        }

        // Run each test binary as `cargo test` would: from the package folder.
        let (mut passed, mut failed) = (0, 0);
        let mut worst: Option<TestOutcome> = None;
        let mut failures = Vec::new();
        let mut run_dir = self.workspace.join(&exercise.dir);
        let mut binaries = binaries;
        // As root: the learner's package and the binaries, copied into a folder of the test user's own.
        let own = match &self.unprivileged {
            Some(u) => {
                let own = OwnFolder::new(u, &run_dir, &binaries)?;
                run_dir = own.package.clone();
                binaries = own.binaries.clone();
                Some(own)
            }
            None => None,
        };
        for (i, binary) in binaries.iter().enumerate() {
            let log = logs.join(format!("test-{i}.log"));
            let mut test = Command::new(binary);
            test.current_dir(&run_dir)
                .env("CARGO_MANIFEST_DIR", &run_dir)
                .env("MALLOC_ARENA_MAX", "2")
                .env("RUST_BACKTRACE", "0")
                .env_remove("CARGO_TARGET_DIR");
            if let Some(own) = &own {
                test.env("HOME", &own.root)
                    .env("TMPDIR", own.root.join("tmp"));
            }
            let finished = contained(
                &mut test,
                &log,
                None,
                &self.network,
                Some(self.limits.memory_bytes),
                self.limits.test_timeout,
                self.unprivileged
                    .as_ref()
                    .zip(own.as_ref())
                    .map(|(u, own)| Confine {
                        user: u.user,
                        folder: &own.root,
                        files: &u.files,
                    }),
            )?;
            let output = tail(&log, OUTPUT_TAIL);
            let counts = libtest_counts(&output);
            passed += counts.0;
            let outcome = if finished.timed_out {
                Some(TestOutcome::TimedOut {
                    seconds: self.limits.test_timeout.as_secs_f64(),
                })
            } else if out_of_memory(&output) {
                Some(TestOutcome::OutOfMemory {
                    limit_bytes: self.limits.memory_bytes,
                })
            } else if finished.success {
                None
            } else if !matches!(self.network, Network::NotIsolated(_)) && network_refused(&output) {
                Some(TestOutcome::NetworkRefused)
            } else {
                failed += counts.1.max(1);
                Some(TestOutcome::Failed {
                    failed: 0,
                    passed: 0,
                })
            };
            if let Some(outcome) = outcome {
                // The binary's name without cargo's hash: `p90` for tests/p90.rs, the package for src/.
                let stem = binary
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let name = stem
                    .rsplit_once('-')
                    .map_or(stem.as_str(), |(name, _)| name)
                    .to_string();
                let mut excerpt = format!(
                    "test binary `{name}`:\n{}",
                    failure_excerpt(&output, finished.signal)
                );
                if finished.timed_out {
                    excerpt.push_str(&format!(
                        "\n(killed with its process group after {} s)",
                        self.limits.test_timeout.as_secs_f64()
                    ));
                }
                failures.push(self.tidy(&excerpt));
                if worst
                    .as_ref()
                    .is_none_or(|w| severity(&outcome) > severity(w))
                {
                    worst = Some(outcome);
                }
            }
        }
        drop(own);
        let outcome = match worst {
            None => TestOutcome::Passed { tests: passed },
            Some(TestOutcome::Failed { .. }) => TestOutcome::Failed { failed, passed },
            Some(other) => other,
        };
        failures.extend(notes);
        Ok(self.run_of(exercise, outcome, failures))
    }

    fn run_of(&self, exercise: &ExerciseInfo, outcome: TestOutcome, notes: Vec<String>) -> TestRun {
        TestRun {
            exercise: exercise.number,
            outcome,
            detail: notes.join("\n"),
        }
    }

    /// Paths inside the scratch workspace shown relative to it.
    fn tidy(&self, text: &str) -> String {
        text.replace(&format!("{}/", self.workspace.display()), "")
            .replace(&format!("{}/", self.target.display()), "target/")
    }

    /// The scratch workspace: the course's trusted files, then the learner's `src/`.
    fn prepare(&self, exercise: &ExerciseInfo, tree: &Tree) -> Result<()> {
        if self.workspace.exists() {
            std::fs::remove_dir_all(&self.workspace).with_context(|| {
                format!(
                    "{}: cannot clear the scratch workspace",
                    self.workspace.display()
                )
            })?;
        }
        std::fs::create_dir_all(&self.workspace)
            .with_context(|| format!("{}: cannot create", self.workspace.display()))?;
        for name in [
            "Cargo.toml",
            "Cargo.lock",
            "rust-toolchain.toml",
            "rust-toolchain",
            ".cargo",
            "crates",
            "exercises",
        ] {
            let from = self.course_root.join(name);
            if std::fs::symlink_metadata(&from).is_ok() {
                copy_trusted(&from, &self.workspace.join(name), false)?;
            }
        }
        // The solutions are workspace members (`solutions/*`): their manifests make the workspace
        // load, but their code stays out of the learner's reach (`include!` of a solution).
        let solutions = self.course_root.join("solutions");
        if solutions.is_dir() {
            copy_trusted(&solutions, &self.workspace.join("solutions"), true)?;
        }
        let src = self.workspace.join(&exercise.dir).join("src");
        if src.exists() {
            std::fs::remove_dir_all(&src)
                .with_context(|| format!("{}: cannot clear", src.display()))?;
        }
        for (rel, bytes) in &tree.files {
            // The grader's readers normalise every path; refuse anything that still climbs.
            if rel
                .split('/')
                .any(|c| c.is_empty() || c == "." || c == "..")
            {
                continue;
            }
            let path = src.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("{}: cannot create", parent.display()))?;
            }
            // Written now, so their times are newer than any earlier learner's build.
            std::fs::write(&path, bytes)
                .with_context(|| format!("{}: cannot write", path.display()))?;
        }
        Ok(())
    }
}

/// One run's folder for the test user: `BASE/run-N` (0700, theirs) with the package and the
/// test binaries; removed when dropped.
struct OwnFolder {
    root: PathBuf,
    package: PathBuf,
    binaries: Vec<PathBuf>,
}

impl OwnFolder {
    fn new(u: &Unprivileged, package: &Path, binaries: &[PathBuf]) -> Result<OwnFolder> {
        let n = u.runs.get() + 1;
        u.runs.set(n);
        let root = u.base.join(format!("run-{n}"));
        std::fs::create_dir(&root).with_context(|| format!("{}: cannot create", root.display()))?;
        set_mode(&root, 0o700)?;
        let own = OwnFolder {
            package: root.join("package"),
            binaries: binaries
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    root.join("bin").join(format!(
                        "{i}-{}",
                        b.file_name().map_or("test".into(), |n| n.to_string_lossy())
                    ))
                })
                .collect(),
            root,
        };
        copy_package(package, &own.package)?;
        std::fs::create_dir_all(own.root.join("bin"))?;
        std::fs::create_dir_all(own.root.join("tmp"))?;
        for (from, to) in binaries.iter().zip(&own.binaries) {
            std::fs::copy(from, to)
                .with_context(|| format!("{}: cannot copy the test binary", from.display()))?;
        }
        chown_all(&own.root, u.user)?;
        Ok(own)
    }
}

impl Drop for OwnFolder {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The package folder as the scratch workspace has it (the learner's `src/` included), without
/// links or build output.
fn copy_package(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("{}: cannot create", to.display()))?;
    for item in
        std::fs::read_dir(from).with_context(|| format!("{}: cannot read", from.display()))?
    {
        let item = item?;
        let kind = item.file_type()?;
        let name = item.file_name();
        if name == "target" {
            continue;
        }
        if kind.is_dir() {
            copy_package(&item.path(), &to.join(&name))?;
        } else if kind.is_file() {
            std::fs::copy(item.path(), to.join(&name))
                .with_context(|| format!("{}: cannot copy", item.path().display()))?;
        }
    }
    Ok(())
}

/// Whether `user` can list `folder`: search permission on every folder above it, and read and
/// search on it (owner, group or others' bits, as the kernel checks them; ACLs aside).
fn reachable_by(folder: &Path, user: RunAs) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let allows = |path: &Path, bits: u32| {
            let Ok(m) = std::fs::metadata(path) else {
                return false;
            };
            let shift = if m.uid() == user.uid {
                6
            } else if m.gid() == user.gid {
                3
            } else {
                0
            };
            (m.mode() >> shift) & bits == bits
        };
        let searchable = folder.ancestors().skip(1).all(|a| allows(a, 0o1));
        searchable && allows(folder, 0o5)
    }
    #[cfg(not(unix))]
    {
        let _ = (folder, user);
        false
    }
}

fn chown_all(path: &Path, user: RunAs) -> Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::lchown(path, Some(user.uid), Some(user.gid))
            .with_context(|| format!("{}: cannot give it to the test user", path.display()))?;
        if std::fs::symlink_metadata(path)?.is_dir() {
            for item in std::fs::read_dir(path)? {
                chown_all(&item?.path(), user)?;
            }
        }
    }
    Ok(())
}

fn set_mode(path: &Path, mode: u32) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
            .with_context(|| format!("{}: cannot set its mode", path.display()))?;
    }
    let _ = (path, mode);
    Ok(())
}

/// Learners' code never runs among the instructor's files: a test folder inside the course is
/// refused, unless it lies under the course's build output (target/).
fn refuse_inside(course_root: &Path, dir: &Path) -> Result<()> {
    if dir.starts_with(course_root) && !dir.starts_with(course_root.join("target")) {
        bail!(
            "{}: the test folder lies inside the course folder {}; learners' code is never run in the instructor's tree. \
             Give --test-dir a folder outside it, or under its target/",
            dir.display(),
            course_root.display()
        );
    }
    Ok(())
}

/// An exclusive lock on `DIR/.lock` (flock: released when the process ends, however it ends).
fn lock(dir: &Path) -> Result<std::fs::File> {
    let path = dir.join(".lock");
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("{}: cannot create", path.display()))?;
    #[cfg(unix)]
    if rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        bail!("{}: another `course grade --run-tests` is using this test folder; wait for it, or give this one its own --test-dir", dir.display());
    }
    Ok(file)
}

fn not_run(exercise: &ExerciseInfo, why: String) -> TestRun {
    TestRun {
        exercise: exercise.number,
        outcome: TestOutcome::NotRun,
        detail: why,
    }
}

/// Which outcome of several test binaries the learner is told about first.
fn severity(outcome: &TestOutcome) -> u8 {
    match outcome {
        TestOutcome::Passed { .. } | TestOutcome::NotRun => 0,
        TestOutcome::Failed { .. } => 1,
        TestOutcome::NetworkRefused => 2,
        TestOutcome::OutOfMemory { .. } => 3,
        TestOutcome::TimedOut { .. } | TestOutcome::BuildFailed => 4,
    }
}

/// Copy the course's own files, keeping their modification times (so the shared build folder
/// sees them unchanged from one learner to the next). Build output and links are left out.
/// `manifests_only`: every file but `Cargo.toml` is written empty.
fn copy_trusted(from: &Path, to: &Path, manifests_only: bool) -> Result<()> {
    let meta = std::fs::symlink_metadata(from)
        .with_context(|| format!("{}: cannot read", from.display()))?;
    if meta.is_dir() {
        std::fs::create_dir_all(to).with_context(|| format!("{}: cannot create", to.display()))?;
        for entry in std::fs::read_dir(from)
            .with_context(|| format!("{}: cannot read", from.display()))?
            .flatten()
        {
            let name = entry.file_name();
            if name == "target" || name == ".git" {
                continue;
            }
            copy_trusted(&entry.path(), &to.join(&name), manifests_only)?;
        }
    } else if meta.is_file() {
        if manifests_only && from.file_name().is_none_or(|n| n != "Cargo.toml") {
            std::fs::write(to, b"").with_context(|| format!("{}: cannot write", to.display()))?;
        } else {
            std::fs::copy(from, to)
                .with_context(|| format!("cannot copy {} to {}", from.display(), to.display()))?;
        }
        if let Ok(modified) = meta.modified() {
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(to)
                .with_context(|| format!("{}: cannot open", to.display()))?;
            file.set_modified(modified)
                .with_context(|| format!("{}: cannot set its time", to.display()))?;
        }
    }
    Ok(())
}

/// The test executables of `cargo test --no-run --message-format json`.
fn test_binaries(messages: &str) -> Vec<PathBuf> {
    messages
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|m| m["reason"] == "compiler-artifact" && m["profile"]["test"] == true)
        .filter_map(|m| m["executable"].as_str().map(PathBuf::from))
        .collect()
}

/// Passed and failed counts from libtest's `test result:` lines.
fn libtest_counts(output: &str) -> (usize, usize) {
    let mut counts = (0, 0);
    for line in output.lines().filter(|l| l.starts_with("test result:")) {
        for part in line.split([';', '.']) {
            let mut words = part.split_whitespace();
            if let (Some(n), Some(what)) = (
                words.next().and_then(|n| n.parse::<usize>().ok()),
                words.next(),
            ) {
                match what {
                    "passed" => counts.0 += n,
                    "failed" => counts.1 += n,
                    _ => {}
                }
            }
        }
    }
    counts
}

/// Rust's allocation-failure message, or the OS's ENOMEM.
fn out_of_memory(output: &str) -> bool {
    (output.contains("memory allocation of ") && output.contains(" failed"))
        || output.contains("Cannot allocate memory (os error 12)")
}

/// What a socket says in a namespace with no interface up: unreachable network, no name
/// server, no address to bind.
fn network_refused(output: &str) -> bool {
    [
        "os error 101",
        "Network is unreachable",
        "failed to lookup address",
        "Temporary failure in name resolution",
        "os error 99",
    ]
    .iter()
    .any(|m| output.contains(m))
}

/// The failing tests and their messages, or the output's end when there is no summary.
fn failure_excerpt(output: &str, signal: Option<i32>) -> String {
    let all: Vec<&str> = output.lines().collect();
    let mut lines: Vec<&str> = Vec::new();
    for (i, l) in all.iter().enumerate() {
        let after_panic =
            i > 0 && all[i - 1].starts_with("thread '") && all[i - 1].contains("panicked at");
        if (l.starts_with("test ") && (l.ends_with("FAILED") || l.contains("has been running")))
            || l.starts_with("thread '")
            || after_panic
            || l.contains("memory allocation of")
        {
            lines.push(l);
        }
    }
    lines.truncate(20);
    if lines.is_empty() {
        lines = output
            .lines()
            .rev()
            .take(10)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
    }
    let mut text = lines.join("\n");
    if let Some(signal) = signal {
        text.push_str(&format!(
            "\n(the test process was killed by signal {signal})"
        ));
    }
    text
}

/// The last lines (at most `bytes` bytes) of a log.
fn tail(path: &Path, bytes: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(bytes)));
    let mut buf = Vec::new();
    let _ = file.take(bytes).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_counts_add_up_over_summaries() {
        let out = "running 3 tests\ntest a ... ok\ntest b ... FAILED\ntest result: FAILED. 2 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s\n\
                   test result: ok. 4 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out\n";
        assert_eq!(libtest_counts(out), (6, 1));
        assert_eq!(libtest_counts("no summary"), (0, 0));
    }

    #[test]
    fn causes_are_read_from_the_output() {
        assert!(out_of_memory("memory allocation of 1048576 bytes failed\n"));
        assert!(!out_of_memory("assertion failed: allocation is fine"));
        assert!(network_refused("called `Result::unwrap()` on an `Err` value: Os { code: 101, kind: NetworkUnreachable, message: \"Network is unreachable\" }"));
        assert!(!network_refused("assertion `left == right` failed"));
    }

    #[test]
    fn test_binaries_come_from_test_artifacts_only() {
        let messages = r#"{"reason":"compiler-artifact","profile":{"test":false},"executable":"/t/release/build-script"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":"/t/release/deps/exercise_2-abc"}
{"reason":"compiler-artifact","profile":{"test":true},"executable":null}
{"reason":"build-finished","success":true}"#;
        assert_eq!(
            test_binaries(messages),
            [PathBuf::from("/t/release/deps/exercise_2-abc")]
        );
    }
}
