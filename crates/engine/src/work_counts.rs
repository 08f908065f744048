//! The arithmetic and memory traffic of each op, attached to its profiler scope so the
//! table can show achieved GFLOP/s and GB/s (`gpt2 profile --with-flops`). Counts are the
//! textbook ones: a multiply-add is two FLOPs; bytes are each operand read once and the
//! output written once.

/// `[m, k] · [k, n]`, possibly batched over `batch`, every operand `elem` bytes a value.
pub fn matmul(batch: usize, m: usize, k: usize, n: usize, elem: usize) -> (u64, u64) {
    matmul_widths(batch, m, k, n, elem, elem)
}

/// [`matmul`] with the `[k, n]` operand (a weight) `weight` bytes a value and the others
/// `elem`: a bf16 weight beside f32 activations is counted at 2 bytes, the activations at 4.
pub fn matmul_widths(
    batch: usize,
    m: usize,
    k: usize,
    n: usize,
    elem: usize,
    weight: usize,
) -> (u64, u64) {
    let flops = 2 * batch * m * k * n;
    let bytes = batch * ((m * k + m * n) * elem + k * n * weight);
    (flops as u64, bytes as u64)
}

/// An element-wise op over `elements` values doing `flops_each` FLOPs per value, reading
/// `reads` tensors of that size and writing one; `extra` counts small operands (a bias row).
pub fn elementwise(
    elements: usize,
    flops_each: usize,
    reads: usize,
    extra: usize,
    elem: usize,
) -> (u64, u64) {
    (
        (elements * flops_each) as u64,
        ((elements * (reads + 1) + extra) * elem) as u64,
    )
}
