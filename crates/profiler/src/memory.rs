//! Memory, the profile's third column (PyTorch's `profile_memory=True`): what the recorder
//! reads from the counting allocator ([`crate::CountingAlloc`]) at every scope boundary, and
//! what a step keeps of it.
//!
//! An event's memory is the compute threads' counters at its close minus those at its open
//! (bytes allocated, bytes freed, allocations): PyTorch's `CPU Mem` when taken net. Its self
//! memory is that minus its direct children's, as self time is (crate::aggregate). Every
//! boundary is also a sample of the live bytes per [`Category`] for the memory timeline, with
//! the peak reached since the previous boundary and the scope that was innermost meanwhile.

use crate::alloc::{self, Category, OpMark, Totals};

/// One sample of the live bytes, taken at a scope boundary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemorySample {
    /// Host clock, nanoseconds (the events' clock).
    pub t_ns: u64,
    /// Live bytes per category, in [`Category::ALL`]'s order.
    pub by_category: [i64; 4],
    /// Live bytes in all, read from its own counter (the categories add up to it).
    pub live: i64,
    /// The most live bytes since the previous sample.
    pub peak_since_previous: i64,
    /// The event that was innermost since the previous sample (index in the step's events),
    /// `None`: the step itself.
    pub during: Option<usize>,
}

impl MemorySample {
    pub fn bytes(&self, category: Category) -> i64 {
        self.by_category[Category::ALL
            .iter()
            .position(|c| *c == category)
            .unwrap_or(0)]
    }
}

/// What a step recorded of memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepMemory {
    /// The compute threads' allocations over the whole step.
    pub totals: Totals,
    /// Other threads' allocations over the step (an HTTP runtime, a logger): in no row.
    pub other_threads: Totals,
    /// The most bytes live at once during the step (every counted block: weights and caches
    /// allocated earlier included).
    pub peak_bytes: i64,
    /// The event that was running when the peak was reached (`None`: outside every scope).
    pub peak_during: Option<usize>,
    /// When: the end of the interval the peak fell in (host clock, ns).
    pub peak_ns: u64,
    /// Live bytes at every scope boundary, the step's start and end included.
    pub samples: Vec<MemorySample>,
}

/// The recorder's memory state during one step.
pub(crate) struct MemRecorder {
    pub samples: Vec<MemorySample>,
    pub step_begin: Totals,
    pub other_begin: Totals,
    pub peak: i64,
    pub peak_during: Option<u32>,
    pub peak_ns: u64,
    /// One entry per open op scope, innermost last: what it set aside.
    pub op_marks: Vec<(u32, OpMark)>,
}

impl MemRecorder {
    /// At the step's start, `now_ns` on the step's clock.
    pub fn start(now_ns: u64) -> Self {
        let _ = alloc::take_peak();
        let live = alloc::live();
        let mut samples = Vec::with_capacity(8192);
        samples.push(MemorySample {
            t_ns: now_ns,
            by_category: live.by_category,
            live: live.total,
            peak_since_previous: live.total,
            during: None,
        });
        MemRecorder {
            samples,
            step_begin: alloc::compute_totals(),
            other_begin: alloc::other_totals(),
            peak: live.total,
            peak_during: None,
            peak_ns: now_ns,
            op_marks: Vec::with_capacity(32),
        }
    }

    /// A boundary at `now_ns`; `during` was the innermost open event until now, and
    /// `closing` the mark of the op that closes here, if one does: then two samples at the
    /// same time, its temporaries (the output it built included) just before it closes, and
    /// after, its outputs as activations. Returns the compute threads' counters.
    pub fn boundary(
        &mut self,
        now_ns: u64,
        during: Option<u32>,
        closing: Option<OpMark>,
    ) -> Totals {
        let totals = alloc::compute_totals();
        let peak = alloc::take_peak();
        let live = alloc::live();
        if peak > self.peak {
            self.peak = peak;
            self.peak_during = during;
            self.peak_ns = now_ns;
        }
        let during = during.map(|d| d as usize);
        self.samples.push(MemorySample {
            t_ns: now_ns,
            by_category: live.by_category,
            live: live.total,
            peak_since_previous: peak,
            during,
        });
        if let Some(mark) = closing {
            alloc::op_closes(mark);
            let live = alloc::live();
            self.samples.push(MemorySample {
                t_ns: now_ns,
                by_category: live.by_category,
                live: live.total,
                peak_since_previous: live.total,
                during,
            });
        }
        totals
    }

    /// The step's memory, at its end (after the last boundary).
    pub fn finish(self) -> StepMemory {
        StepMemory {
            totals: alloc::compute_totals().since(self.step_begin),
            other_threads: alloc::other_totals().since(self.other_begin),
            peak_bytes: self.peak,
            peak_during: self.peak_during.map(|p| p as usize),
            peak_ns: self.peak_ns,
            samples: self.samples,
        }
    }
}

/// Bytes the way PyTorch's table prints them: `b` below a KiB, else two decimals in `Kb`,
/// `Mb` or `Gb` (powers of 1024), negative when more was freed than allocated.
pub fn format_bytes(bytes: i64) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    let a = b.abs();
    if a >= KB * KB * KB {
        format!("{:.2} Gb", b / (KB * KB * KB))
    } else if a >= KB * KB {
        format!("{:.2} Mb", b / (KB * KB))
    } else if a >= KB {
        format!("{:.2} Kb", b / KB)
    } else {
        format!("{bytes} b")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_print_like_pytorch() {
        assert_eq!(format_bytes(0), "0 b");
        assert_eq!(format_bytes(1023), "1023 b");
        assert_eq!(format_bytes(-1536), "-1.50 Kb");
        assert_eq!(format_bytes(3 * 1024 * 1024), "3.00 Mb");
        assert_eq!(format_bytes(5 << 30), "5.00 Gb");
    }
}
