//! Device timing, abstracted so the recorder knows nothing of CUDA and tests can drive it.
//!
//! The recorder calls [`DeviceTimer::mark`] at every scope boundary (before it reads the host
//! clock) and [`DeviceTimer::finish_step`] once at the end of a step. An implementation either
//! records a timing event on the device's stream (event mode: marks are cheap and
//! asynchronous, read after one synchronise) or synchronises and reads a host clock (sync
//! mode: every boundary waits for the device, which is what makes host-clock timing of
//! asynchronous launches honest, and slow).

use std::fmt;

use crate::clock::{Clock, ManualClock};

/// How the times were taken, and which device ran: the file's words, defined with
/// report.json's types in the `formats` crate.
pub use formats::{environment::Timing, report::DeviceKind};

/// How a CUDA run's device times are taken (`--cuda-timing`; a CPU run ignores it). Defined on
/// every build, CUDA or not, so the flag is too; the timer itself needs the `cuda` feature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CudaTiming {
    /// CUDA events at scope boundaries, read after one synchronise per step.
    #[default]
    Events,
    /// Synchronise around every op: slower, shows what host clocks alone would say.
    Sync,
}

impl CudaTiming {
    pub const ALL: [CudaTiming; 2] = [CudaTiming::Events, CudaTiming::Sync];

    /// The name on the command line: `events` or `sync`.
    pub fn as_str(self) -> &'static str {
        match self {
            CudaTiming::Events => "events",
            CudaTiming::Sync => "sync",
        }
    }

    /// How a report names the times taken this way.
    pub fn timing(self) -> Timing {
        match self {
            CudaTiming::Events => Timing::CudaEvents,
            CudaTiming::Sync => Timing::CudaSync,
        }
    }
}

impl fmt::Display for CudaTiming {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for CudaTiming {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        CudaTiming::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| format!("`{s}` is not a CUDA timing: use `events` or `sync`"))
    }
}

/// A device timing failure, kept as text: it ends up in the profile's warnings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceError(pub String);

impl fmt::Display for DeviceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DeviceError {}

/// Takes device-side timestamps at scope boundaries.
pub trait DeviceTimer {
    /// What kind of timing this is (recorded in the report).
    fn timing(&self) -> Timing;
    /// Called when a recorded step starts: forget the previous step's marks.
    fn begin_step(&mut self) -> Result<(), DeviceError>;
    /// Take a timestamp now (on the device's stream). Returns the mark's number, counting
    /// from 0 within the step.
    fn mark(&mut self) -> Result<u32, DeviceError>;
    /// Called once when the step ends: wait for the device, then return each mark's time in
    /// nanoseconds since the step's first mark, indexed by mark number.
    fn finish_step(&mut self) -> Result<Vec<u64>, DeviceError>;
    /// A named range opens (for NVTX). Default: nothing.
    fn push_range(&mut self, _name: &'static str) {}
    /// The innermost named range closes (for NVTX). Default: nothing.
    fn pop_range(&mut self) {}
}

/// A device timer driven by a [`ManualClock`]: each mark reads the clock. Tests use it to
/// give device times that differ from host times, as they do when launches are asynchronous.
#[derive(Debug, Clone)]
pub struct ManualDeviceTimer {
    clock: ManualClock,
    marks: Vec<u64>,
    timing: Timing,
}

impl ManualDeviceTimer {
    pub fn new(clock: ManualClock) -> Self {
        Self {
            clock,
            marks: Vec::new(),
            timing: Timing::CudaEvents,
        }
    }
}

impl DeviceTimer for ManualDeviceTimer {
    fn timing(&self) -> Timing {
        self.timing
    }

    fn begin_step(&mut self) -> Result<(), DeviceError> {
        self.marks.clear();
        Ok(())
    }

    fn mark(&mut self) -> Result<u32, DeviceError> {
        self.marks.push(self.clock.now_ns());
        Ok((self.marks.len() - 1) as u32)
    }

    fn finish_step(&mut self) -> Result<Vec<u64>, DeviceError> {
        let first = self.marks.first().copied().unwrap_or(0);
        Ok(self.marks.iter().map(|&t| t - first).collect())
    }
}
