//! `x · Wᵀ` on CPUs with AVX-512 or AVX2, with `W` repacked once, at load time, into column
//! panels.
//!
//! Why a kernel of our own: candle 0.11's gemm has no AVX-512 path on stable Rust, so on an
//! AVX-512 machine every multiply-add it issues is half as wide as the core allows; on an AVX2
//! machine it packs `W` again on every call, and its batched products are slow at attention's
//! small shapes. GPT-2's products are `x (m × k) · W (n × k)ᵀ` with a constant `W`, so `W` can
//! be laid out once in the order the kernel reads it, and nothing is packed per call.
//!
//! Layout (the same for both instruction sets): `W` becomes `⌈n / 32⌉` panels; panel `p` holds
//! columns `32p .. 32p + 32` as `k` rows of 32 contiguous values, the last panel padded with
//! zeros. A weight keeps the type it is packed from: f32 (a row is two cache lines), or bf16 or
//! f16 (a row is one cache line: half the bytes to stream, which is what a memory-bound decode
//! step waits on). Half-type values are widened to f32 in registers as they are loaded (bf16 by
//! a 16-bit shift, f16 with F16C's conversion) and every product accumulates in f32; `x` and the
//! output are f32 whatever the weight's type.
//!
//! A bf16 weight on the AVX-512 path is stored with `k` in pairs ([`paired`]): each 32-bit
//! lane holds one column's values at `k` and `k + 1`, so a panel row pair is two cache lines of
//! 16 columns each. Widening that lane is one shift (the value at `k`) and one mask (the value
//! at `k + 1`), with no shuffle across lanes; and it is the layout of `avx512_bf16`'s dot
//! product (`vdpbf16ps`: 16 lanes × 2 products a step, twice the multiply-adds of an f32 FMA).
//! Where the CPU has that instruction, products of at least [`DOT_MIN_ROWS`] rows (a prefill,
//! a batch of decode steps) run on it, with `x` rounded to bf16 for the product (the sums stay
//! f32); smaller ones (a single decode step, bound by the weights' bytes) widen and stay exact.
//!
//! Kernel: a block of the output lives in vector registers: up to 12 rows × 32 columns (a
//! whole panel) with AVX-512 (24 of the 32 registers), up to 3 rows × 32 columns with AVX2
//! (12 of the 16). For each `k` it loads the panel's vectors once, broadcasts one value per
//! row of `x`, and issues one fused multiply-add per accumulator, so loads never limit it.
//! `x` is regrouped per call into blocks of that many rows stored k-major, so those
//! broadcasts come from one sequential stream (rows of `x` 12 KiB apart, as in the MLP's down
//! projection, fall into the same L1 sets and evict each other: before the regrouping that
//! shape ran at 135 GFLOP/s against 190–220 for the others, on 2 threads). `k` is cut into
//! slices of [`KC`] so that a panel slice (32 KiB) stays in the L1 cache while every row block
//! of `x` passes over it, and the slice to be read next is prefetched into L2 meanwhile;
//! threads take disjoint groups of panels. A small `x` (a decode step) streams each panel from
//! memory once, in memory order; a large one (a prefill) goes slice by slice of `k`, so its
//! slice stays in L2.

use candle_core::{DType, Device, Result, Tensor};
use half::{bf16, f16};
use rayon::prelude::*;

use super::{cpu_f32, KernelPath};

/// Output columns per panel: two AVX-512 vectors, four AVX2 ones.
const NR: usize = 32;
/// Depth of one pass: a `KC × NR` panel slice is 32 KiB, inside a 48 KiB L1.
const KC: usize = 256;
/// Up to this many values (256 KiB), `x` stays in a 1–2 MiB L2 whatever the loop order, and
/// the panels are streamed in memory order.
const X_IN_L2: usize = 64 * 1024;

/// One cache line; the panels are built from these so every vector load is aligned.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Line([u8; 64]);

/// The types a panel can hold, as the kernels' `W` parameter (a const generic: each kernel
/// is compiled once per type, with the widening of that type and no other).
const F32: u8 = 0;
const BF16: u8 = 1;
const F16: u8 = 2;

/// The kernels' code for a weight of `dtype`, or an error for a type no kernel reads.
fn stored(dtype: DType) -> Result<u8> {
    match dtype {
        DType::F32 => Ok(F32),
        DType::BF16 => Ok(BF16),
        DType::F16 => Ok(F16),
        other => candle_core::bail!(
            "packed matmul: a weight of {other:?} cannot be packed (f32, bf16 or f16 can)"
        ),
    }
}

/// Bytes of one value of a panel of type `w`.
const fn width(w: u8) -> usize {
    if w == F32 {
        4
    } else {
        2
    }
}

/// Why the packed kernel cannot run on `path` here, if it cannot.
fn check_path(path: KernelPath, op: &str) -> Result<()> {
    if path == KernelPath::Portable {
        candle_core::bail!(
            "{op}: the portable kernel path has no packed matmul (it runs candle's gemm)"
        )
    }
    if !path.is_supported() {
        candle_core::bail!("{op}: this CPU lacks the instructions of the {path} kernel path; use a narrower one (avx2 or portable)")
    }
    Ok(())
}

/// Most rows of `x` one kernel call on `path` keeps in registers, beside the panel's vectors:
/// AVX-512, 12 (24 accumulators + 2 panel vectors + 1 broadcast ≤ 32 registers); AVX2, 3
/// (12 accumulators + 3 broadcasts + 1 panel vector = 16).
fn max_rows(path: KernelPath) -> usize {
    match path {
        KernelPath::Avx512 => 12,
        _ => 3,
    }
}

/// A weight of logical shape (n × k), packed for [`PackedWeight::matmul`] on one kernel path.
pub struct PackedWeight {
    panels: Vec<Line>,
    n: usize,
    k: usize,
    /// The instructions its products run on (`avx512` or `avx2`), checked when it was packed.
    path: KernelPath,
    /// The type its values are stored in ([`F32`], [`BF16`] or [`F16`]).
    w: u8,
}

/// Whether a weight of type `w` packed for `path` stores `k` in pairs: bf16 on AVX-512.
fn paired(path: KernelPath, w: u8) -> bool {
    path == KernelPath::Avx512 && w == BF16
}

/// The rows of `k` a panel holds: `k`, or with pairs the even count at or above it (the last
/// pair padded with zeros).
fn stored_k(k: usize, pairs: bool) -> usize {
    if pairs {
        k.next_multiple_of(2)
    } else {
        k
    }
}

/// Products with at least this many rows of `x` use `avx512_bf16`'s dot product where the CPU
/// has it (see the module's notes).
pub const DOT_MIN_ROWS: usize = 8;

/// Whether a product of `m` rows of `x` against a `dtype` weight packed for `path` runs on the
/// bf16 dot product on this CPU, and so rounds `x` to bf16 (what a parity bound must allow for).
pub fn rounds_activations(path: KernelPath, dtype: DType, m: usize) -> bool {
    stored(dtype).is_ok_and(|w| paired(path, w)) && m >= DOT_MIN_ROWS && has_bf16_dot()
}

/// Whether this CPU has `avx512_bf16` (read once).
fn has_bf16_dot() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        static HAS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        *HAS.get_or_init(|| std::arch::is_x86_feature_detected!("avx512bf16"))
    }
    #[cfg(not(target_arch = "x86_64"))]
    false
}

impl std::fmt::Debug for PackedWeight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PackedWeight({} × {}, {:?}, {})",
            self.n,
            self.k,
            self.dtype(),
            self.path
        )
    }
}

impl PackedWeight {
    /// Packs `w_out_in` of shape (n, k), f32, bf16 or f16 on the CPU, in its own type, for the
    /// products of the `avx512` or `avx2` kernel `path` (an error where this CPU lacks it, or
    /// for `portable`).
    pub fn pack(w_out_in: &Tensor, path: KernelPath) -> Result<Self> {
        check_path(path, "packed matmul")?;
        let w = stored(w_out_in.dtype())?;
        let (n, k) = w_out_in.dims2()?;
        // As f32, exactly: a bf16 or f16 value widens without rounding, and narrows back to itself.
        let values = w_out_in
            .to_dtype(DType::F32)?
            .contiguous()?
            .flatten_all()?
            .to_vec1::<f32>()?;
        let value = |c: usize, kk: usize| values[c * k + kk];
        let mut packed = Self::zeroed(n, k, path, w);
        // Fill the panels in parallel, one panel per task.
        let lines = packed.panel_lines().max(1);
        let pairs = packed.pairs();
        let panels = packed.panels.par_chunks_mut(lines).enumerate();
        match w {
            F32 => panels
                .for_each(|(p, panel)| fill_panel(values_mut::<f32>(panel), p, n, k, false, value)),
            BF16 => panels.for_each(|(p, panel)| {
                fill_panel(values_mut::<u16>(panel), p, n, k, pairs, |c, kk| {
                    bf16::from_f32(value(c, kk)).to_bits()
                })
            }),
            _ => panels.for_each(|(p, panel)| {
                fill_panel(values_mut::<u16>(panel), p, n, k, false, |c, kk| {
                    f16::from_f32(value(c, kk)).to_bits()
                })
            }),
        }
        Ok(packed)
    }

    /// Packs, on this thread, the f32 (n, k) matrix whose element (c, kk) is `value(c, kk)`
    /// (`path` already checked).
    fn pack_with(
        n: usize,
        k: usize,
        path: KernelPath,
        value: impl Fn(usize, usize) -> f32,
    ) -> Self {
        let mut packed = Self::zeroed(n, k, path, F32);
        let lines = packed.panel_lines().max(1);
        packed
            .panels
            .chunks_mut(lines)
            .enumerate()
            .for_each(|(p, panel)| fill_panel(values_mut::<f32>(panel), p, n, k, false, &value));
        packed
    }

    fn zeroed(n: usize, k: usize, path: KernelPath, w: u8) -> Self {
        let lines = n.div_ceil(NR) * stored_k(k, paired(path, w)) * NR * width(w) / 64;
        Self {
            panels: vec![Line([0; 64]); lines],
            n,
            k,
            path,
            w,
        }
    }

    /// Whether `k` is stored in pairs ([`paired`]).
    fn pairs(&self) -> bool {
        paired(self.path, self.w)
    }

    /// The rows of `k` a panel holds ([`stored_k`]).
    fn stored_k(&self) -> usize {
        stored_k(self.k, self.pairs())
    }

    /// Cache lines per panel: `k` rows of 32 values (zero with k = 0: nothing to fill).
    fn panel_lines(&self) -> usize {
        self.stored_k() * NR * width(self.w) / 64
    }

    /// Whether a product with `m` rows of `x` runs on `avx512_bf16`'s dot product (rounding
    /// `x` to bf16), rather than widening the weight to f32.
    pub fn uses_dot_products(&self, m: usize) -> bool {
        rounds_activations(self.path, self.dtype(), m)
    }

    /// The kernel path its products run on.
    pub fn path(&self) -> KernelPath {
        self.path
    }

    /// The type its values are stored in: the tensor's it was packed from.
    pub fn dtype(&self) -> DType {
        match self.w {
            F32 => DType::F32,
            BF16 => DType::BF16,
            _ => DType::F16,
        }
    }

    /// (n, k): the shape of the weight this was packed from.
    pub fn dims(&self) -> (usize, usize) {
        (self.n, self.k)
    }

    /// `x (m × k) · Wᵀ → (m × n)`: `x` and the output f32 on the CPU, whatever the weight's
    /// type, with the instructions of [`Self::path`].
    pub fn matmul(&self, x: &Tensor) -> Result<Tensor> {
        let (m, k) = x.dims2()?;
        if k != self.k {
            candle_core::bail!("packed matmul: x has {k} columns, the weight {}", self.k)
        }
        let x = x.contiguous()?;
        let (storage, layout) = x.storage_and_layout();
        let values = cpu_f32(&storage, layout, "packed matmul")?;
        let mr = max_rows(self.path);
        let xs = if self.uses_dot_products(m) {
            Rows::Pairs(pack_rows(&bf16_pairs(values, m, k), m, k.div_ceil(2), mr))
        } else {
            Rows::F32(pack_rows(values, m, k, mr))
        };
        drop(storage);

        let panels = self.n.div_ceil(NR);
        // A few tasks per thread, so that a thread slowed by the machine is caught up by the others.
        let per_task = panels.div_ceil(rayon::current_num_threads() * 4).max(1);
        let out = written_output(m * self.n, k, |out| {
            (0..panels.div_ceil(per_task))
                .into_par_iter()
                .for_each(|task| {
                    let first = task * per_task;
                    // SAFETY: `pack` checked the CPU for the path; tasks write disjoint columns of
                    // `out` (panel p owns columns 32p..32p+32), which holds m × n values.
                    unsafe {
                        self.panels_product(&xs, m, first..(first + per_task).min(panels), out)
                    };
                })
        });
        Tensor::from_vec(out, (m, self.n), &Device::Cpu)
    }

    /// The whole product on this thread, into the m × n values at `out`; `xs` comes from
    /// [`pack_rows`] in blocks of the path's [`max_rows`].
    ///
    /// # Safety
    /// `out` must be valid for m × n writes that no other thread makes.
    unsafe fn product_here(&self, xs: &Rows, m: usize, out: &OutPtr) {
        // SAFETY: the caller guarantees `out` (this function's contract); `panels_product` asks the same.
        unsafe {
            self.panels_product(xs, m, 0..self.n.div_ceil(NR), out);
        }
    }

    /// Columns `32 · panels.start .. 32 · panels.end` of the product, for every row of `x`.
    unsafe fn panels_product(
        &self,
        xs: &Rows,
        m: usize,
        panels: std::ops::Range<usize>,
        out: &OutPtr,
    ) {
        // SAFETY: the caller guarantees `out` for these panels' columns and the CPU's path (as `tile` asks).
        unsafe {
            let slices = (0..self.k).step_by(KC);
            let k = self.k;
            let mr = max_rows(self.path);
            if m * k <= X_IN_L2 {
                // A small x (decode steps, up to 16 rows and more): stream each panel from memory
                // once, front to back, every row block reading a slice while it is in L1; the next
                // slice is the one that follows in memory.
                for p in panels {
                    for k0 in slices.clone() {
                        let next = self
                            .slice(p, k0)
                            .wrapping_add(KC.min(k - k0) * NR * width(self.w));
                        for r0 in (0..m).step_by(mr) {
                            self.tile(xs, m, (p, k0), r0, next, out);
                        }
                    }
                }
            } else {
                // A large x (a prefill): slice by slice of k, so that x's slice stays in L2 while the
                // panels pass (a whole x of 128 × 3072 does not fit beside them); the next slice is
                // the next panel's.
                for k0 in slices {
                    for p in panels.clone() {
                        let next = self.slice(p + 1, k0);
                        for r0 in (0..m).step_by(mr) {
                            self.tile(xs, m, (p, k0), r0, next, out);
                        }
                    }
                }
            }
        }
    }

    /// Where panel `p`'s slice from step `k0` starts (computed without a bounds check: the
    /// slice after the last panel is only ever prefetched).
    fn slice(&self, p: usize, k0: usize) -> *const u8 {
        self.panels
            .as_ptr()
            .cast::<u8>()
            .wrapping_add((p * NR * self.stored_k() + k0 * NR) * width(self.w))
    }

    /// Rows `r0 .. r0 + max_rows` and columns `32p .. 32p + 32` of the product, from panel `p`'s
    /// slice of `k` that starts at `k0` (added to what the earlier slices left in `out`).
    unsafe fn tile(
        &self,
        xs: &Rows,
        m: usize,
        (p, k0): (usize, usize),
        r0: usize,
        next: *const u8,
        out: &OutPtr,
    ) {
        // SAFETY: `xs` holds whole row blocks of m × k values (`pack_rows`), so row block r0's address from k0 on is inside it; `out` is valid for m × n writes (the caller's contract), so the tile's corner is inside it.
        unsafe {
            let k = self.k;
            let rows = max_rows(self.path).min(m - r0);
            // Row block r0's values from step k0 on (4 bytes a value or a pair, in either form).
            let x = match xs {
                Rows::F32(xs) => xs.as_ptr().add(r0 * k + k0 * rows).cast::<u8>(),
                Rows::Pairs(xs) => xs
                    .as_ptr()
                    .add(r0 * k.div_ceil(2) + k0 / 2 * rows)
                    .cast::<u8>(),
            };
            let tile = Tile {
                x,
                next,
                panel: self.slice(p, k0),
                depth: KC.min(k - k0),
                out: out.0.add(r0 * self.n + p * NR),
                ldo: self.n,
                columns: NR.min(self.n - p * NR),
                accumulate: k0 > 0,
            };
            tile.run(self.path, rows, self.w, matches!(xs, Rows::Pairs(_)));
        }
    }
}

/// `x` regrouped for the kernels by [`pack_rows`]: f32 values, or for the dot product bf16
/// pairs, one 32-bit lane per pair of steps of `k` ([`bf16_pairs`]).
enum Rows {
    F32(Vec<f32>),
    Pairs(Vec<u32>),
}

/// How the second operand of a [`batched_matmul`] is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rhs {
    /// `b` is (…, n, k): the product is `a · bᵀ` (attention scores, `q · kᵀ`).
    Transposed,
    /// `b` is (…, k, n): the product is `a · b` (attention output, `p · v`).
    AsIs,
}

/// `scale · a[i] · b[i]` (or `· b[i]ᵀ`) for every leading index `i`: `a` is (…, m, k), f32 on the
/// CPU. Attention's products are many and small (one per sequence and head, e.g. 12 of
/// 128 × 64 × 128 in a prefill): each runs whole on one thread, the products in parallel.
/// Runs on the `avx512` or `avx2` kernel `path`, like [`PackedWeight::matmul`].
pub fn batched_matmul(
    a: &Tensor,
    b: &Tensor,
    rhs: Rhs,
    scale: f32,
    path: KernelPath,
) -> Result<Tensor> {
    check_path(path, "batched matmul")?;
    let dims = a.dims();
    let rank = dims.len();
    if rank < 2 || b.rank() != rank || b.dims()[..rank - 2] != dims[..rank - 2] {
        candle_core::bail!(
            "batched matmul: shapes {:?} and {:?} do not pair up",
            dims,
            b.dims()
        )
    }
    let (m, k) = (dims[rank - 2], dims[rank - 1]);
    let (b_rows, b_cols) = (b.dims()[rank - 2], b.dims()[rank - 1]);
    let n = match rhs {
        Rhs::Transposed if b_cols == k => b_rows,
        Rhs::AsIs if b_rows == k => b_cols,
        _ => candle_core::bail!(
            "batched matmul: inner dimensions of {:?} and {:?} differ",
            dims,
            b.dims()
        ),
    };
    let count: usize = dims[..rank - 2].iter().product();
    let (a, b) = (a.contiguous()?, b.contiguous()?);
    let (a_storage, a_layout) = a.storage_and_layout();
    let (b_storage, b_layout) = b.storage_and_layout();
    let av = cpu_f32(&a_storage, a_layout, "batched matmul")?;
    let bv = cpu_f32(&b_storage, b_layout, "batched matmul")?;

    let out = written_output(count * m * n, k, |out| {
        (0..count).into_par_iter().for_each(|i| {
            let (a, b) = (
                &av[i * m * k..(i + 1) * m * k],
                &bv[i * n * k..(i + 1) * n * k],
            );
            let packed = match rhs {
                Rhs::Transposed => PackedWeight::pack_with(n, k, path, |c, kk| b[c * k + kk]),
                Rhs::AsIs => PackedWeight::pack_with(n, k, path, |c, kk| b[kk * n + c]),
            };
            let mut xs = pack_rows(a, m, k, max_rows(path));
            if scale != 1.0 {
                xs.iter_mut().for_each(|v| *v *= scale);
            }
            let xs = Rows::F32(xs);
            // SAFETY: `check_path` checked the CPU; product i owns the m × n values from i · m · n of the count · m · n.
            unsafe { packed.product_here(&xs, m, &OutPtr(out.0.wrapping_add(i * m * n))) };
        })
    });
    let mut shape = dims[..rank - 2].to_vec();
    shape.extend([m, n]);
    Tensor::from_vec(out, shape, &Device::Cpu)
}

/// A buffer of `len` values that `write` fills through the pointer it is given, every value
/// written at least once: a product's first slice of k stores, the later ones add. Not zeroed
/// beforehand: for a prefill's outputs (megabytes a call) that pass cost a tenth of the product.
/// With `k == 0` no slice runs and the product is zeros.
fn written_output(len: usize, k: usize, write: impl FnOnce(&OutPtr)) -> Vec<f32> {
    if k == 0 {
        return vec![0.0; len];
    }
    let mut out = Vec::with_capacity(len);
    write(&OutPtr(out.as_mut_ptr()));
    // SAFETY: `write` wrote all `len` values (every row block and every panel's columns are
    // stored by the k slice that starts at 0).
    unsafe { out.set_len(len) };
    out
}

/// Writes panel `p` of an (n, k) matrix given element by element, in the panel's type `T`:
/// row `kk` of 32 columns after row `kk - 1`, or with `pairs` ([`paired`]) each pair of rows as
/// two lines of 16 columns, a column's two values side by side.
fn fill_panel<T>(
    panel: &mut [T],
    p: usize,
    n: usize,
    k: usize,
    pairs: bool,
    value: impl Fn(usize, usize) -> T,
) {
    for j in 0..NR.min(n - p * NR) {
        for kk in 0..k {
            let at = if pairs {
                kk / 2 * 2 * NR + j / 16 * 32 + j % 16 * 2 + kk % 2
            } else {
                kk * NR + j
            };
            panel[at] = value(p * NR + j, kk);
        }
    }
}

/// The output buffer, shared by tasks that write disjoint columns of it.
struct OutPtr(*mut f32);
// SAFETY: the pointer is only written through, by tasks that each own disjoint columns of the
// buffer (`product`), and the buffer outlives them (`written_output`).
unsafe impl Sync for OutPtr {}

/// One kernel call: `rows × columns` of the output from `depth` steps of `k`. Off x86-64 the
/// kernels do not exist (`check_path` refuses first), so nothing reads the fields there.
#[cfg_attr(
    not(target_arch = "x86_64"),
    allow(dead_code, reason = "off x86-64 no kernel reads a tile")
)]
struct Tile {
    /// Row block of [`pack_rows`], at the first step: `x[r][kk]` is at `kk * rows + r` (f32),
    /// or for the dot product the pair `x[r][2q], x[r][2q + 1]` at `q * rows + r` (u32).
    x: *const u8,
    /// The panel slice the next tiles will read (prefetched; may point past the panels,
    /// which a prefetch ignores).
    next: *const u8,
    /// This tile's panel slice: `depth` rows of 32 values of the weight's type.
    panel: *const u8,
    depth: usize,
    out: *mut f32,
    ldo: usize,
    columns: usize,
    accumulate: bool,
}

impl Tile {
    /// # Safety
    /// The CPU has `path`'s instructions (and `avx512_bf16` with `dot`), `rows` is within its
    /// [`max_rows`], `w` is the panel's type, and `x` is in pairs exactly when `dot`.
    unsafe fn run(&self, path: KernelPath, rows: usize, w: u8, dot: bool) {
        // Off x86-64 there is no kernel, so no unsafe call (an unsafe block there is unused).
        #[cfg(not(target_arch = "x86_64"))]
        unreachable!("`check_path` fails off x86-64 ({path}, rows {rows}, type {w}, dot {dot})");
        // SAFETY: the caller guarantees the CPU's instructions, the row count and the types (this function's contract), which is what each kernel asks.
        #[cfg(target_arch = "x86_64")]
        unsafe {
            /// One arm per row count and weight type, each a kernel compiled for exactly those.
            macro_rules! kernels {
                ($isa:ident, $($rows:literal)*) => {
                    match (rows, w) {
                        $(($rows, F32) => $isa::kernel::<$rows, F32>(self),
                          ($rows, BF16) => $isa::kernel::<$rows, BF16>(self),
                          ($rows, _) => $isa::kernel::<$rows, F16>(self),)*
                        _ => unreachable!("no {path} tile of {rows} rows (`max_rows` sets the limits)"),
                    }
                };
            }
            macro_rules! dot_kernels {
                ($($rows:literal)*) => {
                    match rows {
                        $($rows => avx512::dot_kernel::<$rows>(self),)*
                        _ => unreachable!("no dot-product tile of {rows} rows (`max_rows` sets the limits)"),
                    }
                };
            }
            match path {
                KernelPath::Avx512 if dot => dot_kernels!(1 2 3 4 5 6 7 8 9 10 11 12),
                KernelPath::Avx512 => kernels!(avx512, 1 2 3 4 5 6 7 8 9 10 11 12),
                _ => kernels!(avx2, 1 2 3),
            }
        }
    }
}

/// Prefetches into L2 the `bytes` (64 or 128) of the next slice that match a kernel's step, so
/// that the weights' stream from memory overlaps the arithmetic instead of stalling it (both
/// instruction sets' kernels; a prefetch never faults, so `next` may point past the panels).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn prefetch_next(next: *const u8, bytes: usize) {
    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
    // SAFETY: SSE is part of x86-64, and a prefetch reads nothing the program can observe.
    unsafe {
        _mm_prefetch::<_MM_HINT_T1>(next.cast());
        if bytes > 64 {
            _mm_prefetch::<_MM_HINT_T1>(next.wrapping_add(64).cast());
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{prefetch_next, width, Tile, BF16, F32, NR};
    use std::arch::x86_64::*;

    /// A panel row's 32 values as two vectors of 16 floats: loaded, or widened from f16 with
    /// the conversion instruction (bf16 panels are in pairs: [`widened_pairs`]).
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn panel_row<const W: u8>(row: *const u8) -> [__m512; 2] {
        // SAFETY: the caller runs on an AVX-512 CPU and `row` points at a panel row of 32 values of type `W`, aligned to 64 bytes (the panels are cache lines).
        unsafe {
            if W == F32 {
                let row = row.cast::<f32>();
                return [_mm512_load_ps(row), _mm512_load_ps(row.add(16))];
            }
            let halves = row.cast::<__m256i>();
            [
                _mm512_cvtph_ps(_mm256_load_si256(halves)),
                _mm512_cvtph_ps(_mm256_load_si256(halves.add(1))),
            ]
        }
    }

    #[target_feature(enable = "avx512f")]
    pub unsafe fn kernel<const ROWS: usize, const W: u8>(t: &Tile) {
        // SAFETY: `Tile::run`'s contract: the CPU has these instructions, and the tile's pointers cover `depth` steps of `ROWS` rows of x, of the panel, and of the output's `columns`.
        unsafe {
            if W == BF16 {
                return widened_pairs::<ROWS>(t);
            }
            let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
            let row_bytes = NR * width(W);
            let x = t.x.cast::<f32>();
            for kk in 0..t.depth {
                prefetch_next(t.next.wrapping_add(kk * row_bytes), row_bytes);
                let [b0, b1] = panel_row::<W>(t.panel.add(kk * row_bytes));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let a = _mm512_set1_ps(*x.add(kk * ROWS + r));
                    acc[0] = _mm512_fmadd_ps(a, b0, acc[0]);
                    acc[1] = _mm512_fmadd_ps(a, b1, acc[1]);
                }
            }
            store(t, &acc);
        }
    }

    /// A bf16 panel stored in pairs of `k`, widened: a 32-bit lane holds a column's values at
    /// `2q` (its low half: shifted up, it is that value as an f32) and `2q + 1` (its high half:
    /// with the low half cleared, it is that value as an f32). Exact, as for the other types.
    #[target_feature(enable = "avx512f")]
    unsafe fn widened_pairs<const ROWS: usize>(t: &Tile) {
        // SAFETY: as `kernel`: the tile's pointers cover `depth` steps of x and of the paired panel, and the output's `columns`.
        unsafe {
            let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
            let x = t.x.cast::<f32>();
            let high = _mm512_set1_epi32(0xFFFF_0000_u32 as i32);
            let pair = |q: usize| -> [__m512i; 2] {
                let lines = t.panel.add(q * 2 * 64).cast::<__m512i>();
                [_mm512_load_si512(lines), _mm512_load_si512(lines.add(1))]
            };
            // The values at 2q, from a pair's two lines.
            let even = |[l0, l1]: [__m512i; 2]| {
                [
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(l0)),
                    _mm512_castsi512_ps(_mm512_slli_epi32::<16>(l1)),
                ]
            };
            for q in 0..t.depth / 2 {
                prefetch_next(t.next.wrapping_add(q * 2 * 64), 128);
                let [l0, l1] = pair(q);
                let even = even([l0, l1]);
                let odd = [
                    _mm512_castsi512_ps(_mm512_and_si512(l0, high)),
                    _mm512_castsi512_ps(_mm512_and_si512(l1, high)),
                ];
                for (r, acc) in acc.iter_mut().enumerate() {
                    let (a0, a1) = (
                        _mm512_set1_ps(*x.add(2 * q * ROWS + r)),
                        _mm512_set1_ps(*x.add((2 * q + 1) * ROWS + r)),
                    );
                    acc[0] = _mm512_fmadd_ps(a0, even[0], acc[0]);
                    acc[1] = _mm512_fmadd_ps(a0, even[1], acc[1]);
                    acc[0] = _mm512_fmadd_ps(a1, odd[0], acc[0]);
                    acc[1] = _mm512_fmadd_ps(a1, odd[1], acc[1]);
                }
            }
            if t.depth % 2 == 1 {
                // An odd k's last step: the pair's second value is padding, and x has no value there.
                let q = t.depth / 2;
                let even = even(pair(q));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let a = _mm512_set1_ps(*x.add(2 * q * ROWS + r));
                    acc[0] = _mm512_fmadd_ps(a, even[0], acc[0]);
                    acc[1] = _mm512_fmadd_ps(a, even[1], acc[1]);
                }
            }
            store(t, &acc);
        }
    }

    /// A bf16 panel stored in pairs, against `x` rounded to bf16 pairs: `vdpbf16ps` adds both
    /// products of a pair to an f32 lane in one instruction. The padding of an odd `k` is zero
    /// on both sides.
    #[target_feature(enable = "avx512f,avx512bf16")]
    pub unsafe fn dot_kernel<const ROWS: usize>(t: &Tile) {
        // SAFETY: as `kernel`, with `avx512_bf16` and x in bf16 pairs (`Tile::run`'s contract); a `__m512bh` is 512 bits like the `__m512i` it is transmuted from.
        unsafe {
            let mut acc = [[_mm512_setzero_ps(); 2]; ROWS];
            let x = t.x.cast::<i32>();
            for q in 0..t.depth.div_ceil(2) {
                prefetch_next(t.next.wrapping_add(q * 2 * 64), 128);
                let lines = t.panel.add(q * 2 * 64).cast::<__m512i>();
                let b0: __m512bh = std::mem::transmute(_mm512_load_si512(lines));
                let b1: __m512bh = std::mem::transmute(_mm512_load_si512(lines.add(1)));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let a: __m512bh = std::mem::transmute(_mm512_set1_epi32(*x.add(q * ROWS + r)));
                    acc[0] = _mm512_dpbf16_ps(acc[0], a, b0);
                    acc[1] = _mm512_dpbf16_ps(acc[1], a, b1);
                }
            }
            store(t, &acc);
        }
    }

    /// Writes (or adds, after the first slice of `k`) the tile's accumulators to the output.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn store<const ROWS: usize>(t: &Tile, acc: &[[__m512; 2]; ROWS]) {
        // SAFETY: `t.out` is valid for `ROWS` rows of `t.ldo` values; the masks keep every load and store within the tile's `columns`.
        unsafe {
            // The last panel of a weight whose n is not a multiple of 32 is partly padding.
            let lanes = |from: usize| -> __mmask16 {
                let n = t.columns.saturating_sub(from).min(16);
                ((1u32 << n) - 1) as __mmask16
            };
            let (m0, m1) = (lanes(0), lanes(16));
            for (r, acc) in acc.iter().enumerate() {
                // wrapping_add: with 16 or fewer columns the second half lies past the row and
                // its mask is empty, so nothing there is read or written.
                let row = t.out.wrapping_add(r * t.ldo);
                let (mut v0, mut v1) = (acc[0], acc[1]);
                if t.accumulate {
                    v0 = _mm512_add_ps(v0, _mm512_maskz_loadu_ps(m0, row));
                    v1 = _mm512_add_ps(v1, _mm512_maskz_loadu_ps(m1, row.wrapping_add(16)));
                }
                _mm512_mask_storeu_ps(row, m0, v0);
                _mm512_mask_storeu_ps(row.wrapping_add(16), m1, v1);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{prefetch_next, width, Tile, BF16, F32, NR};
    use std::arch::x86_64::*;

    /// Vector `j` (values 8j .. 8j + 8) of a panel row: loaded, or widened from 16-bit values
    /// as in the AVX-512 kernel (f16 through F16C).
    #[target_feature(enable = "avx2,fma,f16c")]
    #[inline]
    unsafe fn panel_vector<const W: u8>(row: *const u8, j: usize) -> __m256 {
        // SAFETY: the caller runs on a CPU with AVX2, FMA and F16C, and `row` points at a panel row of 32 values of type `W`, aligned to 32 bytes.
        unsafe {
            if W == F32 {
                return _mm256_load_ps(row.cast::<f32>().add(8 * j));
            }
            let h = _mm_load_si128(row.cast::<__m128i>().add(j));
            if W == BF16 {
                _mm256_castsi256_ps(_mm256_slli_epi32::<16>(_mm256_cvtepu16_epi32(h)))
            } else {
                _mm256_cvtph_ps(h)
            }
        }
    }

    /// `ROWS × 32` of the output: four 8-float vectors per row of `x`. With three rows the 12
    /// accumulators and 3 broadcasts leave one of the 16 registers for the panel, so each
    /// panel vector is loaded once per step and used by every row before the next is loaded.
    /// (A 6 × 16 tile over half panels, the usual AVX2 shape, reached 47–76% of this tile's
    /// GFLOP/s at 128 rows on c_attn, c_fc, mlp.c_proj and lm_head, and the same on
    /// attn.c_proj: the `matmul_kernels` example, one thread, busy 2-core machine.)
    #[target_feature(enable = "avx2,fma,f16c")]
    pub unsafe fn kernel<const ROWS: usize, const W: u8>(t: &Tile) {
        // SAFETY: `Tile::run`'s contract: the CPU has these instructions, and the tile's pointers cover `depth` steps of `ROWS` rows of x, of the panel, and of the output's `columns`.
        unsafe {
            let mut acc = [[_mm256_setzero_ps(); 4]; ROWS];
            let row_bytes = NR * width(W);
            for kk in 0..t.depth {
                prefetch_next(t.next.wrapping_add(kk * row_bytes), row_bytes);
                let x = t.x.cast::<f32>().add(kk * ROWS);
                let mut a = [_mm256_setzero_ps(); ROWS];
                for (r, a) in a.iter_mut().enumerate() {
                    *a = _mm256_broadcast_ss(&*x.add(r));
                }
                // Column vector outermost, so that one panel register serves every row.
                #[allow(
                    clippy::needless_range_loop,
                    reason = "the column vector is the outer loop: one panel register serves every row"
                )]
                for j in 0..4 {
                    let b = panel_vector::<W>(t.panel.add(kk * row_bytes), j);
                    for r in 0..ROWS {
                        acc[r][j] = _mm256_fmadd_ps(a[r], b, acc[r][j]);
                    }
                }
            }
            if t.columns == NR {
                for (r, acc) in acc.iter().enumerate() {
                    let row = t.out.add(r * t.ldo);
                    for (j, &v) in acc.iter().enumerate() {
                        let v = if t.accumulate {
                            _mm256_add_ps(v, _mm256_loadu_ps(row.add(8 * j)))
                        } else {
                            v
                        };
                        _mm256_storeu_ps(row.add(8 * j), v);
                    }
                }
                return;
            }
            // The last panel of a weight whose n is not a multiple of 32 is partly padding: lane
            // i of vector j is kept where column 8j + i is one of the weight's.
            let lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
            let mut masks = [lane; 4];
            for (j, m) in masks.iter_mut().enumerate() {
                *m = _mm256_cmpgt_epi32(_mm256_set1_epi32(t.columns as i32 - 8 * j as i32), lane);
            }
            for (r, acc) in acc.iter().enumerate() {
                // wrapping_add: a vector past the last column lies past the row, and its mask is
                // empty, so nothing there is read or written.
                let row = t.out.wrapping_add(r * t.ldo);
                for (j, (&v, &m)) in acc.iter().zip(&masks).enumerate() {
                    let at = row.wrapping_add(8 * j);
                    let v = if t.accumulate {
                        _mm256_add_ps(v, _mm256_maskload_ps(at, m))
                    } else {
                        v
                    };
                    _mm256_maskstore_ps(at, m, v);
                }
            }
        }
    }
}

/// `x (m × k)` regrouped in blocks of `mr` rows (fewer in the last), each block stored
/// k-major: `x[r0 + r][kk]` is at `r0 * k + kk * rows + r`.
fn pack_rows<T: Copy + Default + Send + Sync>(xs: &[T], m: usize, k: usize, mr: usize) -> Vec<T> {
    let mut packed = vec![T::default(); m * k];
    if k == 0 {
        return packed;
    }
    let fill = |(b, block): (usize, &mut [T])| {
        let (r0, rows) = (b * mr, block.len() / k);
        for r in 0..rows {
            for (kk, &v) in xs[(r0 + r) * k..(r0 + r + 1) * k].iter().enumerate() {
                block[kk * rows + r] = v;
            }
        }
    };
    // A prefill's x is megabytes: regroup it on every thread.
    if m * k > X_IN_L2 {
        packed.par_chunks_mut(mr * k).enumerate().for_each(fill);
    } else {
        packed.chunks_mut(mr * k).enumerate().for_each(fill);
    }
    packed
}

/// `x (m × k)` rounded to bf16 (to nearest, ties to even) in pairs along `k`: element `q` of
/// row `r` holds `x[r][2q]` in its low half and `x[r][2q + 1]` (zero past an odd `k`) in its
/// high half, the order of a panel's pairs.
fn bf16_pairs(xs: &[f32], m: usize, k: usize) -> Vec<u32> {
    let k2 = k.div_ceil(2);
    let mut pairs = vec![0u32; m * k2];
    let bits = |v: f32| u32::from(bf16::from_f32(v).to_bits());
    let fill = |(row, out): (&[f32], &mut [u32])| {
        for (q, out) in out.iter_mut().enumerate() {
            let high = row.get(2 * q + 1).map_or(0, |&v| bits(v));
            *out = bits(row[2 * q]) | high << 16;
        }
    };
    if k == 0 {
        return pairs;
    }
    if m * k > X_IN_L2 {
        xs.par_chunks(k)
            .zip(pairs.par_chunks_mut(k2))
            .for_each(fill);
    } else {
        xs.chunks(k).zip(pairs.chunks_mut(k2)).for_each(fill);
    }
    pairs
}

/// Cache lines seen as the values of type `T` (`f32` or `u16`, the bits of a bf16 or f16) they hold.
fn values_mut<T: Copy>(lines: &mut [Line]) -> &mut [T] {
    debug_assert!(64 % std::mem::size_of::<T>() == 0 && std::mem::align_of::<T>() <= 64);
    // SAFETY: `Line` is `repr(C)` around 64 bytes (align 64, no padding), which hold a whole
    // number of `T`s, suitably aligned; every bit pattern is a valid f32 or u16.
    unsafe {
        std::slice::from_raw_parts_mut(
            lines.as_mut_ptr().cast::<T>(),
            lines.len() * 64 / std::mem::size_of::<T>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kernel paths with a packed kernel that this CPU runs (none: nothing to compare).
    fn packed_paths() -> Vec<KernelPath> {
        let paths: Vec<KernelPath> = [KernelPath::Avx512, KernelPath::Avx2]
            .into_iter()
            .filter(|p| p.is_supported())
            .collect();
        if paths.is_empty() {
            eprintln!(
                "no AVX2 on this CPU: the packed kernel is not used here, nothing to compare"
            );
        }
        paths
    }

    fn max_diff(a: Tensor, b: Tensor) -> f32 {
        (a - b)
            .unwrap()
            .abs()
            .unwrap()
            .max_all()
            .unwrap()
            .to_scalar::<f32>()
            .unwrap()
    }

    #[test]
    fn matches_candles_matmul() {
        for path in packed_paths() {
            // Row counts across the 12- and 3-row tiles, k across the 256-deep slices, n with
            // a partial last panel (under and over 8 and 16 columns); x small enough to stream
            // the panels in memory order, and large enough (the last two) for the
            // k-slice-major order.
            for (m, k, n) in [
                (1, 768, 50257),
                (2, 64, 192),
                (8, 768, 2304),
                (13, 3072, 768),
                (16, 768, 1003),
                (5, 100, 7),
                (7, 30, 20),
                (3, 40, 50),
                (128, 300, 41),
                (25, 1, 33),
                (130, 600, 70),
                (128, 768, 2304),
            ] {
                let x = Tensor::randn(0f32, 1.0, (m, k), &Device::Cpu).unwrap();
                let w = Tensor::randn(0f32, 0.05, (n, k), &Device::Cpu).unwrap();
                let packed = PackedWeight::pack(&w, path).unwrap();
                assert_eq!((packed.dims(), packed.path()), ((n, k), path));
                let d = max_diff(
                    packed.matmul(&x).unwrap(),
                    x.matmul(&w.t().unwrap()).unwrap(),
                );
                assert!(d < 1e-4, "{path} {m}x{k}x{n}: max |diff| {d}");
            }
        }
    }

    #[test]
    fn half_type_weights_match_candles_matmul_on_the_same_rounded_values() {
        for path in packed_paths() {
            for dtype in [DType::BF16, DType::F16] {
                // A decode row, the 12- and 3-row tiles with remainders, a partial last panel, a
                // prefill-sized x (the k-slice-major order), and an odd k (bf16's pairs padded)
                // below and above the dot product's row count.
                for (m, k, n) in [
                    (1, 768, 2304),
                    (13, 3072, 768),
                    (5, 100, 7),
                    (16, 768, 1003),
                    (128, 768, 2304),
                    (1, 101, 40),
                    (9, 601, 40),
                ] {
                    let x = Tensor::randn(0f32, 1.0, (m, k), &Device::Cpu).unwrap();
                    let w = Tensor::randn(0f32, 0.05, (n, k), &Device::Cpu)
                        .unwrap()
                        .to_dtype(dtype)
                        .unwrap();
                    let packed = PackedWeight::pack(&w, path).unwrap();
                    assert_eq!(packed.dtype(), dtype);
                    // The packed weight holds half the bytes of an f32 one (k padded to pairs).
                    let stored_k = if packed.pairs() {
                        k.next_multiple_of(2)
                    } else {
                        k
                    };
                    assert_eq!(packed.panels.len() * 64, n.div_ceil(NR) * NR * stored_k * 2);
                    // Widening is exact, so the products are those of the rounded weights in f32;
                    // the dot product rounds x to bf16 as well, and its sums are f32.
                    let w32 = w.to_dtype(DType::F32).unwrap().t().unwrap();
                    let exact = x.matmul(&w32).unwrap();
                    let dot = packed.uses_dot_products(m);
                    let reference = if dot {
                        x.to_dtype(DType::BF16)
                            .unwrap()
                            .to_dtype(DType::F32)
                            .unwrap()
                            .matmul(&w32)
                            .unwrap()
                    } else {
                        exact.clone()
                    };
                    let ours = packed.matmul(&x).unwrap();
                    let d = max_diff(ours.clone(), reference);
                    assert!(
                        d < 1e-4,
                        "{path} {dtype:?} {m}x{k}x{n} (dot {dot}): max |diff| {d}"
                    );
                    if dot {
                        // x's rounding shows: the dot product did run.
                        assert!(
                            max_diff(ours, exact) > 1e-3,
                            "{path} {m}x{k}x{n}: no trace of bf16 activations"
                        );
                    }
                }
            }
        }
    }

    #[test]
    #[cfg(target_arch = "x86_64")]
    fn bf16_on_avx512_runs_the_dot_product_from_its_row_count_where_the_cpu_has_it() {
        if !KernelPath::Avx512.is_supported() {
            return eprintln!("no AVX-512 here: nothing to check");
        }
        let w = Tensor::zeros((40, 16), DType::BF16, &Device::Cpu).unwrap();
        let packed = PackedWeight::pack(&w, KernelPath::Avx512).unwrap();
        assert!(!packed.uses_dot_products(DOT_MIN_ROWS - 1));
        assert_eq!(
            packed.uses_dot_products(DOT_MIN_ROWS),
            std::arch::is_x86_feature_detected!("avx512bf16")
        );
        // Other types and the AVX2 path widen whatever the row count.
        let f16 = PackedWeight::pack(&w.to_dtype(DType::F16).unwrap(), KernelPath::Avx512).unwrap();
        let avx2 = PackedWeight::pack(&w, KernelPath::Avx2).unwrap();
        assert!(!f16.uses_dot_products(128) && !avx2.uses_dot_products(128));
    }

    #[test]
    fn a_weight_of_another_type_is_refused_by_name() {
        for path in packed_paths() {
            let w = Tensor::zeros((8, 16), DType::F64, &Device::Cpu).unwrap();
            let err = PackedWeight::pack(&w, path).unwrap_err().to_string();
            assert!(err.contains("F64") && err.contains("bf16"), "{err}");
        }
    }

    #[test]
    fn batched_products_match_candles() {
        let dev = Device::Cpu;
        for path in packed_paths() {
            // (batch, heads, m, k, n): a prefill's scores and a few decode steps'.
            for (b, h, m, k, n) in [(1, 12, 128, 64, 128), (3, 2, 1, 64, 37), (2, 1, 13, 5, 40)] {
                let a = Tensor::randn(0f32, 1.0, (b, h, m, k), &dev).unwrap();
                let bt = Tensor::randn(0f32, 1.0, (b, h, n, k), &dev).unwrap();
                let ours = batched_matmul(&a, &bt, Rhs::Transposed, 0.125, path).unwrap();
                let d = max_diff(
                    ours,
                    (&a * 0.125).unwrap().matmul(&bt.t().unwrap()).unwrap(),
                );
                assert!(
                    d < 1e-4,
                    "{path} scores {b}x{h}x{m}x{k}x{n}: max |diff| {d}"
                );

                let v = Tensor::randn(0f32, 1.0, (b, h, k, n), &dev).unwrap();
                let d = max_diff(
                    batched_matmul(&a, &v, Rhs::AsIs, 1.0, path).unwrap(),
                    a.matmul(&v).unwrap(),
                );
                assert!(
                    d < 1e-4,
                    "{path} values {b}x{h}x{m}x{k}x{n}: max |diff| {d}"
                );
            }
            let a = Tensor::zeros((2, 3, 4), candle_core::DType::F32, &dev).unwrap();
            let b = Tensor::zeros((2, 5, 4), candle_core::DType::F32, &dev).unwrap();
            assert!(batched_matmul(&a, &b, Rhs::AsIs, 1.0, path)
                .unwrap_err()
                .to_string()
                .contains("inner dimensions"));
        }
    }

    #[test]
    fn an_empty_inner_dimension_gives_zeros() {
        for path in packed_paths() {
            let x = Tensor::zeros((3, 0), candle_core::DType::F32, &Device::Cpu).unwrap();
            let w = Tensor::zeros((5, 0), candle_core::DType::F32, &Device::Cpu).unwrap();
            let y = PackedWeight::pack(&w, path).unwrap().matmul(&x).unwrap();
            assert_eq!(y.dims(), [3, 5]);
            assert_eq!(
                y.abs()
                    .unwrap()
                    .sum_all()
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap(),
                0.0
            );
        }
    }

    #[test]
    fn rejects_a_mismatched_inner_dimension() {
        for path in packed_paths() {
            let w = Tensor::zeros((8, 16), candle_core::DType::F32, &Device::Cpu).unwrap();
            let x = Tensor::zeros((2, 15), candle_core::DType::F32, &Device::Cpu).unwrap();
            let err = PackedWeight::pack(&w, path)
                .unwrap()
                .matmul(&x)
                .unwrap_err()
                .to_string();
            assert!(err.contains("15 columns"), "{err}");
        }
    }

    #[test]
    fn refuses_the_portable_path_and_a_path_the_cpu_lacks() {
        let w = Tensor::zeros((8, 16), candle_core::DType::F32, &Device::Cpu).unwrap();
        let err = PackedWeight::pack(&w, KernelPath::Portable)
            .unwrap_err()
            .to_string();
        assert!(err.contains("portable") && err.contains("gemm"), "{err}");
        if let Some(missing) = [KernelPath::Avx512, KernelPath::Avx2]
            .into_iter()
            .find(|p| !p.is_supported())
        {
            let err = PackedWeight::pack(&w, missing).unwrap_err().to_string();
            assert!(
                err.contains("lacks") && err.contains(missing.name()),
                "{err}"
            );
        }
    }
}
