//! The quantized dot products: one row of `W` (`Q8_0`, `Q4_0` or `Q1_0` blocks, as stored)
//! against every row of an activation quantized to 8-bit blocks of 32 ([`super::ActQ8`]).
//!
//! For each 32 weights the three types give 32 signed bytes: `Q8_0` its codes; `Q4_0` its
//! nibbles minus 8 (the low nibbles are weights 0–15, the high ones 16–31); `Q1_0` `+1` for a
//! set bit and `−1` for a clear one (bit `j % 8` of byte `j / 8`), a `Q1_0` block of 128 being
//! four such groups under one scale. The integer dot product of those bytes with the
//! activation's 32 codes, times the weight block's scale and the activation block's, is the
//! block's share of the output. The AVX2 kernel computes the integer products as
//! `|w| · sign(x, w)` (an unsigned by signed byte product, what `vpmaddubsw` takes), 8 lanes of
//! 32-bit sums, and folds each block's scales into an f32 multiply-add; up to [`MR`] rows of `x`
//! share each decoded weight block. With AVX-512 VNNI (`vpdpbusd`) every type runs 512 bits
//! wide, in tiles of up to 4 weight rows by [`MR`] activation rows that share each load:
//! `Q8_0` and `Q4_0` two blocks a vector, the weights made unsigned by an offset whose product
//! with the activation sums is taken back exactly (`x86::rows_512`); `Q1_0` without bytes, its
//! sign bits masking the activation codes directly, 64 at a time (`x86::q1_0_rows_512`).

use super::{ActQ8, GgmlType, Kernel, ACT_BLOCK};

/// Rows of `x` that share one decoding of a weight block.
pub const MR: usize = 4;

/// Whether this CPU has AVX-512 VNNI (with BW and VL), which the `avx512` kernels use.
pub fn has_avx512_vnni() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx512f")
            && has!("avx512bw")
            && has!("avx512vl")
            && has!("avx512vnni")
            && has!("avx2")
            && has!("fma")
            && has!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Whether this CPU has what the AVX2 kernels use.
pub fn has_avx2() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        has!("avx2") && has!("fma") && has!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Where a call's products go: the product of the call's weight row `j` and activation row `r`
/// at `r · stride + j` from its start. A task owns a band of columns (its weight rows) of the
/// `[m, n]` output, so the output is written in place, with no transposition after.
pub struct Out<'a> {
    ptr: *mut f32,
    stride: usize,
    rows: usize,
    m: usize,
    _out: std::marker::PhantomData<&'a mut [f32]>,
}

impl<'a> Out<'a> {
    /// All of `out`, `[m, rows]` row-major.
    pub fn new(out: &'a mut [f32], m: usize, rows: usize) -> Self {
        assert_eq!(out.len(), m * rows);
        Self {
            ptr: out.as_mut_ptr(),
            stride: rows,
            rows,
            m,
            _out: std::marker::PhantomData,
        }
    }

    /// Columns `j0 .. j0 + rows` of a `[m, stride]` row-major output at `base`.
    ///
    /// # Safety
    /// `base` points to `m · stride` writable f32 for `'a`, `j0 + rows ≤ stride`, and nothing
    /// else reads or writes those columns while this view lives.
    pub unsafe fn columns(base: *mut f32, stride: usize, j0: usize, rows: usize, m: usize) -> Self {
        assert!(j0 + rows <= stride);
        Self {
            // SAFETY: j0 ≤ stride, inside the output (the caller's promise).
            ptr: unsafe { base.add(j0) },
            stride,
            rows,
            m,
            _out: std::marker::PhantomData,
        }
    }

    /// The products of weight rows `j .. j + 4` and activation row `r` (adjacent in memory).
    #[cfg(target_arch = "x86_64")]
    #[inline]
    #[target_feature(enable = "sse")]
    fn set4(&mut self, j: usize, r: usize, v: std::arch::x86_64::__m128) {
        assert!(j + 4 <= self.rows && r < self.m);
        // SAFETY: (j .. j + 4, r) is inside the view (asserted), four adjacent values of row r.
        unsafe { std::arch::x86_64::_mm_storeu_ps(self.ptr.add(r * self.stride + j), v) };
    }

    /// The product of weight row `j` and activation row `r`.
    #[inline]
    pub fn set(&mut self, j: usize, r: usize, v: f32) {
        assert!(j < self.rows && r < self.m);
        // SAFETY: (j, r) is inside the view (asserted), which `new` or `columns` promise is
        // this view's own memory.
        unsafe { *self.ptr.add(r * self.stride + j) = v };
    }
}

/// For each row `j` of `w` (whole rows of `W` in `ty`'s blocks, one after the other) and every
/// row `r` of `act` (`m` rows): `w_j · x_r` into `out` at `(j, r)`. The CPU's features are
/// checked once a call; a SIMD kernel it lacks falls back to the portable loop (the choice is
/// made at load, [`Kernel::choose`]; this only guards it).
pub fn rows_times_x(kernel: Kernel, ty: GgmlType, w: &[u8], act: &ActQ8, out: &mut Out) {
    let row = ty.row_bytes(act.k);
    let n = w.len() / row.max(1);
    assert!(out.rows == n && out.m == act.m);
    #[cfg(target_arch = "x86_64")]
    {
        if kernel == Kernel::Avx512Vnni && ty == GgmlType::Q1_0 && has_avx512_vnni() {
            // SAFETY: the CPU has the features the kernel is compiled for (checked above); `w`
            // holds whole rows of `Q1_0` blocks for `act.k` values and `out` one value for each
            // of those rows and every row of `act` (asserted above).
            unsafe { x86::q1_0_rows_512(w, act, out) };
            return;
        }
        if kernel == Kernel::Avx512Vnni && has_avx512_vnni() {
            // SAFETY: as above; `ty` is Q8_0 or Q4_0.
            unsafe { x86::rows_512(ty, w, act, out) };
            return;
        }
    }
    // One weight row at a time, its `m` products gathered here.
    let mut o = vec![0f32; act.m];
    for (j, wj) in w.chunks_exact(row).enumerate() {
        #[cfg(target_arch = "x86_64")]
        if kernel == Kernel::Avx2 && has_avx2() {
            // SAFETY: the CPU has AVX2, FMA and F16C (checked); `wj` holds whole blocks of `ty`
            // for `act.k` values, as `x86::rows_avx2` reads.
            unsafe { x86::rows_avx2(ty, wj, act, &mut o) };
        } else {
            portable(ty, wj, act, &mut o);
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = kernel;
            portable(ty, wj, act, &mut o);
        }
        for (r, v) in o.iter().enumerate() {
            out.set(j, r, *v);
        }
    }
}

/// One row of activations to 8-bit blocks of 32, 16 values a vector: the same codes and scales
/// as [`ActQ8::quantize`]'s scalar loop, bit for bit (the scale and its inverse by the same
/// divisions, halves rounded away from zero by comparing the fraction the truncation left, a NaN
/// to 0 as the scalar cast makes it).
///
/// # Safety
/// The CPU has AVX-512 F and BW; `x.len()` is a multiple of 32, `q` as long, `d` a 32nd of it.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
pub unsafe fn quantize_row_512(x: &[f32], q: &mut [i8], d: &mut [f32]) {
    use std::arch::x86_64::*;
    assert!(x.len() == q.len() && x.len() == d.len() * ACT_BLOCK);
    for ((xb, qb), db) in x
        .chunks_exact(ACT_BLOCK)
        .zip(q.chunks_exact_mut(ACT_BLOCK))
        .zip(d.iter_mut())
    {
        // SAFETY: each block is 32 f32 (two vectors) and 32 codes (chunks_exact).
        let (v0, v1) = unsafe {
            (
                _mm512_loadu_ps(xb.as_ptr()),
                _mm512_loadu_ps(xb.as_ptr().add(16)),
            )
        };
        // `max` returns its second operand when either is NaN: the running maximum, so a NaN
        // is passed over as `f32::max` passes it over.
        let m = _mm512_max_ps(_mm512_abs_ps(v1), _mm512_abs_ps(v0));
        let amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), m));
        let amax = if amax.is_nan() { 0.0 } else { amax };
        let scale = amax / 127.0;
        let inv = _mm512_set1_ps(if scale == 0.0 { 0.0 } else { 1.0 / scale });
        let code = |v: __m512| {
            let y = _mm512_mul_ps(v, inv);
            let t = _mm512_roundscale_ps::<{ _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC }>(y);
            let f = _mm512_sub_ps(y, t);
            let up = _mm512_cmp_ps_mask::<_CMP_GE_OQ>(f, _mm512_set1_ps(0.5));
            let down = _mm512_cmp_ps_mask::<_CMP_LE_OQ>(f, _mm512_set1_ps(-0.5));
            let r = _mm512_mask_add_ps(t, up, t, _mm512_set1_ps(1.0));
            let r = _mm512_mask_sub_ps(r, down, r, _mm512_set1_ps(1.0));
            let r = _mm512_min_ps(
                _mm512_max_ps(r, _mm512_set1_ps(-127.0)),
                _mm512_set1_ps(127.0),
            );
            let ordered = _mm512_cmp_ps_mask::<_CMP_ORD_Q>(y, y);
            _mm512_cvtepi32_epi8(_mm512_maskz_cvttps_epi32(ordered, r))
        };
        let (c0, c1) = (code(v0), code(v1));
        // SAFETY: 32 codes (chunks_exact).
        unsafe {
            _mm_storeu_si128(qb.as_mut_ptr() as *mut __m128i, c0);
            _mm_storeu_si128(qb.as_mut_ptr().add(16) as *mut __m128i, c1);
        }
        *db = scale;
    }
}

/// [`ActQ8::pair_neg_sums`] and [`ActQ8::pair_scales`] of rows of `k` codes `q` with their
/// block scales `d`.
///
/// # Safety
/// The CPU has AVX-512 F, BW and VNNI; `q` is whole rows of `k` (a multiple of 32) codes, `d`
/// their scales, and `neg` and `scales` hold 16 lanes for each row's `k / 64` pairs, rounded up.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512vnni")]
pub unsafe fn pair_sums_512(q: &[i8], d: &[f32], k: usize, neg: &mut [i32], scales: &mut [f32]) {
    use std::arch::x86_64::*;
    let nb = k / ACT_BLOCK;
    let steps = nb.div_ceil(2);
    let rows = q.len() / k.max(1);
    assert!(d.len() == rows * nb && neg.len() == rows * steps * 16 && scales.len() == neg.len());
    for r in 0..rows {
        for s in 0..steps {
            let (b, two) = (2 * s, 2 * s + 1 < nb);
            let at = r * k + b * ACT_BLOCK;
            let mask: u64 = if two { u64::MAX } else { 0xFFFF_FFFF };
            // SAFETY: block b (and b + 1 when it exists) of row r lies inside `q`; the masked
            // load reads no byte past the row's last block.
            let x = unsafe { _mm512_maskz_loadu_epi8(mask, q.as_ptr().add(at)) };
            let sums = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(1), x);
            let (d0, d1) = (d[r * nb + b], if two { d[r * nb + b + 1] } else { 0.0 });
            let dx = _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(d0), _mm512_set1_ps(d1));
            let o = (r * steps + s) * 16;
            // SAFETY: lanes o .. o + 16 lie inside both outputs (asserted above).
            unsafe {
                _mm512_storeu_si512(
                    neg.as_mut_ptr().add(o) as *mut _,
                    _mm512_sub_epi32(_mm512_setzero_si512(), sums),
                );
                _mm512_storeu_ps(scales.as_mut_ptr().add(o), dx);
            }
        }
    }
}

/// The 32 signed weights of activation block `b` of a row, and the weight block's scale.
fn weights32(ty: GgmlType, w: &[u8], b: usize, q: &mut [i32; ACT_BLOCK]) -> f32 {
    let f16_at = |at: usize| half::f16::from_le_bytes([w[at], w[at + 1]]).to_f32();
    match ty {
        GgmlType::Q8_0 => {
            let blk = &w[b * 34..(b + 1) * 34];
            for (qv, &c) in q.iter_mut().zip(&blk[2..]) {
                *qv = c as i8 as i32;
            }
            f16_at(b * 34)
        }
        GgmlType::Q4_0 => {
            let qs = &w[b * 18 + 2..(b + 1) * 18];
            for j in 0..16 {
                q[j] = (qs[j] & 0x0F) as i32 - 8;
                q[j + 16] = (qs[j] >> 4) as i32 - 8;
            }
            f16_at(b * 18)
        }
        GgmlType::Q1_0 => {
            let (wb, sub) = (b / 4, b % 4);
            let bits = &w[wb * 18 + 2 + sub * 4..wb * 18 + 2 + sub * 4 + 4];
            for (j, qv) in q.iter_mut().enumerate() {
                *qv = if (bits[j / 8] >> (j % 8)) & 1 == 1 {
                    1
                } else {
                    -1
                };
            }
            f16_at(wb * 18)
        }
        _ => unreachable!("our kernels take Q8_0, Q4_0 and Q1_0"),
    }
}

/// The scalar kernel: every CPU.
fn portable(ty: GgmlType, w: &[u8], act: &ActQ8, out: &mut [f32]) {
    let nb = act.k / ACT_BLOCK;
    let mut q = [0i32; ACT_BLOCK];
    out.fill(0.0);
    for b in 0..nb {
        let dw = weights32(ty, w, b, &mut q);
        for (r, o) in out.iter_mut().enumerate() {
            let xq = &act.q[r * act.k + b * ACT_BLOCK..r * act.k + (b + 1) * ACT_BLOCK];
            let dot: i32 = q.iter().zip(xq).map(|(&a, &c)| a * c as i32).sum();
            *o += dot as f32 * (dw * act.d[r * nb + b]);
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::{ActQ8, GgmlType, Out, ACT_BLOCK, MR};

    /// The weight types as the kernels' const parameter (each copy decodes one type).
    const Q8_0: u8 = 0;
    const Q4_0: u8 = 1;
    const Q1_0: u8 = 2;

    /// One f16 (its bits) as f32.
    #[inline]
    #[target_feature(enable = "avx2,f16c")]
    fn f16_to_f32(bits: u16) -> f32 {
        _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(bits as i32)))
    }

    /// The 32 signed weights of activation block `b`, and the weight block's scale.
    ///
    /// # Safety
    /// `w` holds the row's blocks for at least `b + 1` activation blocks.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn weights32<const T: u8>(w: *const u8, b: usize) -> (__m256i, f32) {
        // SAFETY (every block below): each read lies inside block `b`'s bytes (the caller's
        // promise); the loads are unaligned ones.
        match T {
            // SAFETY: block `b`'s 34 bytes (scale and 32 weights) are inside `w` (the caller's promise).
            Q8_0 => unsafe {
                let blk = w.add(b * 34);
                let d = f16_to_f32(u16::from_le_bytes([*blk, *blk.add(1)]));
                (_mm256_loadu_si256(blk.add(2) as *const __m256i), d)
            },
            // SAFETY: block `b`'s 18 bytes (scale and 16 packed bytes) are inside `w` (the caller's promise).
            Q4_0 => unsafe {
                let blk = w.add(b * 18);
                let d = f16_to_f32(u16::from_le_bytes([*blk, *blk.add(1)]));
                let lo = _mm_loadu_si128(blk.add(2) as *const __m128i);
                let hi = _mm_srli_epi16(lo, 4);
                let both = _mm256_and_si256(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(0x0F));
                (_mm256_sub_epi8(both, _mm256_set1_epi8(8)), d)
            },
            // SAFETY: the 18-byte block holding group `b` is inside `w` (the caller's promise).
            _ => unsafe {
                // Q1_0: four groups of 32 under one scale.
                let blk = w.add((b / 4) * 18);
                let d = f16_to_f32(u16::from_le_bytes([*blk, *blk.add(1)]));
                let bits = (blk.add(2 + (b % 4) * 4) as *const u32).read_unaligned();
                // Byte i of the vector gets byte i / 8 of `bits`, then its own bit i % 8.
                let spread = _mm256_shuffle_epi8(
                    _mm256_set1_epi32(bits as i32),
                    _mm256_setr_epi8(
                        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3,
                        3, 3, 3, 3, 3, 3, 3,
                    ),
                );
                let mask = _mm256_set1_epi64x(0x8040_2010_0804_0201u64 as i64);
                let set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, mask), mask);
                // set: -1 (all ones) → +1; clear: 0 → -1.
                let pm = _mm256_sub_epi8(
                    _mm256_and_si256(set, _mm256_set1_epi8(2)),
                    _mm256_set1_epi8(1),
                );
                (pm, d)
            },
        }
    }

    /// Eight 32-bit sums of `w · x` (32 signed bytes each).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    fn dot_avx2(aw: __m256i, w: __m256i, x: __m256i) -> __m256i {
        let sx = _mm256_sign_epi8(x, w);
        _mm256_madd_epi16(_mm256_maddubs_epi16(aw, sx), _mm256_set1_epi16(1))
    }

    #[inline]
    #[target_feature(enable = "avx2")]
    fn hsum(v: __m256) -> f32 {
        let s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
        let s = _mm_add_ps(s, _mm_movehl_ps(s, s));
        let s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
        _mm_cvtss_f32(s)
    }

    /// The kernel for one instruction set: `$rows` (every row of `act`, `MR` at a time) and
    /// `$group` (rows `r0 .. r0 + R`), compiled with `$features`, the integer dot product `$dot`.
    /// Written once as a macro so each instruction set's copy is compiled with its own features
    /// and every helper inlines into it (a helper with features its caller lacks is a call).
    macro_rules! kernel {
        ($rows:ident, $group:ident, $features:literal, $dot:ident) => {
            /// `out[r] = w · x_r` for every row of `act`.
            ///
            /// # Safety
            /// The CPU has the features this copy is compiled for; `w` holds the row's whole
            /// blocks for `act.k` values.
            #[target_feature(enable = $features)]
            pub unsafe fn $rows(ty: GgmlType, w: &[u8], act: &ActQ8, out: &mut [f32]) {
                let mut r = 0;
                while r < act.m {
                    let rows = (act.m - r).min(MR);
                    // SAFETY: as this function's (the rows r..r + rows exist).
                    unsafe {
                        match (ty, rows) {
                            (GgmlType::Q8_0, 4) => $group::<4, Q8_0>(w, act, r, out),
                            (GgmlType::Q8_0, 3) => $group::<3, Q8_0>(w, act, r, out),
                            (GgmlType::Q8_0, 2) => $group::<2, Q8_0>(w, act, r, out),
                            (GgmlType::Q8_0, _) => $group::<1, Q8_0>(w, act, r, out),
                            (GgmlType::Q4_0, 4) => $group::<4, Q4_0>(w, act, r, out),
                            (GgmlType::Q4_0, 3) => $group::<3, Q4_0>(w, act, r, out),
                            (GgmlType::Q4_0, 2) => $group::<2, Q4_0>(w, act, r, out),
                            (GgmlType::Q4_0, _) => $group::<1, Q4_0>(w, act, r, out),
                            (_, 4) => $group::<4, Q1_0>(w, act, r, out),
                            (_, 3) => $group::<3, Q1_0>(w, act, r, out),
                            (_, 2) => $group::<2, Q1_0>(w, act, r, out),
                            (_, _) => $group::<1, Q1_0>(w, act, r, out),
                        }
                    }
                    r += rows;
                }
            }

            /// Rows `r0 .. r0 + R` of `act`.
            ///
            /// # Safety
            /// As the rows function's, and those rows exist.
            #[inline]
            #[target_feature(enable = $features)]
            unsafe fn $group<const R: usize, const T: u8>(
                w: &[u8],
                act: &ActQ8,
                r0: usize,
                out: &mut [f32],
            ) {
                let nb = act.k / ACT_BLOCK;
                // Two accumulators a row (even and odd blocks): two chains of multiply-adds,
                // each indexed by a constant so both stay in registers.
                let mut acc = [[_mm256_setzero_ps(); 2]; R];
                let (xq, xd) = (act.q.as_ptr(), &act.d[r0 * nb..(r0 + R) * nb]);
                // As the 512-bit Q1_0 kernel does: a prefetch `PREFETCH_AHEAD` past the block
                // read (the rows of a task lie one after the other, so that is the next rows').
                let ahead = w.as_ptr().wrapping_add(PREFETCH_AHEAD);
                // Block `b`'s share of every row, into accumulator `$which`.
                macro_rules! block {
                    ($b:expr, $which:literal) => {{
                        let b = $b;
                        let at = match T {
                            Q8_0 => b * 34,
                            Q4_0 => b * 18,
                            _ => b / 4 * 18,
                        };
                        _mm_prefetch::<_MM_HINT_T0>(ahead.wrapping_add(at) as *const i8);
                        // SAFETY: block b < nb lies in `w` (the caller's promise).
                        let (wq, dw) = unsafe { weights32::<T>(w.as_ptr(), b) };
                        let aw = _mm256_sign_epi8(wq, wq);
                        for (i, a) in acc.iter_mut().enumerate() {
                            let r = r0 + i;
                            // SAFETY: row r exists; its block b is 32 codes inside `act.q`.
                            let x = unsafe {
                                _mm256_loadu_si256(
                                    xq.add(r * act.k + b * ACT_BLOCK) as *const __m256i
                                )
                            };
                            let p = $dot(aw, wq, x);
                            let s = _mm256_set1_ps(dw * xd[i * nb + b]);
                            a[$which] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), s, a[$which]);
                        }
                    }};
                }
                let mut b = 0;
                while b + 1 < nb {
                    block!(b, 0);
                    block!(b + 1, 1);
                    b += 2;
                }
                if b < nb {
                    block!(b, 0);
                }
                for (i, a) in acc.iter().enumerate() {
                    out[r0 + i] = hsum(_mm256_add_ps(a[0], a[1]));
                }
            }
        };
    }

    /// How far ahead of the weight bytes they read the kernels prefetch (measured on the 512-bit
    /// `Q1_0` kernel: 4 to 12 KiB about alike, none half as well; on `Q8_0` and `Q4_0`, 4 to
    /// 32 KiB about alike).
    const PREFETCH_AHEAD: usize = 8192;

    /// `Q1_0` rows at 512 bits: `out[j·m + r] = w_j · x_r` for every row `j` of `w` (whole
    /// rows of `Q1_0` blocks) and every row `r` of `act`.
    ///
    /// A weight is `±1` times its block's scale, so a 4-byte lane's integer product is
    /// `2 · Σ_{bits set} x − Σ x`. The 8 bytes of sign bits for 64 weights are a byte mask: a
    /// masked move keeps the codes whose bit is set, and `vpdpbusd` adds them, times 2, onto
    /// the lanes' `−Σ x` (computed once per activation vector, shared by every weight row of
    /// the tile): exactly the integers the AVX2 kernel's sign trick gives, without turning
    /// bits into bytes. Lanes 0–7 hold one 32-code group, 8–15 the next, so one vector of the
    /// two groups' activation scales turns a vector into f32, and the weight block's scale
    /// (one f16 conversion per 128 weights) multiplies the block's two vectors at once. A tile
    /// of up to four weight rows by up to [`MR`] activation rows shares each load.
    ///
    /// # Safety
    /// The CPU has AVX-512 F, BW, VL and VNNI, AVX2, FMA and F16C; `act.k` is a multiple of 128;
    /// `w` holds whole rows of `act.k / 128` blocks of 18 bytes; `out` holds `act.m` values for
    /// each of those rows.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    pub unsafe fn q1_0_rows_512(w: &[u8], act: &ActQ8, out: &mut Out) {
        let row = act.k / 128 * 18;
        let n = w.len() / row.max(1);
        let m = act.m;
        assert!(act.k.is_multiple_of(128) && out.rows >= n && out.m == m);
        let mut j = 0;
        while j < n {
            let nr = if n - j >= 4 { 4 } else { 1 };
            let mut r = 0;
            while r < m {
                let mr = (m - r).min(MR);
                // SAFETY: weight rows j..j + nr and activation rows r..r + mr exist (the loop
                // bounds), and the rest is this function's promise.
                unsafe {
                    match (nr, mr) {
                        (4, 4) => q1_0_tile::<4, 4>(w, row, j, act, r, out),
                        (4, 3) => q1_0_tile::<4, 3>(w, row, j, act, r, out),
                        (4, 2) => q1_0_tile::<4, 2>(w, row, j, act, r, out),
                        (4, _) => q1_0_tile::<4, 1>(w, row, j, act, r, out),
                        (_, 4) => q1_0_tile::<1, 4>(w, row, j, act, r, out),
                        (_, 3) => q1_0_tile::<1, 3>(w, row, j, act, r, out),
                        (_, 2) => q1_0_tile::<1, 2>(w, row, j, act, r, out),
                        (_, _) => q1_0_tile::<1, 1>(w, row, j, act, r, out),
                    }
                }
                r += mr;
            }
            j += nr;
        }
    }

    /// Weight rows `j0 .. j0 + NR` against activation rows `r0 .. r0 + R`.
    ///
    /// # Safety
    /// As [`q1_0_rows_512`]'s, and those rows exist.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn q1_0_tile<const NR: usize, const R: usize>(
        w: &[u8],
        row: usize,
        j0: usize,
        act: &ActQ8,
        r0: usize,
        out: &mut Out,
    ) {
        let k = act.k;
        let (nb, groups) = (k / 128, k / ACT_BLOCK);
        let (zero, ones, twos) = (
            _mm512_setzero_si512(),
            _mm512_set1_epi8(1),
            _mm512_set1_epi8(2),
        );
        // Lanes 0–7 take the first of four group scales, 8–15 the second (third and fourth).
        let lo = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        let hi = _mm512_setr_epi32(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
        let mut acc = [[_mm512_setzero_ps(); NR]; R];
        let (wp, xq, xd) = (w.as_ptr(), act.q.as_ptr(), act.d.as_ptr());
        // A model's weights stream from memory once a token, and the hardware prefetchers
        // alone left this loop waiting on them (3 GB/s at one 7 MB matrix of a hundred called
        // in turn, 6 to 10 with this): each block asks for the bytes as far past the next tile's
        // start as this tile has read of its own, `PREFETCH_AHEAD` further on, so the lines it
        // asks for run on without a gap. A prefetch never faults, so past the end is harmless.
        let ahead = wp.wrapping_add((j0 + NR) * row + PREFETCH_AHEAD);
        for b in 0..nb {
            let p = ahead.wrapping_add(b * NR * 18);
            _mm_prefetch::<_MM_HINT_T0>(p as *const i8);
            _mm_prefetch::<_MM_HINT_T0>(p.wrapping_add(64) as *const i8);
            let mut dw = [_mm512_setzero_ps(); NR];
            let mut bits = [[0u64; 2]; NR];
            for (i, (d, mk)) in dw.iter_mut().zip(bits.iter_mut()).enumerate() {
                // SAFETY: row j0 + i's block b (18 bytes) lies inside `w` (the caller's promise).
                unsafe {
                    let blk = wp.add((j0 + i) * row + b * 18);
                    *d = _mm512_set1_ps(f16_to_f32(u16::from_le_bytes([*blk, *blk.add(1)])));
                    mk[0] = (blk.add(2) as *const u64).read_unaligned();
                    mk[1] = (blk.add(10) as *const u64).read_unaligned();
                }
            }
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let at = (r0 + r) * k + b * 128;
                // SAFETY: row r0 + r's codes b·128 .. b·128 + 128 and its four scales from
                // group 4b lie inside `act` (the row exists, k is a multiple of 128).
                let (x0, x1, d4) = unsafe {
                    (
                        _mm512_loadu_si512(xq.add(at) as *const _),
                        _mm512_loadu_si512(xq.add(at + 64) as *const _),
                        _mm512_castps128_ps512(_mm_loadu_ps(xd.add((r0 + r) * groups + b * 4))),
                    )
                };
                let neg0 = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, ones, x0));
                let neg1 = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, ones, x1));
                let (dx0, dx1) = (_mm512_permutexvar_ps(lo, d4), _mm512_permutexvar_ps(hi, d4));
                for (i, a) in acc_r.iter_mut().enumerate() {
                    let p0 = _mm512_dpbusd_epi32(neg0, twos, _mm512_maskz_mov_epi8(bits[i][0], x0));
                    let p1 = _mm512_dpbusd_epi32(neg1, twos, _mm512_maskz_mov_epi8(bits[i][1], x1));
                    let blk = _mm512_fmadd_ps(
                        _mm512_cvtepi32_ps(p1),
                        dx1,
                        _mm512_mul_ps(_mm512_cvtepi32_ps(p0), dx0),
                    );
                    *a = _mm512_fmadd_ps(blk, dw[i], *a);
                }
            }
        }
        for (r, a) in acc.iter().enumerate() {
            for (i, v) in a.iter().enumerate() {
                out.set(j0 + i, r0 + r, _mm512_reduce_add_ps(*v));
            }
        }
    }

    kernel!(rows_avx2, group_avx2, "avx2,fma,f16c", dot_avx2);

    /// How far ahead of the weight bytes they read the 512-bit `Q8_0` / `Q4_0` tiles prefetch.
    const PREFETCH_AHEAD_L2: usize = 16384;

    /// Weight rows a 512-bit `Q8_0` / `Q4_0` tile takes at once.
    pub const NR: usize = 4;

    /// `Q8_0` and `Q4_0` rows at 512 bits: `out[j·m + r] = w_j · x_r` for every row `j` of `w`
    /// (whole rows of `ty`'s blocks) and every row `r` of `act`.
    ///
    /// A tile of up to [`NR`] weight rows by up to [`MR`] activation rows: each weight block is
    /// decoded once a tile and each activation vector loaded once a tile, so a tile of 4 × 4
    /// does 16 products per 8 loads. A vector holds two blocks of 32 (lanes 0–7 the first,
    /// 8–15 the second). `vpdpbusd` multiplies unsigned by signed bytes, so the weights are made
    /// unsigned by an offset: `Q4_0`'s nibbles are its codes plus 8 as stored, and a `Q8_0`
    /// code plus 128 is the code with its top bit flipped. The offset times the activation
    /// block's sum, computed once per activation vector and shared by the tile's weight rows, is
    /// the accumulator's starting value with its sign turned, so the integer sums are exactly
    /// `Σ w·x`. Each lane's sum then takes both blocks' scales in one f32 multiply-add.
    ///
    /// # Safety
    /// The CPU has AVX-512 F, BW, VL and VNNI, AVX2, FMA and F16C; `ty` is `Q8_0` or `Q4_0`;
    /// `w` holds whole rows of `ty`'s blocks for `act.k` values; `out` holds `act.m` values for
    /// each of those rows.
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    pub unsafe fn rows_512(ty: GgmlType, w: &[u8], act: &ActQ8, out: &mut Out) {
        let row = ty.row_bytes(act.k);
        let n = w.len() / row.max(1);
        let m = act.m;
        assert!(matches!(ty, GgmlType::Q8_0 | GgmlType::Q4_0) && out.rows >= n && out.m == m);
        assert_eq!(
            act.pair_neg_sums.len(),
            m * (act.k / ACT_BLOCK).div_ceil(2) * 16
        );
        let mut j = 0;
        while j < n {
            let nr = if n - j >= NR { NR } else { 1 };
            let mut r = 0;
            while r < m {
                let mr = (m - r).min(MR);
                macro_rules! go {
                    ($t:ident) => {
                        // SAFETY: weight rows j..j + nr and activation rows r..r + mr exist (the
                        // loop bounds), and the rest is this function's promise.
                        unsafe {
                            match (nr, mr) {
                                (NR, 4) => tile_512::<$t, NR, 4>(w, row, j, act, r, out),
                                (NR, 3) => tile_512::<$t, NR, 3>(w, row, j, act, r, out),
                                (NR, 2) => tile_512::<$t, NR, 2>(w, row, j, act, r, out),
                                (NR, _) => tile_512::<$t, NR, 1>(w, row, j, act, r, out),
                                (_, 4) => tile_512::<$t, 1, 4>(w, row, j, act, r, out),
                                (_, 3) => tile_512::<$t, 1, 3>(w, row, j, act, r, out),
                                (_, 2) => tile_512::<$t, 1, 2>(w, row, j, act, r, out),
                                (_, _) => tile_512::<$t, 1, 1>(w, row, j, act, r, out),
                            }
                        }
                    };
                }
                if ty == GgmlType::Q8_0 {
                    go!(Q8_0)
                } else {
                    go!(Q4_0)
                }
                r += mr;
            }
            j += nr;
        }
    }

    /// Weight rows `j0 .. j0 + NR` against activation rows `r0 .. r0 + R`.
    ///
    /// # Safety
    /// As [`rows_512`]'s, and those rows exist.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn tile_512<const T: u8, const NR: usize, const R: usize>(
        w: &[u8],
        row: usize,
        j0: usize,
        act: &ActQ8,
        r0: usize,
        out: &mut Out,
    ) {
        let k = act.k;
        let nb = k / ACT_BLOCK;
        let mut acc = [[_mm512_setzero_ps(); NR]; R];
        let mut b = 0;
        while b + 1 < nb {
            // SAFETY: blocks b and b + 1 lie inside every row of the tile (b + 1 < nb).
            unsafe { step_512::<T, NR, R, true>(w, row, j0, act, r0, b, &mut acc) };
            b += 2;
        }
        if b < nb {
            // SAFETY: block b lies inside every row of the tile (b < nb).
            unsafe { step_512::<T, NR, R, false>(w, row, j0, act, r0, b, &mut acc) };
        }
        for (r, a) in acc.iter().enumerate() {
            if NR == 4 {
                out.set4(j0, r0 + r, reduce4(a[0], a[1], a[2], a[3]));
            } else {
                for (i, v) in a.iter().enumerate() {
                    out.set(j0 + i, r0 + r, _mm512_reduce_add_ps(*v));
                }
            }
        }
    }

    /// The sums of four vectors' lanes, together: pairs of vectors are interleaved and added
    /// until each 128-bit lane holds one partial sum of each, then the four lanes are added
    /// (13 instructions where four separate reductions take about 30).
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    fn reduce4(a0: __m512, a1: __m512, a2: __m512, a3: __m512) -> __m128 {
        // Per 128-bit lane: [a0₀+a0₂, a1₀+a1₂, a0₁+a0₃, a1₁+a1₃].
        let t01 = _mm512_add_ps(_mm512_unpacklo_ps(a0, a1), _mm512_unpackhi_ps(a0, a1));
        let t23 = _mm512_add_ps(_mm512_unpacklo_ps(a2, a3), _mm512_unpackhi_ps(a2, a3));
        // Per 128-bit lane: [a0, a1, a2, a3] partial sums.
        let u = _mm512_add_ps(
            _mm512_castpd_ps(_mm512_unpacklo_pd(
                _mm512_castps_pd(t01),
                _mm512_castps_pd(t23),
            )),
            _mm512_castpd_ps(_mm512_unpackhi_pd(
                _mm512_castps_pd(t01),
                _mm512_castps_pd(t23),
            )),
        );
        let v = _mm256_add_ps(
            _mm512_castps512_ps256(u),
            _mm256_castpd_ps(_mm512_extractf64x4_pd::<1>(_mm512_castps_pd(u))),
        );
        _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v))
    }

    /// Blocks `b` and `b + 1` (`TWO`), or `b` alone, of a tile, into `acc`.
    ///
    /// # Safety
    /// As [`tile_512`]'s, and the blocks exist.
    #[inline]
    #[allow(
        clippy::too_many_arguments,
        reason = "the tile's coordinates, each a plain index"
    )]
    #[target_feature(enable = "avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512vnni")]
    unsafe fn step_512<const T: u8, const NR: usize, const R: usize, const TWO: bool>(
        w: &[u8],
        row: usize,
        j0: usize,
        act: &ActQ8,
        r0: usize,
        b: usize,
        acc: &mut [[__m512; NR]; R],
    ) {
        let (k, nb) = (act.k, act.k / ACT_BLOCK);
        let bs = if T == Q8_0 { 34 } else { 18 };
        let (wp, xq) = (w.as_ptr(), act.q.as_ptr());
        // Lanes 0–7 take the first of two scales, 8–15 the second.
        let halves = _mm512_setr_epi32(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
        // As the other kernels, ask for the bytes well past the ones read, so the stream of
        // weights runs ahead of the tile (past the end is harmless: a prefetch never faults);
        // into L2 only, which takes more misses in flight than L1 (measured streaming 141 MB of
        // Q8_0 on one thread: about 7% faster than `_MM_HINT_T0`, alike from 8 to 32 KiB).
        let ahead = wp.wrapping_add((j0 + NR) * row + PREFETCH_AHEAD_L2 + b * NR * bs);
        for c in 0..(NR * bs * 2).div_ceil(64) {
            _mm_prefetch::<_MM_HINT_T1>(ahead.wrapping_add(c * 64) as *const i8);
        }
        let mut wu = [_mm512_setzero_si512(); NR];
        let mut dw = [_mm512_setzero_ps(); NR];
        for i in 0..NR {
            // SAFETY: row j0 + i's blocks b (and b + 1 when TWO) lie inside `w`.
            unsafe {
                let blk = wp.add((j0 + i) * row + b * bs);
                let s0 = u16::from_le_bytes([*blk, *blk.add(1)]) as i32;
                let s1 = if TWO {
                    u16::from_le_bytes([*blk.add(bs), *blk.add(bs + 1)]) as i32
                } else {
                    0
                };
                let d2 = _mm_cvtph_ps(_mm_cvtsi32_si128(s0 | (s1 << 16)));
                dw[i] = _mm512_permutexvar_ps(halves, _mm512_castps128_ps512(d2));
                wu[i] = if T == Q8_0 {
                    let lo = _mm256_loadu_si256(blk.add(2) as *const __m256i);
                    let hi = if TWO {
                        _mm256_loadu_si256(blk.add(bs + 2) as *const __m256i)
                    } else {
                        _mm256_set1_epi8(-128)
                    };
                    // The code plus 128 as an unsigned byte (a missing block: 0, times a
                    // zero activation).
                    _mm512_xor_si512(
                        _mm512_inserti64x4::<1>(_mm512_castsi256_si512(lo), hi),
                        _mm512_set1_epi8(-128),
                    )
                } else {
                    let q0 = _mm_loadu_si128(blk.add(2) as *const __m128i);
                    let q1 = if TWO {
                        _mm_loadu_si128(blk.add(bs + 2) as *const __m128i)
                    } else {
                        _mm_setzero_si128()
                    };
                    // [q0, q0, q1, q1] in 128-bit lanes, the second of each pair shifted by
                    // 4: low nibbles are weights 0–15 of a block, high ones 16–31.
                    let both = _mm512_castsi256_si512(_mm256_set_m128i(q1, q0));
                    let spread =
                        _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 1, 0, 1, 2, 3, 2, 3), both);
                    let shifted =
                        _mm512_srlv_epi64(spread, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
                    _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F))
                };
            }
        }
        let steps = nb.div_ceil(2);
        let (negs, scales) = (act.pair_neg_sums.as_ptr(), act.pair_scales.as_ptr());
        for (r, acc_r) in acc.iter_mut().enumerate() {
            let at = (r0 + r) * k + b * ACT_BLOCK;
            let o = ((r0 + r) * steps + b / 2) * 16;
            // SAFETY: row r0 + r's codes for blocks b (and b + 1) lie inside `act.q`, and its
            // pair b / 2's 16 lanes inside the pair vectors (filled on this CPU: the caller's
            // promise).
            let (x, dx, neg) = unsafe {
                let x = if TWO {
                    _mm512_loadu_si512(xq.add(at) as *const _)
                } else {
                    _mm512_maskz_loadu_epi8(0xFFFF_FFFF, xq.add(at))
                };
                let neg = _mm512_loadu_si512(negs.add(o) as *const _);
                // −offset · Σx for each lane's four codes: the offset is 128 (2⁷) or 8 (2³).
                let neg = if T == Q8_0 {
                    _mm512_slli_epi32::<7>(neg)
                } else {
                    _mm512_slli_epi32::<3>(neg)
                };
                (x, _mm512_loadu_ps(scales.add(o)), neg)
            };
            for (i, a) in acc_r.iter_mut().enumerate() {
                let p = _mm512_dpbusd_epi32(neg, wu[i], x);
                *a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dw[i], dx), *a);
            }
        }
    }
}
