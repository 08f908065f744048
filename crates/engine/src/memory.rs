//! Whether a model fits in this machine's free memory, said before anything large is read.

use crate::error::{Error, Result};

/// Refuses `name` when loading it needs `needed` bytes and fewer are free; `detail` says where
/// the figure comes from (its parameters and type). Where the free memory cannot be read (not
/// Linux), nothing is refused.
pub fn check_fits(name: &str, needed: u64, detail: &str) -> Result<()> {
    match available() {
        Some(free) => fits(name, needed, detail, free),
        None => Ok(()),
    }
}

/// [`check_fits`] with `free` bytes free.
pub fn fits(name: &str, needed: u64, detail: &str, free: u64) -> Result<()> {
    if needed > free {
        return Err(Error::Input(format!(
            "{name} {detail}: about {} while loading, but this machine has {} free; pick a smaller model, or a narrower weight type",
            gib(needed),
            gib(free)
        )));
    }
    Ok(())
}

/// `bytes` in GiB, one decimal.
pub fn gib(bytes: u64) -> String {
    format!("{:.1} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Free memory as Linux reports it (`MemAvailable`); `None` elsewhere.
pub fn available() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}
