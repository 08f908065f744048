//! Where a profile was taken: what a reader needs to judge whether two profiles compare.

use serde::{Deserialize, Serialize};

use crate::device::Timing;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Worker threads the profiled program computed with.
    pub threads: usize,
    pub os: String,
    pub arch: String,
    /// CPU model name, or "unknown".
    pub cpu: String,
    /// "release" or "debug" (whether debug assertions were on in the profiler's build).
    pub build: String,
    /// Cargo features of the profiler crate that were on.
    pub features: Vec<String>,
    pub timing: Timing,
    pub crate_version: String,
}

impl Environment {
    /// Describe this machine and build. `threads` defaults to the available parallelism.
    pub fn detect(threads: Option<usize>, timing: Timing) -> Self {
        let threads = threads.unwrap_or_else(|| {
            std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1)
        });
        let mut features = Vec::new();
        if cfg!(feature = "cuda") {
            features.push("cuda".to_string());
        }
        Environment {
            threads,
            os: std::env::consts::OS.to_string(),
            arch: std::env::consts::ARCH.to_string(),
            cpu: cpu_model().unwrap_or_else(|| "unknown".to_string()),
            build: if cfg!(debug_assertions) { "debug" } else { "release" }.to_string(),
            features,
            timing,
            crate_version: env!("CARGO_PKG_VERSION").to_string(),
        }
    }
}

/// True when the profiler itself was compiled without optimisations, so its timings (and
/// probably the program's) are not representative.
pub fn unoptimised_build() -> bool {
    env!("PROFILER_OPT_LEVEL") == "0"
}

fn cpu_model() -> Option<String> {
    let text = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}
