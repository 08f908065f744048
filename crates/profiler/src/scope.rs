//! Scopes: the cheap RAII ranges that instrumented code opens, and the per-thread recorder
//! they write into while a profiler step is recording.
//!
//! When nothing records on this thread, making and dropping a [`Scope`] reads one
//! thread-local flag and nothing else: no clock read, no allocation, no lock.

use std::cell::{Cell, RefCell};
use std::fmt::Write as _;
use std::marker::PhantomData;

use serde::{Deserialize, Serialize};

use crate::alloc::{self, Totals};
use crate::clock::Clock;
use crate::device_timer::DeviceTimer;
use crate::line::{Line, OpName};
use crate::memory::MemRecorder;

/// What a scope stands for: an op (matmul, softmax…) or a module (block, attn, mlp).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    Op,
    Module,
}

thread_local! {
    /// Fast path flag: true only while a recorder is installed on this thread.
    static RECORDING: Cell<bool> = const { Cell::new(false) };
    static RECORDER: RefCell<Option<Recorder>> = const { RefCell::new(None) };
    /// Bumped at every installed step so that a scope opened in one step and dropped in a
    /// later one cannot close an unrelated event.
    static GENERATION: Cell<u32> = const { Cell::new(0) };
}

const INACTIVE: u32 = u32::MAX;

/// An open range; it closes when dropped. Scopes must be dropped on the thread that opened
/// them (the type is not `Send`).
#[must_use = "a scope measures until it is dropped; bind it with `let _s = ...`"]
pub struct Scope {
    index: u32,
    generation: u32,
    _not_send: PhantomData<*const ()>,
}

impl Scope {
    #[inline]
    fn inactive() -> Self {
        Scope {
            index: INACTIVE,
            generation: 0,
            _not_send: PhantomData,
        }
    }

    /// Whether this scope is being recorded.
    #[inline]
    pub fn is_active(&self) -> bool {
        self.index != INACTIVE
    }

    /// Attach the work this range does: floating-point operations and bytes moved to and
    /// from memory. The table turns them into achieved GFLOP/s and GB/s.
    #[inline]
    pub fn with_work(self, flops: u64, bytes: u64) -> Self {
        if self.is_active() {
            with_recorder(self.generation, |r| {
                let e = &mut r.events[self.index as usize];
                e.flops = Some(flops);
                e.bytes = Some(bytes);
            });
        }
        self
    }

    /// Attach the label of the kernel that ran this range (`"packed-avx512"`, `"cublas"`,
    /// `"candle"`…; the caller's own names). The report shows it per row, so a reader can
    /// tell which implementation a row's time and rates belong to.
    #[inline]
    pub fn with_kernel(self, kernel: &'static str) -> Self {
        if self.is_active() {
            with_recorder(self.generation, |r| {
                r.events[self.index as usize].kernel = Some(kernel)
            });
        }
        self
    }

    /// Attach the type of the values the op streams (`"f32"`, `"bf16"`, `"f16"`: a dense
    /// layer's weights as stored, else its input), so that a row's bytes and rates can be read
    /// against its width: the same product moves half the bytes over bf16 weights.
    #[inline]
    pub fn with_dtype(self, dtype: &'static str) -> Self {
        if self.is_active() {
            with_recorder(self.generation, |r| {
                r.events[self.index as usize].dtype = Some(dtype)
            });
        }
        self
    }
}

impl Drop for Scope {
    #[inline]
    fn drop(&mut self) {
        if self.index != INACTIVE {
            end(self.index, self.generation);
        }
    }
}

/// Whether a profiler is recording on this thread.
#[inline]
pub fn is_recording() -> bool {
    RECORDING.with(Cell::get)
}

/// Open an op-level range: an [`OpName`] (its name and budget line) or a name alone, whose
/// row's line is then [`Line::of_undeclared`]'s.
#[inline]
pub fn op(op: impl Into<OpName>) -> Scope {
    if !is_recording() {
        return Scope::inactive();
    }
    let op = op.into();
    begin(op.name, Kind::Op, op.line, None)
}

/// Open an op-level range and record its input shapes (when the profiler records shapes).
#[inline]
pub fn op_shapes(op: impl Into<OpName>, shapes: &[&[usize]]) -> Scope {
    if !is_recording() {
        return Scope::inactive();
    }
    let op = op.into();
    begin(op.name, Kind::Op, op.line, Some(shapes))
}

/// Open a module-level range; its row is on the "everything else" line.
#[inline]
pub fn module(name: &'static str) -> Scope {
    if !is_recording() {
        return Scope::inactive();
    }
    begin(name, Kind::Module, Some(Line::Other), None)
}

/// Open a range of either kind for a span known by name alone; used by the tracing layer.
pub(crate) fn scope_of_kind(name: &'static str, kind: Kind) -> Scope {
    match kind {
        Kind::Op => op(name),
        Kind::Module => module(name),
    }
}

/// Format shapes the way PyTorch prints `Input Shapes`: `[[1, 8, 768], [768, 2304]]`.
pub fn format_shapes(shapes: &[&[usize]]) -> String {
    let mut s = String::from("[");
    for (i, dims) in shapes.iter().enumerate() {
        if i > 0 {
            s.push_str(", ");
        }
        s.push('[');
        for (j, d) in dims.iter().enumerate() {
            if j > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{d}");
        }
        s.push(']');
    }
    s.push(']');
    s
}

/// One recorded range, as the recorder keeps it during a step.
#[derive(Debug, Clone)]
pub(crate) struct RawEvent {
    pub name: &'static str,
    pub kind: Kind,
    /// The budget line the opener declared; `None`: by name alone.
    pub line: Option<Line>,
    /// Index of the enclosing event in the step, `None` for top-level ranges.
    pub parent: Option<u32>,
    pub start_ns: u64,
    /// Equal to `start_ns` until the scope closes.
    pub end_ns: u64,
    pub closed: bool,
    /// Range of the recorder's shape arena holding this event's input shapes.
    pub shapes: Option<(u32, u32)>,
    pub flops: Option<u64>,
    pub bytes: Option<u64>,
    pub kernel: Option<&'static str>,
    pub dtype: Option<&'static str>,
    pub device_start: Option<u32>,
    pub device_end: Option<u32>,
    /// The compute threads' allocation counters at the open and at the close, when memory
    /// is recorded.
    pub mem_begin: Option<Totals>,
    pub mem_end: Option<Totals>,
}

/// The per-thread state of one recording step.
pub(crate) struct Recorder {
    pub generation: u32,
    pub clock: Box<dyn Clock>,
    pub device: Option<Box<dyn DeviceTimer>>,
    pub record_shapes: bool,
    pub events: Vec<RawEvent>,
    /// Input shapes of every event, flattened as `[count, len, dims…, len, dims…]`:
    /// copying numbers here is cheaper than formatting text while the step runs.
    pub shape_arena: Vec<usize>,
    pub open: Vec<u32>,
    pub step_start_ns: u64,
    pub step_device_start: Option<u32>,
    /// The first device timing failure of the step; device marks stop after it.
    pub device_error: Option<String>,
    /// Memory counters and samples, when the step records memory.
    pub memory: Option<MemRecorder>,
}

impl Recorder {
    pub fn new(
        clock: Box<dyn Clock>,
        device: Option<Box<dyn DeviceTimer>>,
        record_shapes: bool,
    ) -> Self {
        Recorder {
            generation: 0,
            clock,
            device,
            record_shapes,
            events: Vec::with_capacity(1024),
            shape_arena: Vec::new(),
            open: Vec::with_capacity(32),
            step_start_ns: 0,
            step_device_start: None,
            device_error: None,
            memory: None,
        }
    }

    /// Take a device mark unless device timing is off or has already failed this step.
    pub fn device_mark(&mut self) -> Option<u32> {
        if self.device_error.is_some() {
            return None;
        }
        let device = self.device.as_mut()?;
        match device.mark() {
            Ok(m) => Some(m),
            Err(e) => {
                self.device_error = Some(e.0);
                None
            }
        }
    }

    fn begin(
        &mut self,
        name: &'static str,
        kind: Kind,
        line: Option<Line>,
        shapes: Option<&[&[usize]]>,
    ) -> u32 {
        if let Some(d) = self.device.as_mut() {
            d.push_range(name);
        }
        let _uncounted = self.memory.is_some().then(alloc::Suspend::new);
        let device_start = self.device_mark();
        let start_ns = self.clock.now_ns();
        let index = self.events.len() as u32;
        let shapes = match shapes {
            Some(s) if self.record_shapes => Some(self.store_shapes(s)),
            _ => None,
        };
        let during = self.open.last().copied();
        let mem_begin = self.memory.as_mut().map(|m| {
            let totals = m.boundary(start_ns, during, None);
            if kind == Kind::Op {
                m.op_marks.push((index, alloc::op_opens()));
            }
            totals
        });
        self.events.push(RawEvent {
            name,
            kind,
            line,
            parent: self.open.last().copied(),
            start_ns,
            end_ns: start_ns,
            closed: false,
            shapes,
            flops: None,
            bytes: None,
            kernel: None,
            dtype: None,
            device_start,
            device_end: None,
            mem_begin,
            mem_end: None,
        });
        self.open.push(index);
        index
    }

    fn store_shapes(&mut self, shapes: &[&[usize]]) -> (u32, u32) {
        let start = self.shape_arena.len();
        self.shape_arena.push(shapes.len());
        for dims in shapes {
            self.shape_arena.push(dims.len());
            self.shape_arena.extend_from_slice(dims);
        }
        (start as u32, (self.shape_arena.len() - start) as u32)
    }

    /// The shapes stored by `store_shapes`, formatted like PyTorch's.
    pub fn shapes_text(&self, (start, len): (u32, u32)) -> String {
        let flat = &self.shape_arena[start as usize..(start + len) as usize];
        let mut dims: Vec<&[usize]> = Vec::with_capacity(flat.first().copied().unwrap_or(0));
        let mut at = 1;
        while at < flat.len() {
            let n = flat[at];
            dims.push(&flat[at + 1..at + 1 + n]);
            at += 1 + n;
        }
        format_shapes(&dims)
    }

    /// Close `index`. Scopes normally close innermost first; if one was leaked past its
    /// children (e.g. moved out and dropped late), the children are closed at the same time.
    fn end(&mut self, index: u32) {
        if !self.open.contains(&index) {
            return;
        }
        let _uncounted = self.memory.is_some().then(alloc::Suspend::new);
        while let Some(top) = self.open.pop() {
            let device_end = self.device_mark();
            let end_ns = self.clock.now_ns();
            let mem_end = self.memory.as_mut().map(|m| {
                let closing = match m.op_marks.last() {
                    Some(&(i, mark)) if i == top => {
                        m.op_marks.pop();
                        Some(mark)
                    }
                    _ => None,
                };
                m.boundary(end_ns, Some(top), closing)
            });
            if let Some(d) = self.device.as_mut() {
                d.pop_range();
            }
            let e = &mut self.events[top as usize];
            e.end_ns = end_ns;
            e.device_end = device_end;
            e.mem_end = mem_end;
            e.closed = true;
            if top == index {
                break;
            }
        }
    }

    /// Close every scope still open (at the end of a step).
    pub fn close_all(&mut self) {
        if let Some(&bottom) = self.open.first() {
            self.end(bottom);
        }
    }
}

#[cold]
#[inline(never)]
fn begin(name: &'static str, kind: Kind, line: Option<Line>, shapes: Option<&[&[usize]]>) -> Scope {
    RECORDER.with(|cell| {
        // A re-entrant call (a device timer that itself opens scopes) is simply not recorded.
        let Ok(mut slot) = cell.try_borrow_mut() else {
            return Scope::inactive();
        };
        match slot.as_mut() {
            Some(r) => Scope {
                index: r.begin(name, kind, line, shapes),
                generation: r.generation,
                _not_send: PhantomData,
            },
            None => Scope::inactive(),
        }
    })
}

#[cold]
#[inline(never)]
fn end(index: u32, generation: u32) {
    with_recorder(generation, |r| r.end(index));
}

fn with_recorder(generation: u32, f: impl FnOnce(&mut Recorder)) {
    RECORDER.with(|cell| {
        if let Ok(mut slot) = cell.try_borrow_mut() {
            if let Some(r) = slot.as_mut() {
                if r.generation == generation {
                    f(r);
                }
            }
        }
    });
}

/// Install a recorder on this thread. Fails (returning it) if one is already installed.
pub(crate) fn install(mut recorder: Recorder) -> Result<(), Box<Recorder>> {
    RECORDER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_some() {
            return Err(Box::new(recorder));
        }
        let generation = GENERATION.with(|g| {
            let next = g.get().wrapping_add(1) % INACTIVE;
            g.set(next);
            next
        });
        recorder.generation = generation;
        *slot = Some(recorder);
        RECORDING.with(|r| r.set(true));
        Ok(())
    })
}

/// Remove this thread's recorder.
pub(crate) fn uninstall() -> Option<Recorder> {
    RECORDER.with(|cell| {
        RECORDING.with(|r| r.set(false));
        cell.borrow_mut().take()
    })
}

/// Time an expression as an op: `op!("softmax", softmax(&x))`.
#[macro_export]
macro_rules! op {
    ($name:expr, $e:expr) => {{
        let _s = $crate::op($name);
        $e
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_print_like_pytorch() {
        assert_eq!(
            format_shapes(&[&[1, 8, 768], &[768, 2304]]),
            "[[1, 8, 768], [768, 2304]]"
        );
        assert_eq!(format_shapes(&[&[], &[3]]), "[[], [3]]");
        assert_eq!(format_shapes(&[]), "[]");
    }

    #[test]
    fn scopes_are_inactive_without_a_profiler() {
        assert!(!is_recording());
        let s = op("matmul");
        assert!(!s.is_active());
        let s = s.with_work(10, 20).with_kernel("candle");
        assert!(!s.is_active());
        assert_eq!(op!("x", 1 + 1), 2);
    }
}
