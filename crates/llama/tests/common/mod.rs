//! What the llama integration tests share: where the tiny checkpoints are, and which CPU kernel
//! paths a test walks.

use std::path::PathBuf;

use engine::cpu::KernelPath;

/// The seeded checkpoints and references the fixture scripts wrote.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// The kernel path `COURSE_CPU_KERNELS` names, or else every one this CPU supports.
pub fn paths() -> Vec<KernelPath> {
    match engine::settings::CPU_KERNELS
        .var()
        .map(|v| KernelPath::parse(&v))
    {
        Some(Ok(Some(path))) => vec![path],
        _ => KernelPath::supported(),
    }
}
