//! f32 weights into `Q8_0` or `Q4_0` blocks, the arithmetic of ggml's reference quantizers
//! (`quantize_row_q8_0_ref`, `quantize_row_q4_0_ref` in `ggml-quants.c`), so a matrix quantized
//! here holds the bytes `llama-quantize` (and gguf-py's converter, for `Q8_0`) writes for it.
//! What `--dtype q8_0` and `--dtype q4_0` run: a dense checkpoint's matrices quantized at load.
//!
//! Per block of 32 weights:
//! - `Q8_0`: `d = max|w| / 127`, each code `round(w / d)` (halves away from zero), computed as
//!   `w · (1 / d)` as ggml does; `d` stored as f16 after the codes are taken with the f32 `d`.
//! - `Q4_0`: `d = m / −8` where `m` is the weight of largest magnitude with its sign (the first
//!   such weight on a tie), each code `min(15, trunc(w · (1 / d) + 8.5))`, weight `j` in the low
//!   nibble of byte `j` and weight `j + 16` in its high nibble. The sign makes the block's
//!   largest weight code 0 exactly (`−8 · d`), the end of the range with one more step.
//!
//! An all-zero block gets `d = 0` and codes that stand for 0 (`Q8_0`: 0; `Q4_0`: 8).

use half::f16;

use super::GgmlType;

/// `values` (rows of a matrix one after the other, a row a whole number of blocks) as `ty`'s
/// blocks, or why they cannot be: a type other than `Q8_0` and `Q4_0`, or a length that is not
/// whole blocks.
pub fn quantize(ty: GgmlType, values: &[f32]) -> std::result::Result<Vec<u8>, String> {
    if !matches!(ty, GgmlType::Q8_0 | GgmlType::Q4_0) {
        return Err(format!(
            "the engine quantizes to q8_0 and q4_0, not {}",
            ty.name()
        ));
    }
    let (bs, ts) = (ty.block_size(), ty.type_size());
    if !values.len().is_multiple_of(bs) {
        return Err(format!(
            "{} values are not whole {} blocks of {bs}",
            values.len(),
            ty.name()
        ));
    }
    let mut out = vec![0u8; values.len() / bs * ts];
    for (block, bytes) in values.chunks_exact(bs).zip(out.chunks_exact_mut(ts)) {
        match ty {
            GgmlType::Q8_0 => q8_0_block(block, bytes),
            _ => q4_0_block(block, bytes),
        }
    }
    Ok(out)
}

fn q8_0_block(w: &[f32], out: &mut [u8]) {
    let amax = w.iter().fold(0f32, |a, v| a.max(v.abs()));
    let d = amax / 127.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out[..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
    for (q, &v) in out[2..].iter_mut().zip(w) {
        // `round` is C's `roundf`: halves away from zero. |v · id| ≤ 127 (up to a rounding of
        // the product, which `as` saturates).
        *q = (v * id).round() as i8 as u8;
    }
}

fn q4_0_block(w: &[f32], out: &mut [u8]) {
    let (mut amax, mut max) = (0f32, 0f32);
    for &v in w {
        // Strictly greater: on a tie of magnitudes the first weight (and its sign) wins.
        if amax < v.abs() {
            amax = v.abs();
            max = v;
        }
    }
    let d = max / -8.0;
    let id = if d != 0.0 { 1.0 / d } else { 0.0 };
    out[..2].copy_from_slice(&f16::from_f32(d).to_le_bytes());
    // C's `(int8_t)` on a value in [0.5, 16.5]: truncation, which `as` does too.
    let code = |v: f32| ((v * id + 8.5) as i8).min(15) as u8;
    for j in 0..16 {
        out[2 + j] = code(w[j]) | (code(w[j + 16]) << 4);
    }
}
