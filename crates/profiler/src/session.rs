//! The recording session: a schedule of steps, each recorded on the calling thread.

use crate::alloc;
use crate::clock::{Clock, MonotonicClock};
use crate::device_timer::{DeviceKind, DeviceTimer, Timing};
use crate::environment::{profiler_features, Environment, Target};
use crate::line::OpName;
use crate::memory::MemRecorder;
use crate::reading::Thresholds;
use crate::recording::{Event, Profile, Step};
use crate::roofline::Ceilings;
use crate::schedule::{Phase, Schedule};
use crate::scope::{self, Recorder};

/// What to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    pub schedule: Schedule,
    /// Keep the input shapes given to [`crate::op_shapes`] (needed to group rows by shape).
    pub record_shapes: bool,
    /// Show achieved GFLOP/s and GB/s columns for ops that declared their work.
    pub with_flops: bool,
    /// The device the program runs on (reported; device timing needs a [`DeviceTimer`]).
    pub device: DeviceKind,
    /// Worker threads the program computes with, for the report; default: available
    /// parallelism.
    pub threads: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            schedule: Schedule::default(),
            record_shapes: false,
            with_flops: false,
            device: DeviceKind::Cpu,
            threads: None,
        }
    }
}

/// Records steps according to a [`Schedule`]. Each step is recorded on the thread that
/// begins it, and must end on that thread.
///
/// ```
/// let mut prof = profiler::Profiler::new(profiler::Options::default());
/// for _ in 0..3 {
///     prof.step(|| {
///         let _m = profiler::module("block");
///         profiler::op!("matmul", 2 + 2)
///     });
/// }
/// let profile = prof.finish();
/// assert_eq!(profile.active_steps(), 3);
/// ```
pub struct Profiler {
    options: Options,
    clock: Option<Box<dyn Clock>>,
    device: Option<Box<dyn DeviceTimer>>,
    /// Number of the next step to begin.
    next: usize,
    /// Phase of the step in progress, if one is.
    current: Option<Phase>,
    steps: Vec<Step>,
    warnings: Vec<String>,
    ceilings: Option<Ceilings>,
    reading_thresholds: Thresholds,
    /// Record memory (`profile_memory`): asked for, and still possible.
    memory: bool,
    /// Whether this profiler holds the process-wide allocation counters.
    memory_claimed: bool,
}

impl Profiler {
    pub fn new(options: Options) -> Self {
        Profiler {
            options,
            clock: Some(Box::new(MonotonicClock::new())),
            device: None,
            next: 0,
            current: None,
            steps: Vec::new(),
            warnings: Vec::new(),
            ceilings: None,
            reading_thresholds: Thresholds::DEFAULT,
            memory: false,
            memory_claimed: false,
        }
    }

    /// Record memory as well (PyTorch's `profile_memory=True`): every row gets what its ranges
    /// allocated and freed, and every step its peak and a timeline of live bytes. Needs the
    /// program to declare [`crate::CountingAlloc`] as its global allocator; without it the
    /// profile says so in a warning and has no memory columns. One profiler in the process
    /// records memory at a time (the counters are process-wide); a second one warns.
    pub fn with_memory(mut self) -> Self {
        if !alloc::is_installed() {
            self.warnings.push(
                "memory was not measured: this program does not declare \
                 `#[global_allocator] static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;`"
                    .to_string(),
            );
            return self;
        }
        self.memory = true;
        self
    }

    /// Whether this profiler records memory.
    pub fn records_memory(&self) -> bool {
        self.memory
    }

    /// Use another host clock (tests inject a [`crate::ManualClock`]).
    pub fn with_clock(mut self, clock: impl Clock + 'static) -> Self {
        self.clock = Some(Box::new(clock));
        self
    }

    /// The machine's measured ceilings (memory bandwidth, peak throughput), measured by the
    /// caller: the profile's rows that declared work get a roofline against them.
    pub fn with_ceilings(mut self, ceilings: Ceilings) -> Self {
        self.ceilings = Some(ceilings);
        self
    }

    /// The thresholds the rows' readings are taken with ([`crate::reading`]); without this
    /// call, [`Thresholds::DEFAULT`]. A program that grades by an answer key passes the key's.
    pub fn with_reading_thresholds(mut self, thresholds: Thresholds) -> Self {
        self.reading_thresholds = thresholds;
        self
    }

    /// Time scopes on a device as well; the profile's device becomes CUDA unless the
    /// timer reports host timing.
    pub fn with_device_timer(self, timer: impl DeviceTimer + 'static) -> Self {
        self.with_boxed_device_timer(Box::new(timer))
    }

    pub fn with_boxed_device_timer(mut self, timer: Box<dyn DeviceTimer>) -> Self {
        if timer.timing() != Timing::Host {
            self.options.device = DeviceKind::Cuda;
        }
        self.device = Some(timer);
        self
    }

    pub fn options(&self) -> &Options {
        &self.options
    }

    /// The phase the next step will be recorded in.
    pub fn next_phase(&self) -> Phase {
        self.options.schedule.phase(self.next)
    }

    /// Whether the schedule has no step left to record.
    pub fn is_done(&self) -> bool {
        self.next_phase() == Phase::Done
    }

    /// Run `f` as one step and return what it returns.
    pub fn step<R>(&mut self, f: impl FnOnce() -> R) -> R {
        self.begin_step();
        let out = f();
        self.end_step();
        out
    }

    /// PyTorch-style: `start()`, then `next_step()` after each iteration, then `stop()`.
    pub fn start(&mut self) {
        self.begin_step();
    }

    /// End the step in progress and begin the next.
    pub fn next_step(&mut self) {
        self.end_step();
        self.begin_step();
    }

    /// End the step in progress (the last one).
    pub fn stop(&mut self) {
        self.end_step();
    }

    /// Begin a step: scopes opened on this thread from now on are recorded if the schedule
    /// says so. A step already in progress is ended first.
    pub fn begin_step(&mut self) {
        if self.current.is_some() {
            self.end_step();
        }
        let phase = self.next_phase();
        self.current = Some(phase);
        if !matches!(phase, Phase::Warmup | Phase::Active) {
            return;
        }
        if self.memory {
            alloc::enable();
            // Before the suspension below, which would keep the mark from being set.
            alloc::mark_compute_thread();
        }
        // The recorder's own buffers are not the program's memory.
        let _uncounted = self.memory.then(alloc::Suspend::new);
        let (Some(clock), device) = (self.clock.take(), self.device.take()) else {
            return;
        };
        let mut recorder = Recorder::new(clock, device, self.options.record_shapes);
        if let Some(d) = recorder.device.as_mut() {
            if let Err(e) = d.begin_step() {
                recorder.device_error = Some(e.0);
            }
        }
        recorder.step_device_start = recorder.device_mark();
        if self.memory && !self.memory_claimed {
            if alloc::claim() {
                self.memory_claimed = true;
            } else {
                self.memory = false;
                self.warnings.push(format!(
                    "step {}: another profiler in this process was recording memory; this profile has no \
                     memory columns (record memory with one profiler at a time)",
                    self.next
                ));
            }
        }
        if self.memory {
            recorder.events.reserve(8192);
        }
        recorder.step_start_ns = recorder.clock.now_ns();
        if self.memory {
            recorder.memory = Some(MemRecorder::start(recorder.step_start_ns));
        }
        if let Err(refused) = scope::install(recorder) {
            self.warnings.push(format!(
                "step {}: another profiler was already recording on this thread; \
                 this step was not recorded (use one profiler per thread)",
                self.next
            ));
            self.clock = Some(refused.clock);
            self.device = refused.device;
            self.current = Some(Phase::Wait);
        }
    }

    /// End the step in progress, keeping its events if it was active.
    pub fn end_step(&mut self) {
        let Some(phase) = self.current.take() else {
            return;
        };
        let number = self.next;
        self.next += 1;
        if !matches!(phase, Phase::Warmup | Phase::Active) {
            return;
        }
        let Some(mut recorder) = scope::uninstall() else {
            return;
        };
        let _uncounted = recorder.memory.is_some().then(alloc::Suspend::new);
        recorder.close_all();
        let device_end = recorder.device_mark();
        let end_ns = recorder.clock.now_ns();
        let memory = recorder.memory.take().map(|mut m| {
            let during = None;
            m.boundary(end_ns, during, None);
            m.finish()
        });
        let marks = match (recorder.device.as_mut(), &recorder.device_error) {
            (Some(d), None) => match d.finish_step() {
                Ok(m) => Some(m),
                Err(e) => {
                    recorder.device_error = Some(e.0);
                    None
                }
            },
            _ => None,
        };
        if let Some(err) = &recorder.device_error {
            self.warnings.push(format!(
                "step {number}: device timing failed ({err}); this step has no device times"
            ));
        }
        if phase == Phase::Active {
            let mut step = build_step(number, &recorder, end_ns, device_end, marks.as_deref());
            step.memory = memory;
            self.steps.push(step);
        }
        self.clock = Some(recorder.clock);
        self.device = recorder.device;
    }

    /// Stop recording (ending any step in progress) and return the active steps.
    pub fn finish(mut self) -> Profile {
        self.end_step();
        if std::mem::take(&mut self.memory_claimed) {
            alloc::release();
        }
        let timing = self
            .device
            .as_ref()
            .map(|d| d.timing())
            .unwrap_or(Timing::Host);
        let target = Target {
            device: Some(self.options.device.as_str().to_string()),
            cargo_features: profiler_features(),
            dtype: None,
        };
        let captured = Environment::capture(target);
        let threads = self.options.threads.unwrap_or(captured.threads);
        Profile {
            steps: std::mem::take(&mut self.steps),
            device: self.options.device,
            timing,
            record_shapes: self.options.record_shapes,
            with_flops: self.options.with_flops,
            environment: Environment {
                threads,
                timing,
                ..captured
            },
            warnings: std::mem::take(&mut self.warnings),
            ceilings: self.ceilings.take(),
            reading_thresholds: self.reading_thresholds,
        }
    }
}

impl Drop for Profiler {
    /// A profiler dropped mid-step must not leave this thread recording.
    fn drop(&mut self) {
        if matches!(self.current, Some(Phase::Warmup | Phase::Active)) {
            scope::uninstall();
        }
        if self.memory_claimed {
            alloc::release();
        }
    }
}

fn build_step(
    number: usize,
    r: &Recorder,
    end_ns: u64,
    device_end: Option<u32>,
    marks: Option<&[u64]>,
) -> Step {
    let at = |m: Option<u32>| -> Option<u64> { marks?.get(m? as usize).copied() };
    let device_start = at(r.step_device_start);
    let device_ns = match (device_start, at(device_end)) {
        (Some(s), Some(e)) => Some(e.saturating_sub(s)),
        _ => None,
    };
    let events = r
        .events
        .iter()
        .map(|e| Event {
            name: e.name,
            kind: e.kind,
            line: OpName {
                name: e.name,
                line: e.line,
            }
            .line(),
            parent: e.parent.map(|p| p as usize),
            start_ns: e.start_ns,
            end_ns: e.end_ns,
            shapes: e.shapes.map(|range| r.shapes_text(range)),
            flops: e.flops,
            bytes: e.bytes,
            kernel: e.kernel,
            dtype: e.dtype,
            device_ns: match (device_start, at(e.device_start), at(e.device_end)) {
                (Some(base), Some(s), Some(t)) if device_ns.is_some() => {
                    Some((s.saturating_sub(base), t.saturating_sub(base)))
                }
                _ => None,
            },
            memory: match (e.mem_begin, e.mem_end) {
                (Some(b), Some(t)) => Some(t.since(b)),
                _ => None,
            },
        })
        .collect();
    Step {
        number,
        start_ns: r.step_start_ns,
        end_ns,
        device_ns: device_ns.filter(|_| r.device_error.is_none()),
        events,
        memory: None,
    }
}
