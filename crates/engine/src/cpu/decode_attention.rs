//! Attention for a decode step: each sequence has one new query per head and its own cache of
//! keys and values (`[1, n_head, positions, head_dim]` views into the cache's buffers, each
//! head's rows contiguous). The general path (`attn_qk`, softmax, `attn_v`) copies every
//! cached key and value into a contiguous tensor and then packs it for the matmul kernel, for a
//! product with a single row; at 8 sequences of 200 positions that is 4 passes over 118 MB a
//! step. Here each (sequence, head) pair reads its keys once for the scores and its values once
//! for the output, in place, on the rayon pool (a short one on the calling thread): the same
//! arithmetic (`q·kᵀ/√d`, softmax, `p·v`), summed in another order.

use candle_core::{CpuStorage, Device, Layout, Result, Storage, Tensor};
use rayon::prelude::*;

use super::elementwise::{compiled_for, softmax_row};
use super::KernelPath;

/// One sequence's cached keys or values as the kernel reads them: head `h`, position `j` is
/// `data[offset + h * head_stride + j * head_dim ..][..head_dim]`.
struct Rows<'a> {
    data: &'a [f32],
    offset: usize,
    head_stride: usize,
    len: usize,
}

impl<'a> Rows<'a> {
    fn of(
        storage: &'a Storage,
        layout: &Layout,
        heads: usize,
        head_dim: usize,
    ) -> Result<Rows<'a>> {
        let Storage::Cpu(CpuStorage::F32(data)) = storage else {
            candle_core::bail!("decode attention: expects f32 keys and values on the CPU")
        };
        let (dims, stride) = (layout.dims(), layout.stride());
        if dims.len() != 4
            || dims[0] != 1
            || dims[1] != heads
            || dims[3] != head_dim
            || stride[3] != 1
            || stride[2] != head_dim
        {
            candle_core::bail!("decode attention: keys and values must be [1, {heads}, positions, {head_dim}] with contiguous rows, got {dims:?} strides {stride:?}");
        }
        Ok(Rows {
            data,
            offset: layout.start_offset(),
            head_stride: stride[1],
            len: dims[2],
        })
    }

    #[inline(always)]
    fn row(&self, head: usize, j: usize, head_dim: usize) -> &[f32] {
        let at = self.offset + head * self.head_stride + j * head_dim;
        &self.data[at..at + head_dim]
    }
}

/// `softmax(q · kᵀ · scale) · v` for `q` `[sequences, n_head, 1, head_dim]` (contiguous f32)
/// and each sequence's `(keys, values)` (`[1, kv_heads, positions, head_dim]`, any number of
/// positions, at least one; `kv_heads` divides `n_head`, and query head `i` reads key and value
/// head `i / (n_head / kv_heads)`): `[sequences, n_head, 1, head_dim]`.
pub fn attention(
    q: &Tensor,
    kv: &[(Tensor, Tensor)],
    scale: f32,
    path: KernelPath,
) -> Result<Tensor> {
    let (n, heads, one, head_dim) = q.dims4()?;
    if one != 1 || kv.len() != n {
        candle_core::bail!("decode attention: {n} sequences of one query each need {n} caches, got queries {:?} and {} caches", q.dims(), kv.len());
    }
    let q = q.contiguous()?;
    let (q_storage, q_layout) = q.storage_and_layout();
    let qv = super::cpu_f32(&q_storage, q_layout, "decode attention")?;
    let kv_heads = match kv.first() {
        Some((k, _)) => k.dim(1)?,
        None => heads,
    };
    if kv_heads == 0 || heads % kv_heads != 0 {
        candle_core::bail!(
            "decode attention: {heads} query heads cannot share {kv_heads} key/value heads evenly"
        );
    }
    let group = heads / kv_heads;
    let guards: Vec<_> = kv
        .iter()
        .map(|(k, v)| (k.storage_and_layout(), v.storage_and_layout()))
        .collect();
    let rows: Vec<(Rows, Rows)> = guards
        .iter()
        .map(|((ks, kl), (vs, vl))| {
            Ok((
                Rows::of(ks, kl, kv_heads, head_dim)?,
                Rows::of(vs, vl, kv_heads, head_dim)?,
            ))
        })
        .collect::<Result<_>>()?;
    if let Some(r) = rows.iter().position(|(k, v)| k.len == 0 || k.len != v.len) {
        candle_core::bail!(
            "decode attention: sequence {r} has {} keys and {} values",
            rows[r].0.len,
            rows[r].1.len
        );
    }
    let mut out = vec![0f32; n * heads * head_dim];
    // One task per (sequence, head): its query, its scores, its output row.
    let task = |(i, o): (usize, &mut [f32])| {
        let (s, head) = (i / heads, i % heads);
        let (k, v) = &rows[s];
        let query = &qv[i * head_dim..(i + 1) * head_dim];
        compiled_for(
            path,
            #[inline(always)]
            || one_head(query, k, v, head / group, head_dim, scale, o),
        );
    };
    // Key values the query heads read, summed: below SERIAL_BELOW (a decode step of SmolLM2-135M
    // at up to 113 positions) the whole product takes a few µs on one thread, less than handing
    // half of it to another (3.5 µs a call against 17 on the pool, profiled at 32 positions).
    let reads: usize = rows.iter().map(|(k, _)| heads * k.len * head_dim).sum();
    if reads < SERIAL_BELOW {
        out.chunks_mut(head_dim).enumerate().for_each(task);
    } else {
        out.par_chunks_mut(head_dim).enumerate().for_each(task);
    }
    Tensor::from_vec(out, (n, heads, 1, head_dim), &Device::Cpu)
}

/// Key values (over every query head) a product reads below which it runs on the calling
/// thread alone.
const SERIAL_BELOW: usize = 1 << 16;

#[inline(always)]
fn one_head(
    query: &[f32],
    k: &Rows,
    v: &Rows,
    head: usize,
    head_dim: usize,
    scale: f32,
    out: &mut [f32],
) {
    let mut scores: Vec<f32> = (0..k.len)
        .map(|j| dot(query, k.row(head, j, head_dim)) * scale)
        .collect();
    softmax_row(&mut scores);
    for (j, &p) in scores.iter().enumerate() {
        out.iter_mut()
            .zip(v.row(head, j, head_dim))
            .for_each(|(o, &x)| *o += p * x);
    }
}

/// `a · b` with 16 running sums, so the loop vectorises (one running sum would chain every add).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut acc = [0f32; LANES];
    let (ca, cb) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        acc.iter_mut()
            .zip(x.iter().zip(y))
            .for_each(|(s, (x, y))| *s += x * y);
    }
    acc.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::IndexOp;

    /// Against the general path's arithmetic in candle: caches with room to spare (so the views
    /// are strided), of different lengths, one of them a single position; short enough to run
    /// on the calling thread, and long enough to run on the pool.
    #[test]
    fn matches_candles_attention_on_strided_caches() {
        let (heads, d) = (3, 20);
        for lens in [[7, 1, 33], [7, 1, 1200]] {
            let reads = lens.iter().map(|l| heads * l * d).sum::<usize>();
            assert_eq!(reads < SERIAL_BELOW, lens[2] == 33);
            check_against_candle(heads, d, &lens);
        }
    }

    fn check_against_candle(heads: usize, d: usize, lens: &[usize]) {
        let dev = Device::Cpu;
        let q = Tensor::randn(0f32, 1.0, (lens.len(), heads, 1, d), &dev).unwrap();
        let kv: Vec<(Tensor, Tensor)> = lens
            .iter()
            .map(|&len| {
                let k = Tensor::randn(0f32, 1.0, (1, heads, len + 5, d), &dev)
                    .unwrap()
                    .narrow(2, 0, len)
                    .unwrap();
                let v = Tensor::randn(0f32, 1.0, (1, heads, len + 5, d), &dev)
                    .unwrap()
                    .narrow(2, 0, len)
                    .unwrap();
                (k, v)
            })
            .collect();
        let scale = 1.0 / (d as f32).sqrt();
        for path in KernelPath::supported() {
            let got = attention(&q, &kv, scale, path).unwrap();
            for (s, (k, v)) in kv.iter().enumerate() {
                let qs = q.i(s..s + 1).unwrap();
                let scores = (qs.matmul(&k.contiguous().unwrap().t().unwrap()).unwrap()
                    * scale as f64)
                    .unwrap();
                let want = candle_nn::ops::softmax_last_dim(&scores)
                    .unwrap()
                    .matmul(&v.contiguous().unwrap())
                    .unwrap();
                let diff = (got.i(s..s + 1).unwrap() - want)
                    .unwrap()
                    .abs()
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .max(0)
                    .unwrap()
                    .to_scalar::<f32>()
                    .unwrap();
                assert!(
                    diff < 1e-5,
                    "{path:?}, sequence {s} ({} positions): {diff}",
                    lens[s]
                );
            }
        }
        let short = attention(&q, &kv[..2], scale, KernelPath::Portable)
            .unwrap_err()
            .to_string();
        assert!(short.contains("3 caches"), "{short}");
    }
}
