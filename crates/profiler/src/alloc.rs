//! The counting global allocator behind the memory columns (`profile_memory`).
//!
//! A profiling binary declares it once:
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: profiler::CountingAlloc = profiler::CountingAlloc;
//! ```
//!
//! It wraps the system allocator. While counting is off (the default, and whenever no profiler
//! records memory) an allocation costs one relaxed load more than the system's. While it is on,
//! every allocation and free adds to a few process-wide relaxed atomics, split two ways:
//!
//! - **compute threads**: the thread a profiler records on, every thread of the compute pool
//!   (rayon's: the engine's kernels and candle's run there), and a thread that opened a
//!   [`category`] scope. The recorder reads their counters at every scope boundary, so what
//!   they allocate while a scope is the innermost open one is that scope's self memory, pool
//!   threads included (an op's parallel loop has finished when its scope closes);
//! - **other threads** (an HTTP runtime, a logger): counted apart, never in an op's row.
//!
//! Each block carries a small header (16 bytes, or its alignment when larger) that records
//! the category it was allocated in, so that its free takes the bytes off the right one: the
//! memory timeline's weights, KV cache, activations and temporaries ([`Category`]).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicU8, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

/// The global allocator that counts. See the module documentation.
pub struct CountingAlloc;

/// Where a block's live bytes go in the memory timeline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    /// Allocated while a [`category`] scope for weights was open (loading a checkpoint): what
    /// the load left live.
    Weights,
    /// Allocated while a [`category`] scope for the KV cache was open (a cache allocated at
    /// its capacity when a sequence starts).
    KvCache,
    /// Allocated outside both and outside every op, or allocated inside an op that has since
    /// closed while the block lives on: op outputs.
    Activations,
    /// Allocated inside the op still running: its workspace and the output it is building.
    /// When the op closes, what it allocated and did not free becomes activations.
    Temporaries,
}

impl Category {
    /// In the order the timeline stacks them, bottom first.
    pub const ALL: [Category; 4] = [
        Category::Weights,
        Category::KvCache,
        Category::Activations,
        Category::Temporaries,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Category::Weights => "weights",
            Category::KvCache => "KV cache",
            Category::Activations => "activations",
            Category::Temporaries => "temporaries",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// Process-wide switch: counting is on.
static ENABLED: AtomicBool = AtomicBool::new(false);
/// Set by the first counted allocation: the program declared [`CountingAlloc`].
static SEEN: AtomicBool = AtomicBool::new(false);
/// The category scope open (0 none, else `TAG_WEIGHTS` or `TAG_KV`).
static CATEGORY: AtomicU8 = AtomicU8::new(0);
/// The innermost op being recorded, as a sequence number (0: none).
static CURRENT_OP: AtomicU64 = AtomicU64::new(0);

/// Allocation counters of one kind of thread.
struct Counters {
    alloc_bytes: AtomicU64,
    free_bytes: AtomicU64,
    allocs: AtomicU64,
}

impl Counters {
    const fn new() -> Self {
        Counters {
            alloc_bytes: AtomicU64::new(0),
            free_bytes: AtomicU64::new(0),
            allocs: AtomicU64::new(0),
        }
    }

    fn read(&self) -> Totals {
        Totals {
            alloc_bytes: self.alloc_bytes.load(Relaxed),
            free_bytes: self.free_bytes.load(Relaxed),
            allocs: self.allocs.load(Relaxed),
        }
    }
}

static COMPUTE: Counters = Counters::new();
static OTHER: Counters = Counters::new();
/// Live bytes of counted blocks, per [`Category`], and all together.
static LIVE: [AtomicI64; 4] = [
    AtomicI64::new(0),
    AtomicI64::new(0),
    AtomicI64::new(0),
    AtomicI64::new(0),
];
static LIVE_TOTAL: AtomicI64 = AtomicI64::new(0);
/// The most live bytes since the recorder last reset it.
static PEAK: AtomicI64 = AtomicI64::new(0);

const TAG_UNCOUNTED: u64 = 0;
const TAG_WEIGHTS: u8 = 1;
const TAG_KV: u8 = 2;
const TAG_COMPUTED: u8 = 3;

/// What a thread's allocations count as.
const ROLE_UNKNOWN: u8 = 0;
const ROLE_COMPUTE: u8 = 1;
/// The recorder's own bookkeeping: not counted at all.
const ROLE_SUSPENDED: u8 = 2;

thread_local! {
    static ROLE: Cell<u8> = const { Cell::new(ROLE_UNKNOWN) };
}

/// Allocation counters read at one moment: bytes allocated, bytes freed and allocations made
/// since counting began.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Totals {
    pub alloc_bytes: u64,
    pub free_bytes: u64,
    pub allocs: u64,
}

impl Totals {
    /// What happened between `earlier` and `self`.
    pub fn since(self, earlier: Totals) -> Totals {
        Totals {
            alloc_bytes: self.alloc_bytes.wrapping_sub(earlier.alloc_bytes),
            free_bytes: self.free_bytes.wrapping_sub(earlier.free_bytes),
            allocs: self.allocs.wrapping_sub(earlier.allocs),
        }
    }

    /// Bytes allocated minus bytes freed: PyTorch's `CPU Mem`.
    pub fn net(self) -> i64 {
        self.alloc_bytes as i64 - self.free_bytes as i64
    }
}

/// Live bytes per category at one moment (indexed like [`Category::ALL`]) and in all.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Live {
    pub by_category: [i64; 4],
    pub total: i64,
}

#[inline]
fn is_compute_thread() -> bool {
    match ROLE.with(Cell::get) {
        ROLE_COMPUTE => true,
        ROLE_SUSPENDED => false,
        _ => rayon::current_thread_index().is_some(),
    }
}

#[inline]
fn suspended() -> bool {
    ROLE.with(Cell::get) == ROLE_SUSPENDED
}

/// Count an allocation of `size` bytes; returns the block's tag.
#[inline]
fn on_alloc(size: usize) -> u64 {
    if !ENABLED.load(Relaxed) || suspended() {
        return TAG_UNCOUNTED;
    }
    if !SEEN.load(Relaxed) {
        SEEN.store(true, Relaxed);
    }
    let size64 = size as u64;
    if !is_compute_thread() {
        OTHER.alloc_bytes.fetch_add(size64, Relaxed);
        OTHER.allocs.fetch_add(1, Relaxed);
        return TAG_UNCOUNTED;
    }
    COMPUTE.alloc_bytes.fetch_add(size64, Relaxed);
    COMPUTE.allocs.fetch_add(1, Relaxed);
    let (tag, category) = match CATEGORY.load(Relaxed) {
        TAG_WEIGHTS => (TAG_WEIGHTS as u64, Category::Weights),
        TAG_KV => (TAG_KV as u64, Category::KvCache),
        _ => match CURRENT_OP.load(Relaxed) {
            0 => (TAG_COMPUTED as u64, Category::Activations),
            op => (TAG_COMPUTED as u64 | op << 8, Category::Temporaries),
        },
    };
    let size = size as i64;
    LIVE[category.index()].fetch_add(size, Relaxed);
    let live = LIVE_TOTAL.fetch_add(size, Relaxed) + size;
    if live > PEAK.load(Relaxed) {
        PEAK.fetch_max(live, Relaxed);
    }
    tag
}

/// Count a free of `size` bytes of a block tagged `tag`.
#[inline]
fn on_free(size: usize, tag: u64) {
    if !ENABLED.load(Relaxed) || suspended() {
        // A block counted while counting was on still leaves the live figures.
        if tag != TAG_UNCOUNTED {
            take_live(size, tag);
        }
        return;
    }
    let counters = if is_compute_thread() {
        &COMPUTE
    } else {
        &OTHER
    };
    counters.free_bytes.fetch_add(size as u64, Relaxed);
    if tag != TAG_UNCOUNTED {
        take_live(size, tag);
    }
}

#[inline]
fn take_live(size: usize, tag: u64) {
    let category = match (tag & 0xff) as u8 {
        TAG_WEIGHTS => Category::Weights,
        TAG_KV => Category::KvCache,
        _ if tag >> 8 != 0 && tag >> 8 == CURRENT_OP.load(Relaxed) => Category::Temporaries,
        _ => Category::Activations,
    };
    let size = size as i64;
    LIVE[category.index()].fetch_sub(size, Relaxed);
    LIVE_TOTAL.fetch_sub(size, Relaxed);
}

/// Bytes in front of a block of alignment `align`: room for the tag, keeping the alignment.
#[inline]
fn header(align: usize) -> usize {
    align.max(16)
}

#[inline]
fn with_header(layout: Layout) -> Option<(Layout, usize)> {
    let h = header(layout.align());
    let size = layout.size().checked_add(h)?;
    Layout::from_size_align(size, h).ok().map(|l| (l, h))
}

/// Write `tag` in the 8 bytes right before `ptr`.
///
/// # Safety
/// `ptr` is `h` bytes into a block from [`with_header`]'s layout (`h` >= 16, `ptr` aligned to
/// 16), so the 8 bytes before it are inside the block and aligned for a `u64`.
#[inline]
unsafe fn write_tag(ptr: *mut u8, tag: u64) {
    // SAFETY: see the function's contract.
    unsafe { (ptr as *mut u64).sub(1).write(tag) }
}

/// Read the tag [`write_tag`] wrote.
///
/// # Safety
/// As for [`write_tag`], on a block it tagged.
#[inline]
unsafe fn read_tag(ptr: *mut u8) -> u64 {
    // SAFETY: see the function's contract.
    unsafe { (ptr as *const u64).sub(1).read() }
}

/// A block for `layout` from `system` (the system allocator's `alloc` or `alloc_zeroed`), with
/// room for the header, counted and tagged; null when the layout has no header layout or the
/// system has no room.
///
/// # Safety
/// `system` allocates from [`System`] as [`GlobalAlloc::alloc`] does.
#[inline]
unsafe fn alloc_counted(layout: Layout, system: unsafe fn(&System, Layout) -> *mut u8) -> *mut u8 {
    let Some((full, h)) = with_header(layout) else {
        return std::ptr::null_mut();
    };
    // SAFETY: `full` has a non-zero size (at least the header).
    let base = unsafe { system(&System, full) };
    if base.is_null() {
        return base;
    }
    // SAFETY: a non-null block of layout `full`, whose header is `h` bytes.
    unsafe { hand_out(base, h, layout.size()) }
}

/// Count a new block of `size` asked bytes and tag it; the pointer handed out, `h` bytes into
/// the system's block `base`.
///
/// # Safety
/// `base` is a non-null block of a [`with_header`] layout whose header is `h` bytes.
#[inline]
unsafe fn hand_out(base: *mut u8, h: usize, size: usize) -> *mut u8 {
    // SAFETY: `h` < the block's size, and the block is tagged as `write_tag` requires.
    unsafe {
        let ptr = base.add(h);
        write_tag(ptr, on_alloc(size));
        ptr
    }
}

// SAFETY: every block is the system allocator's, `h` bytes bigger and aligned to `h` (a multiple
// of the asked alignment), handed out `h` bytes in: aligned as asked, with the asked size. Each
// call gives back to the system exactly the layout it got from it (the header size follows from
// the caller's layout, which is the one the block was made with). Counting touches only atomics
// and const thread-locals, so it never allocates or unwinds.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: `System.alloc` is a system allocation, as `alloc_counted` asks.
        unsafe { alloc_counted(layout, System::alloc) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe { alloc_counted(layout, System::alloc_zeroed) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // The layout was accepted by `alloc`, so it has a header layout.
        let Some((full, h)) = with_header(layout) else {
            return;
        };
        // SAFETY: `ptr` came from `alloc` with this layout: tagged, `h` bytes into a block of
        // layout `full`.
        unsafe {
            on_free(layout.size(), read_tag(ptr));
            System.dealloc(ptr.sub(h), full);
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let Some((full, h)) = with_header(layout) else {
            return std::ptr::null_mut();
        };
        let Some(new_full) = new_size.checked_add(h) else {
            return std::ptr::null_mut();
        };
        // SAFETY: as in `dealloc`; the system moves the header with the block.
        unsafe {
            let tag = read_tag(ptr);
            let base = System.realloc(ptr.sub(h), full, new_full);
            if base.is_null() {
                return base;
            }
            // A move: the old block's bytes leave, the new block's arrive (one allocation).
            on_free(layout.size(), tag);
            hand_out(base, h, new_size)
        }
    }
}

/// Turn counting on for the whole process (idempotent). Allocations made before stay
/// uncounted, and so do their frees' live bytes.
pub fn enable() {
    ENABLED.store(true, Relaxed);
}

/// Turn counting off (the overhead measurement's unprofiled forwards). Blocks counted while
/// it was on still leave the live figures when freed.
pub fn disable() {
    ENABLED.store(false, Relaxed);
}

/// Whether counting is on.
pub fn is_enabled() -> bool {
    ENABLED.load(Relaxed)
}

/// Whether this program declared [`CountingAlloc`] as its global allocator: turns counting on
/// and allocates once to see whether the counters move.
pub fn is_installed() -> bool {
    enable();
    if SEEN.load(Relaxed) {
        return true;
    }
    let before = compute_totals().allocs + OTHER.allocs.load(Relaxed);
    let probe = std::hint::black_box(Box::new(0u64));
    drop(probe);
    SEEN.load(Relaxed) || compute_totals().allocs + OTHER.allocs.load(Relaxed) != before
}

/// The compute threads' counters now.
pub(crate) fn compute_totals() -> Totals {
    COMPUTE.read()
}

/// The other threads' counters now.
pub(crate) fn other_totals() -> Totals {
    OTHER.read()
}

/// Live bytes now, per category and in all.
pub(crate) fn live() -> Live {
    let mut by_category = [0i64; 4];
    for (slot, live) in by_category.iter_mut().zip(&LIVE) {
        *slot = live.load(Relaxed);
    }
    Live {
        by_category,
        total: LIVE_TOTAL.load(Relaxed),
    }
}

/// The peak of live bytes since the last call, which restarts it from the live bytes now.
pub(crate) fn take_peak() -> i64 {
    PEAK.swap(LIVE_TOTAL.load(Relaxed), Relaxed)
}

/// Mark the calling thread as a compute thread (its allocations go to ops, not to "other
/// threads"). The recording thread and rayon's workers are compute threads without this.
pub fn mark_compute_thread() {
    if ROLE.with(Cell::get) != ROLE_SUSPENDED {
        ROLE.with(|r| r.set(ROLE_COMPUTE));
    }
}

/// While it lives, the calling thread's allocations are not counted (the recorder's own
/// bookkeeping); dropping it restores what the thread was.
pub(crate) struct Suspend(u8);

impl Suspend {
    #[inline]
    pub fn new() -> Self {
        Suspend(ROLE.with(|r| r.replace(ROLE_SUSPENDED)))
    }
}

impl Drop for Suspend {
    #[inline]
    fn drop(&mut self) {
        ROLE.with(|r| r.set(self.0));
    }
}

/// Sequence numbers of op scopes (0 is "no op").
static NEXT_OP: AtomicU64 = AtomicU64::new(1);
/// Only one recording counts memory at a time: the counters are process-wide.
static BUSY: AtomicBool = AtomicBool::new(false);

/// Claim the process-wide counters for one recording; false if another holds them.
pub(crate) fn claim() -> bool {
    BUSY.compare_exchange(false, true, Relaxed, Relaxed).is_ok()
}

/// Give the counters back.
pub(crate) fn release() {
    BUSY.store(false, Relaxed);
}

/// What an op scope set aside when it opened, to put back when it closes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OpMark {
    previous: u64,
    set_aside: i64,
}

/// An op scope opens: its allocations are temporaries until it closes. The enclosing op's
/// temporaries are set aside (counted as activations) meanwhile.
pub(crate) fn op_opens() -> OpMark {
    let op = NEXT_OP.fetch_add(1, Relaxed) & (u64::MAX >> 8);
    let previous = CURRENT_OP.swap(op.max(1), Relaxed);
    let set_aside = LIVE[Category::Temporaries.index()].load(Relaxed);
    move_temporaries(set_aside);
    OpMark {
        previous,
        set_aside,
    }
}

/// The op scope opened with `mark` closes: what it allocated and kept becomes activations
/// (or, inside an enclosing op, that op's temporaries, beside those set aside).
pub(crate) fn op_closes(mark: OpMark) {
    CURRENT_OP.store(mark.previous, Relaxed);
    if mark.previous == 0 {
        move_temporaries(LIVE[Category::Temporaries.index()].load(Relaxed));
    } else {
        move_temporaries(-mark.set_aside);
    }
}

/// Move `bytes` of temporaries to activations (negative: back).
fn move_temporaries(bytes: i64) {
    if bytes != 0 {
        LIVE[Category::Temporaries.index()].fetch_sub(bytes, Relaxed);
        LIVE[Category::Activations.index()].fetch_add(bytes, Relaxed);
    }
}

/// While the returned guard lives, blocks allocated by compute threads are put in `category`
/// (weights while loading a checkpoint, the KV cache while a cache is allocated), and the
/// calling thread counts as a compute thread. Costs one relaxed store when memory is not
/// being counted.
pub fn category(category: Category) -> CategoryScope {
    let tag = match category {
        Category::Weights => TAG_WEIGHTS,
        Category::KvCache => TAG_KV,
        Category::Activations | Category::Temporaries => 0,
    };
    if ENABLED.load(Relaxed) {
        mark_compute_thread();
    }
    CategoryScope(CATEGORY.swap(tag, Relaxed))
}

/// The guard of [`category`].
#[must_use = "the category holds until the guard is dropped"]
pub struct CategoryScope(u8);

impl Drop for CategoryScope {
    fn drop(&mut self) {
        CATEGORY.store(self.0, Relaxed);
    }
}
