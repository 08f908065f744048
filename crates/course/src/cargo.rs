//! Running cargo for an exercise, in the dev profile: the profile of the learner's own
//! `cargo run -p exercise-N` (optimised where it is timed: the root Cargo.toml), so `course run`,
//! `course check` and `course watch` reuse that build and compile nothing more.
//!
//! Cargo features (`--features cuda` or `COURSE_FEATURES=cuda`) pass through to the exercise's
//! package. A build with `cuda` compiles candle's CUDA kernels: it goes to `target/cuda` in
//! release, the folder and profile scripts/build-cuda.sh fills, so switching between CPU and GPU
//! builds does not recompile candle each time, and it uses the PyPI CUDA toolchain that script
//! installs (target/cuda-venv) when no nvcc is on PATH.

use anyhow::{bail, Context, Result};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};

/// The environment variable that gives the features when `--features` is not given.
pub const FEATURES_ENV: &str = "COURSE_FEATURES";

/// The feature that switches candle to its CUDA backend.
const CUDA: &str = "cuda";

/// How to build an exercise: which cargo features it is built with.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Build {
    pub features: Vec<String>,
}

impl Build {
    /// `--features a,b` (or `a b`), else `$COURSE_FEATURES`, else none.
    pub fn from_flag(flag: Option<&str>) -> Build {
        let env = std::env::var(FEATURES_ENV).ok();
        Build::parse(flag.or(env.as_deref()).unwrap_or(""))
    }

    fn parse(list: &str) -> Build {
        let mut features: Vec<String> = Vec::new();
        for f in list
            .split([',', ' '])
            .map(str::trim)
            .filter(|f| !f.is_empty())
        {
            if !features.iter().any(|g| g == f) {
                features.push(f.to_string());
            }
        }
        Build { features }
    }

    /// The features this package declares; the others are left out with a note (exercise 4,
    /// say, reads files and has no `cuda` feature), so `COURSE_FEATURES=cuda course watch`
    /// can move through every exercise.
    pub fn for_package(&self, package: &str, manifest: &Path) -> Build {
        if self.features.is_empty() {
            return self.clone();
        }
        let text = std::fs::read_to_string(manifest).unwrap_or_default();
        let (kept, dropped): (Vec<String>, Vec<String>) = self
            .features
            .iter()
            .cloned()
            .partition(|f| declares_feature(&text, f));
        if !dropped.is_empty() {
            eprintln!(
                "==> {package} has no `{}` feature ({} [features]); building it without.",
                dropped.join("`, `"),
                manifest.display()
            );
        }
        Build { features: kept }
    }

    pub fn uses_cuda(&self) -> bool {
        self.features.iter().any(|f| f == CUDA)
    }

    /// The cargo command line `course` runs, as the learner reads it before the build, e.g.
    /// `cargo build -p exercise-3` or `cargo run --release -p exercise-3 --features cuda`.
    pub fn shown(&self, subcommand: &str, package: &str) -> String {
        let mut line = format!("cargo {subcommand}");
        for arg in self.flags(package) {
            line.push(' ');
            line.push_str(&arg);
        }
        line
    }

    /// The arguments after the subcommand: the profile (none for dev), the package, the features.
    fn flags(&self, package: &str) -> Vec<String> {
        let mut flags = Vec::new();
        if self.uses_cuda() {
            // scripts/build-cuda.sh builds target/cuda in release: the same profile reuses it.
            flags.push("--release".to_string());
        }
        flags.extend(["-p".to_string(), package.to_string()]);
        if !self.features.is_empty() {
            flags.extend(["--features".to_string(), self.features.join(",")]);
        }
        flags
    }
}

/// A Cargo.toml's text as a table (an unreadable one reads as empty: it declares nothing).
fn manifest_table(manifest: &str) -> toml::Table {
    manifest.parse().unwrap_or_default()
}

/// Whether a Cargo.toml declares `feature` in its `[features]` table.
fn declares_feature(manifest: &str, feature: &str) -> bool {
    manifest_table(manifest)
        .get("features")
        .and_then(toml::Value::as_table)
        .is_some_and(|f| f.contains_key(feature))
}

fn cargo() -> Command {
    // Under `cargo run`/`cargo test` CARGO names the cargo in use; otherwise take it from PATH.
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `cargo SUBCOMMAND -p PACKAGE [--features F] [-- args]` ([`Build::shown`]), in the course
/// root, with the CUDA build's profile, target folder and toolchain when `build` uses `cuda`.
pub fn command(
    root: &Path,
    subcommand: &str,
    package: &str,
    build: &Build,
    args: &[String],
) -> Result<Command> {
    let mut command = cargo();
    command
        .current_dir(root)
        .arg(subcommand)
        .args(build.flags(package));
    if build.uses_cuda() {
        for (key, value) in cuda_environment(root, &Host::current())? {
            command.env(key, value);
        }
    }
    if !args.is_empty() {
        command.arg("--").args(args);
    }
    Ok(command)
}

/// Runs [`command`], output to the terminal.
pub fn run(
    root: &Path,
    subcommand: &str,
    package: &str,
    build: &Build,
    args: &[String],
) -> Result<ExitStatus> {
    let mut command = command(root, subcommand, package, build, args)?;
    command.status().with_context(|| {
        format!("cannot start `cargo {subcommand}`: is cargo installed and on PATH?")
    })
}

/// What the CUDA build needs from the machine, read once (a struct so tests can fake it).
#[derive(Debug, Clone, Default)]
struct Host {
    target_dir_set: bool,
    /// nvcc on PATH, or under $CUDA_ROOT / $CUDA_PATH / $CUDA_HOME.
    system_nvcc: bool,
    /// CUDA_COMPUTE_CAP is set, or nvidia-smi is on PATH for candle's build to ask the GPU.
    compute_cap_known: bool,
    path: Option<OsString>,
}

impl Host {
    fn current() -> Host {
        let path = std::env::var_os("PATH");
        let on_path = |tool: &str| {
            path.as_ref()
                .is_some_and(|p| std::env::split_paths(p).any(|d| d.join(tool).is_file()))
        };
        let in_root = ["CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"]
            .iter()
            .filter_map(std::env::var_os)
            .any(|d| Path::new(&d).join("bin/nvcc").is_file());
        Host {
            target_dir_set: std::env::var_os("CARGO_TARGET_DIR").is_some(),
            system_nvcc: on_path("nvcc") || in_root,
            compute_cap_known: std::env::var_os("CUDA_COMPUTE_CAP").is_some()
                || on_path("nvidia-smi"),
            path: path.clone(),
        }
    }
}

/// The CUDA toolchain scripts/build-cuda.sh installs from PyPI: target/cuda-venv's nvidia/cu13.
fn venv_cuda_tree(root: &Path) -> Option<PathBuf> {
    let lib = root.join("target/cuda-venv/lib");
    let mut trees: Vec<PathBuf> = std::fs::read_dir(&lib)
        .ok()?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("site-packages/nvidia/cu13"))
        .filter(|t| t.join("bin/nvcc").is_file())
        .collect();
    trees.sort();
    trees.pop()
}

/// The compute capability scripts/build-cuda.sh built target/cuda for (its cuda-build.txt).
fn built_compute_cap(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join("target/cuda/release/cuda-build.txt")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("compute_cap="))
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
}

/// Environment for a `cuda` build: its own target folder (unless CARGO_TARGET_DIR is set),
/// the compute capability when no GPU can be asked, and, without a system nvcc, the PyPI
/// toolchain from target/cuda-venv.
fn cuda_environment(root: &Path, host: &Host) -> Result<Vec<(String, OsString)>> {
    let mut env = Vec::new();
    if !host.target_dir_set {
        env.push((
            "CARGO_TARGET_DIR".to_string(),
            root.join("target/cuda").into_os_string(),
        ));
    }
    if !host.compute_cap_known {
        // candle's kernels are compiled for one GPU generation, which its build asks nvidia-smi
        // for. Without one, reuse what scripts/build-cuda.sh built for (else every kernel
        // would be recompiled for another).
        let Some(cap) = built_compute_cap(root) else {
            bail!(
                "the `cuda` feature compiles CUDA kernels for one GPU generation, and there is no nvidia-smi here to \
                 ask: set CUDA_COMPUTE_CAP (90 for H100/H200, 89 for L4 and RTX 40xx, 86 for A10 and RTX 30xx, 80 \
                 for A100, 75 for T4) and run again"
            );
        };
        eprintln!("==> CUDA_COMPUTE_CAP={cap} (what scripts/build-cuda.sh built for; set CUDA_COMPUTE_CAP to change it)");
        env.push(("CUDA_COMPUTE_CAP".to_string(), OsString::from(cap)));
    }
    if host.system_nvcc {
        return Ok(env);
    }
    let Some(tree) = venv_cuda_tree(root) else {
        bail!(
            "the `cuda` feature compiles CUDA kernels with nvcc, and there is none: not on PATH, not under \
             $CUDA_ROOT, and no target/cuda-venv. Install the CUDA toolkit (the release of your NVIDIA driver or \
             older), or run scripts/build-cuda.sh once: it installs CUDA 13.0 from PyPI into target/cuda-venv, \
             which `course` then uses. Or build for the CPU: leave out --features cuda (and unset {FEATURES_ENV})."
        );
    };
    eprintln!(
        "==> CUDA toolchain: {} (from scripts/build-cuda.sh)",
        tree.display()
    );
    let mut path = OsString::from(tree.join("bin"));
    if let Some(old) = &host.path {
        path.push(":");
        path.push(old);
    }
    env.push(("PATH".to_string(), path));
    for key in ["CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"] {
        env.push((key.to_string(), tree.clone().into_os_string()));
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(c: &Command) -> Vec<String> {
        c.get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn features_parse_from_commas_or_spaces_without_repeats() {
        assert_eq!(Build::parse("cuda, extra cuda").features, ["cuda", "extra"]);
        assert!(Build::parse("  ").features.is_empty());
    }

    #[test]
    fn only_declared_features_are_kept() {
        let manifest = "[package]\nname = \"exercise-3\"\ncuda = 1\n\n[features]\ncuda = [\"gpt2/cuda\"]\n\"fast\" = []\n\n[dependencies]\nother = \"1\"\n";
        assert!(declares_feature(manifest, "cuda"));
        assert!(declares_feature(manifest, "fast"));
        assert!(!declares_feature(manifest, "other"));
        assert!(!declares_feature("[package]\ncuda = 1\n", "cuda"));

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("Cargo.toml");
        std::fs::write(&path, manifest).unwrap();
        assert_eq!(
            Build::parse("cuda,nope")
                .for_package("exercise-3", &path)
                .features,
            ["cuda"]
        );
        std::fs::write(&path, "[package]\nname = \"exercise-4\"\n").unwrap();
        assert!(Build::parse("cuda")
            .for_package("exercise-4", &path)
            .features
            .is_empty());
    }

    #[test]
    fn a_cpu_build_is_plain_cargo() {
        let c = command(
            Path::new("/course"),
            "run",
            "exercise-3",
            &Build::default(),
            &["--device".into(), "cpu".into()],
        )
        .unwrap();
        assert_eq!(
            args(&c),
            ["run", "-p", "exercise-3", "--", "--device", "cpu"]
        );
        assert_eq!(c.get_envs().count(), 0);
        assert_eq!(
            Build::default().shown("build", "exercise-3"),
            "cargo build -p exercise-3",
            "the learner's own command"
        );
    }

    #[test]
    fn a_cuda_build_is_in_release_like_scripts_build_cuda() {
        // (command() itself needs nvcc for a cuda build; its flags are these.)
        let build = Build::parse("cuda");
        assert_eq!(
            build.flags("exercise-5"),
            ["--release", "-p", "exercise-5", "--features", "cuda"]
        );
        assert_eq!(
            build.shown("test", "exercise-5"),
            "cargo test --release -p exercise-5 --features cuda"
        );
        assert_eq!(
            Build::parse("extra").shown("build", "exercise-5"),
            "cargo build -p exercise-5 --features extra"
        );
    }

    #[test]
    fn features_go_before_the_program_arguments() {
        let build = Build::parse("extra");
        let c = command(
            Path::new("/course"),
            "run",
            "exercise-3",
            &build,
            &["--x".into()],
        )
        .unwrap();
        assert_eq!(
            args(&c),
            [
                "run",
                "-p",
                "exercise-3",
                "--features",
                "extra",
                "--",
                "--x"
            ]
        );
    }

    #[test]
    fn a_cuda_build_gets_its_own_target_folder_and_the_venv_toolchain() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let host = Host {
            target_dir_set: false,
            system_nvcc: true,
            compute_cap_known: true,
            path: None,
        };
        let env = cuda_environment(root, &host).unwrap();
        assert_eq!(
            env,
            [(
                "CARGO_TARGET_DIR".to_string(),
                root.join("target/cuda").into_os_string()
            )]
        );

        let host = Host {
            target_dir_set: true,
            system_nvcc: false,
            compute_cap_known: true,
            path: Some("/usr/bin".into()),
        };
        let err = cuda_environment(root, &host).unwrap_err().to_string();
        assert!(
            err.contains("scripts/build-cuda.sh") && err.contains("leave out --features cuda"),
            "{err}"
        );

        let tree = root.join("target/cuda-venv/lib/python3.11/site-packages/nvidia/cu13");
        std::fs::create_dir_all(tree.join("bin")).unwrap();
        std::fs::write(tree.join("bin/nvcc"), "").unwrap();
        let env = cuda_environment(root, &host).unwrap();
        let get = |k: &str| env.iter().find(|(key, _)| key == k).map(|(_, v)| v.clone());
        assert_eq!(
            get("CARGO_TARGET_DIR"),
            None,
            "CARGO_TARGET_DIR was set by the caller"
        );
        assert_eq!(get("CUDA_ROOT"), Some(tree.clone().into_os_string()));
        let mut path = OsString::from(tree.join("bin"));
        path.push(":/usr/bin");
        assert_eq!(get("PATH"), Some(path));
    }

    #[test]
    fn without_a_gpu_to_ask_the_compute_capability_comes_from_the_cuda_build() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let host = Host {
            target_dir_set: true,
            system_nvcc: true,
            compute_cap_known: false,
            path: None,
        };
        let err = cuda_environment(root, &host).unwrap_err().to_string();
        assert!(err.contains("set CUDA_COMPUTE_CAP"), "{err}");
        std::fs::create_dir_all(root.join("target/cuda/release")).unwrap();
        std::fs::write(
            root.join("target/cuda/release/cuda-build.txt"),
            "compute_cap=89\nnvcc=13.0\n",
        )
        .unwrap();
        let env = cuda_environment(root, &host).unwrap();
        assert_eq!(
            env,
            [("CUDA_COMPUTE_CAP".to_string(), OsString::from("89"))]
        );
    }
}
