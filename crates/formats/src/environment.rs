//! Where a measurement was taken: the one record both files carry (report.json's and
//! bench.json's `environment`). A number without its machine is not a result, and two results
//! compare only when these fields say they can.

use std::process::Command;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How the times in a profile or a benchmark were taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// Host clock only (CPU runs, a CUDA run without device timing, every benchmark).
    Host,
    /// Timing-enabled CUDA events at scope boundaries, read after one synchronise per step.
    CudaEvents,
    /// A device synchronise at every scope boundary, then the host clock.
    CudaSync,
}

impl Timing {
    pub fn as_str(self) -> &'static str {
        match self {
            Timing::Host => "host",
            Timing::CudaEvents => "cuda-events",
            Timing::CudaSync => "cuda-sync",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Environment {
    /// CPU model name, or "unknown".
    pub cpu_model: String,
    /// Worker threads the measured program computed with, where its caller said (the
    /// profiler's `Options::threads`); otherwise the hardware threads available.
    pub threads: usize,
    pub os: String,
    pub arch: String,
    /// `cpu`, `cuda`, `cuda:0`, … for in-process measurements; for a load run, whatever the
    /// caller states about the server (a client cannot see it); `unknown` when nobody said.
    pub device: String,
    /// Cargo features the measured binary was built with, as its caller states them; the
    /// profiler states its own (`cuda`, `nvtx`).
    pub cargo_features: Vec<String>,
    /// `f32`, `f16`, `bf16`, …, or `unknown` when the caller did not say.
    pub dtype: String,
    /// How times were taken; `host` for every benchmark (host clock around requests and tokens).
    pub timing: Timing,
    /// `git rev-parse HEAD` of the working directory, `unknown` outside a repository.
    pub git_revision: String,
    /// Whether tracked files had uncommitted changes; null outside a repository.
    pub git_dirty: Option<bool>,
    /// Whether the code was compiled with optimisations (opt-level above 0). Read from this
    /// crate's own build: one cargo build gives every crate the same profile.
    pub optimized_build: bool,
    /// The crates' version (the workspace's, shared by every crate).
    pub crate_version: String,
    /// Seconds since the Unix epoch when the record was taken.
    pub timestamp_unix_s: u64,
    /// The model that ran, as the caller names it (`HuggingFaceTB/SmolLM2-135M`); absent when
    /// the caller did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// How its rows were made, as the caller states it: `engine` (every op in its own row, with
    /// its work count and roofline) or `spans` (the tracing spans the model opens, without work
    /// counts, so without rooflines); absent when the caller did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
}

/// What only the caller knows: the device, the features its binary was built with, the dtype.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub device: Option<String>,
    pub cargo_features: Vec<String>,
    pub dtype: Option<String>,
}

impl Environment {
    /// Record this machine, and what the caller states about what it measured. Threads are
    /// the available parallelism and timing is `host`; a caller who knows better sets them.
    pub fn capture(target: Target) -> Environment {
        let (git_revision, git_dirty) = git_state().clone();
        Environment {
            cpu_model: cpu_model(),
            threads: std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            device: target.device.unwrap_or_else(|| "unknown".into()),
            cargo_features: target.cargo_features,
            dtype: target.dtype.unwrap_or_else(|| "unknown".into()),
            timing: Timing::Host,
            git_revision,
            git_dirty,
            optimized_build: !unoptimised_build(),
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
            model: None,
            tier: None,
            timestamp_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }

    /// `release` or `debug`, as the ceilings and the tables name a build: optimised or not.
    pub fn build(&self) -> &'static str {
        if self.optimized_build {
            "release"
        } else {
            "debug"
        }
    }
}

/// True when the crates were compiled without optimisations (opt-level 0), so timings taken
/// by them are not representative.
pub fn unoptimised_build() -> bool {
    env!("FORMATS_OPT_LEVEL") == "0"
}

/// This machine's CPU model name, or "unknown". Linux names it in /proc/cpuinfo (`model name`
/// on x86, `Model` or `cpu model` on some ARM and MIPS kernels); macOS answers through sysctl.
pub fn cpu_model() -> String {
    if let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") {
        let model = info.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            matches!(key.trim(), "model name" | "Model" | "cpu model").then(|| value.trim())
        });
        if let Some(model) = model.filter(|m| !m.is_empty()) {
            return model.to_string();
        }
    }
    command_output("sysctl", &["-n", "machdep.cpu.brand_string"])
        .unwrap_or_else(|| "unknown".into())
}

/// The revision and dirtiness, asked of git once per process: a program writes many reports
/// (the tests write hundreds) and the answer does not change under it.
fn git_state() -> &'static (String, Option<bool>) {
    static STATE: OnceLock<(String, Option<bool>)> = OnceLock::new();
    STATE.get_or_init(|| {
        let revision = command_output("git", &["rev-parse", "HEAD"]);
        let dirty = revision
            .as_ref()
            .and_then(|_| command_output("git", &["status", "--porcelain", "--untracked-files=no"]))
            .map(|s| !s.is_empty());
        (revision.unwrap_or_else(|| "unknown".into()), dirty)
    })
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
