//! A finished recording: the active steps, each a tree of timed ranges. Everything the
//! profiler prints or writes (table, report, trace, flame graph) is computed from this.

use crate::alloc::Totals;
use crate::device_timer::{DeviceKind, Timing};
use crate::environment::Environment;
use crate::line::Line;
use crate::memory::StepMemory;
use crate::reading::Thresholds;
use crate::roofline::Ceilings;
use crate::scope::Kind;

/// One closed range in a step.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub name: &'static str,
    pub kind: Kind,
    /// The budget line its row goes on: the one its opener declared, else
    /// [`Line::of_undeclared`]'s for its name.
    pub line: Line,
    /// Index of the enclosing event in [`Step::events`]; `None` when the step is the parent.
    pub parent: Option<usize>,
    /// Host clock, nanoseconds (same origin for every step of a profile).
    pub start_ns: u64,
    pub end_ns: u64,
    /// `[[1, 8, 768], …]` when shapes were recorded.
    pub shapes: Option<String>,
    pub flops: Option<u64>,
    pub bytes: Option<u64>,
    /// The kernel label given with [`crate::Scope::with_kernel`].
    pub kernel: Option<&'static str>,
    /// The type given with [`crate::Scope::with_dtype`].
    pub dtype: Option<&'static str>,
    /// Device start and end, nanoseconds since the step's device start, when device timing
    /// was on and worked.
    pub device_ns: Option<(u64, u64)>,
    /// What the compute threads allocated and freed between the range's open and close
    /// (children included), when memory was recorded.
    pub memory: Option<Totals>,
}

impl Event {
    pub fn host_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }

    pub fn device_duration_ns(&self) -> Option<u64> {
        self.device_ns.map(|(s, e)| e.saturating_sub(s))
    }
}

/// One profiled step (typically one forward pass): the root of its events.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The step's number in the whole run (wait and warm-up steps included), as in
    /// PyTorch's `ProfilerStep#N`.
    pub number: usize,
    pub start_ns: u64,
    pub end_ns: u64,
    /// Device time from the step's first to its last mark, when device timing worked.
    pub device_ns: Option<u64>,
    /// In the order the ranges opened; a parent always comes before its children.
    pub events: Vec<Event>,
    /// Allocations, the peak and the live-bytes samples, when memory was recorded.
    pub memory: Option<StepMemory>,
}

impl Step {
    pub fn wall_ns(&self) -> u64 {
        self.end_ns - self.start_ns
    }
}

/// Everything recorded over a profiler's active steps.
#[derive(Debug, Clone)]
pub struct Profile {
    pub steps: Vec<Step>,
    pub device: DeviceKind,
    pub timing: Timing,
    pub record_shapes: bool,
    pub with_flops: bool,
    pub environment: Environment,
    /// Things the reader must know (device timing failures, nested profilers); printed
    /// under the table.
    pub warnings: Vec<String>,
    /// The machine's measured ceilings, handed in by the caller; with them every row that
    /// declared its work gets a roofline.
    pub ceilings: Option<Ceilings>,
    /// The thresholds each row's [`crate::Reading`] is taken with (the caller's; by default
    /// [`Thresholds::DEFAULT`]).
    pub reading_thresholds: Thresholds,
}

impl Profile {
    /// Attach the machine's measured ceilings (the same as [`crate::Profiler::with_ceilings`],
    /// for a profile already finished).
    pub fn set_ceilings(&mut self, ceilings: Ceilings) {
        self.ceilings = Some(ceilings);
    }

    /// Read the rows with these thresholds (the same as
    /// [`crate::Profiler::with_reading_thresholds`], for a profile already finished).
    pub fn set_reading_thresholds(&mut self, thresholds: Thresholds) {
        self.reading_thresholds = thresholds;
    }

    /// Number of active steps the profile holds.
    pub fn active_steps(&self) -> usize {
        self.steps.len()
    }

    /// Sum of the active steps' wall times.
    pub fn wall_ns(&self) -> u64 {
        self.steps.iter().map(Step::wall_ns).sum()
    }

    /// Whether every step recorded memory.
    pub fn has_memory(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| s.memory.is_some())
    }

    /// The most bytes live at once over the active steps, the step it fell in and the name of
    /// the range running then (`ProfilerStep*` outside every range).
    pub fn memory_peak(&self) -> Option<(i64, usize, &'static str)> {
        self.steps
            .iter()
            .filter_map(|s| {
                let m = s.memory.as_ref()?;
                let name = m
                    .peak_during
                    .and_then(|i| s.events.get(i))
                    .map_or(formats::report::STEP_ROW, |e| e.name);
                Some((m.peak_bytes, s.number, name))
            })
            .max_by_key(|(bytes, number, _)| (*bytes, std::cmp::Reverse(*number)))
    }

    /// Whether every step has device times.
    pub fn has_device_times(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| s.device_ns.is_some())
    }
}
