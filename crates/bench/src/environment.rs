//! Where a result was measured. A number without its machine is not a result: every report
//! carries the CPU, thread count, device, cargo features, dtype and git revision.

use std::process::Command;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub cpu_model: String,
    /// Hardware threads available to this process.
    pub threads: usize,
    pub os: String,
    pub arch: String,
    /// `cpu`, `cuda:0`, … for in-process runs; for a load run, whatever the caller states about
    /// the server (the client cannot see it), `unknown` by default.
    pub device: String,
    pub cargo_features: Vec<String>,
    pub dtype: String,
    /// `git rev-parse HEAD` of the working directory, `unknown` outside a repository.
    pub git_revision: String,
    /// Whether the working tree had uncommitted changes.
    pub git_dirty: Option<bool>,
    /// Whether the measuring code was built with optimisations.
    pub optimized_build: bool,
    pub bench_version: String,
    /// Seconds since the Unix epoch when the record was taken.
    pub timestamp_unix_s: u64,
}

/// What only the caller knows: the device, the features its binary was built with, the dtype.
#[derive(Debug, Clone, Default)]
pub struct Target {
    pub device: Option<String>,
    pub cargo_features: Vec<String>,
    pub dtype: Option<String>,
}

impl Environment {
    /// Record this machine, and what the caller states about the device under test.
    pub fn capture(target: Target) -> Environment {
        let (git_revision, git_dirty) = git_state();
        Environment {
            cpu_model: cpu_model(),
            threads: std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            device: target.device.unwrap_or_else(|| "unknown".into()),
            cargo_features: target.cargo_features,
            dtype: target.dtype.unwrap_or_else(|| "unknown".into()),
            git_revision,
            git_dirty,
            optimized_build: !cfg!(debug_assertions),
            bench_version: env!("CARGO_PKG_VERSION").to_string(),
            timestamp_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0),
        }
    }
}

fn cpu_model() -> String {
    // Linux names the CPU in /proc/cpuinfo; macOS answers through sysctl.
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

fn git_state() -> (String, Option<bool>) {
    let revision = command_output("git", &["rev-parse", "HEAD"]);
    let dirty = revision
        .as_ref()
        .and_then(|_| command_output("git", &["status", "--porcelain", "--untracked-files=no"]))
        .map(|s| !s.is_empty());
    (revision.unwrap_or_else(|| "unknown".into()), dirty)
}

fn command_output(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}
