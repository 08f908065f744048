//! Where host timestamps come from. Tests inject a [`ManualClock`] so that every duration
//! is known exactly and no test sleeps or depends on the machine's speed.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A monotonic source of nanosecond timestamps.
pub trait Clock: Send {
    /// Nanoseconds since an arbitrary fixed origin; never decreases.
    fn now_ns(&self) -> u64;
}

/// The real clock: `std::time::Instant`, measured from when the clock was made.
#[derive(Debug, Clone, Copy)]
pub struct MonotonicClock {
    origin: Instant,
}

impl MonotonicClock {
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
        }
    }
}

impl Default for MonotonicClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for MonotonicClock {
    fn now_ns(&self) -> u64 {
        // u64 nanoseconds last 584 years: truncation cannot happen in practice.
        self.origin.elapsed().as_nanos() as u64
    }
}

/// A clock that moves only when told to. Clones share one time, so a test keeps a clone and
/// advances it while the profiler reads the other.
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
}

impl ManualClock {
    pub fn new() -> Self {
        Self::default()
    }

    /// Move time forward by `ns` nanoseconds.
    pub fn advance(&self, ns: u64) {
        self.now.fetch_add(ns, Ordering::SeqCst);
    }

    /// Move time forward by `us` microseconds.
    pub fn advance_us(&self, us: u64) {
        self.advance(us * 1_000);
    }
}

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.now.load(Ordering::SeqCst)
    }
}
