use candle_core::{Device, Tensor};
use half::f16;

use super::*;

/// A small deterministic generator (xorshift), so the tests need no seed crate.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    /// Roughly normal: the sum of four uniforms, centred.
    fn normal(&mut self) -> f32 {
        (0..4)
            .map(|_| (self.next() >> 40) as f32 / (1u64 << 24) as f32)
            .sum::<f32>()
            - 2.0
    }
    fn values(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.normal() * scale).collect()
    }
}

/// `n` rows of `k` random weights stored as `ty`, with llama.cpp's reference quantizers'
/// rules (Q8_0 and Q4_0 as gguf-py's, Q1_0 as ggml's `quantize_row_q1_0_ref`), and a few
/// blocks with a zero scale.
fn random_blocks(ty: GgmlType, n: usize, k: usize, rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for row in 0..n {
        let w = rng.values(k, 0.5);
        for (b, blk) in w.chunks(ty.block_size()).enumerate() {
            let zero = (row * 7 + b) % 11 == 3;
            let amax = blk.iter().fold(0f32, |a, v| a.max(v.abs()));
            match ty {
                GgmlType::Q8_0 => {
                    let d = if zero { 0.0 } else { amax / 127.0 };
                    out.extend(f16::from_f32(d).to_le_bytes());
                    for v in blk {
                        let q = if d == 0.0 { 0.0 } else { (v / d).round() };
                        out.push(q as i8 as u8);
                    }
                }
                GgmlType::Q4_0 => {
                    let d = if zero { 0.0 } else { amax / -8.0 };
                    out.extend(f16::from_f32(d).to_le_bytes());
                    let q = |v: f32| {
                        let id = if d == 0.0 { 0.0 } else { 1.0 / d };
                        ((v * id + 8.5).trunc() as i32).clamp(0, 15) as u8
                    };
                    for j in 0..16 {
                        out.push(q(blk[j]) | (q(blk[j + 16]) << 4));
                    }
                }
                GgmlType::Q1_0 => {
                    let d = if zero {
                        0.0
                    } else {
                        blk.iter().map(|v| v.abs()).sum::<f32>() / 128.0
                    };
                    out.extend(f16::from_f32(d).to_le_bytes());
                    let mut bits = [0u8; 16];
                    for (j, v) in blk.iter().enumerate() {
                        if *v >= 0.0 {
                            bits[j / 8] |= 1 << (j % 8);
                        }
                    }
                    out.extend(bits);
                }
                _ => unreachable!(),
            }
        }
    }
    out
}

/// The reference: dequantize `W`, then an f64 product with `x` as given.
fn reference(w: &[f32], x: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * n];
    for r in 0..m {
        for j in 0..n {
            out[r * n + j] = (0..k)
                .map(|i| w[j * k + i] as f64 * x[r * k + i] as f64)
                .sum::<f64>() as f32;
        }
    }
    out
}

fn kernels_here() -> Vec<Kernel> {
    let mut ks = vec![Kernel::Portable];
    if kernels::has_avx2() {
        ks.push(Kernel::Avx2);
    }
    if kernels::has_avx512_vnni() {
        ks.push(Kernel::Avx512Vnni);
    }
    ks
}

/// Every kernel this CPU has, on every type, at odd shapes (one row, rows not a multiple of
/// the 4 that share a decoded block, few output rows, `k` one block), against two references:
/// the dequantized weights times the activations as the kernel rounded them (only the order of
/// f32 sums differs: a tight bound), and times the activations as given (the rounding of `x` to
/// 8 bits, held to its bound, [`activation_rounding_bound`]).
#[test]
fn every_kernel_matches_the_dequantized_product() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for ty in [GgmlType::Q8_0, GgmlType::Q4_0, GgmlType::Q1_0] {
        let kb = ty.block_size();
        for &(m, n, k) in &[
            (1, 1, kb),
            (1, 37, kb * 3),
            (3, 5, kb * 2),
            (4, 8, kb),
            (7, 33, kb * 5),
            (13, 3, kb * 4),
        ] {
            let bytes = random_blocks(ty, n, k, &mut rng);
            let w = dequantize(ty, &bytes, n * k).unwrap();
            let x = rng.values(m * k, 2.0);
            let act = ActQ8::quantize(&x, m, k);
            let x_rounded = act.dequantized();
            let exact = reference(&w, &x_rounded, m, n, k);
            let unrounded = reference(&w, &x, m, n, k);
            for kernel in kernels_here() {
                let q = QMatrix::new(ty, n, k, bytes.clone(), KernelPath::Portable, &Device::Cpu)
                    .unwrap()
                    .with_kernel(kernel);
                let xt = Tensor::from_vec(x.clone(), (m, k), &Device::Cpu).unwrap();
                let got = q
                    .matmul(&xt)
                    .unwrap()
                    .flatten_all()
                    .unwrap()
                    .to_vec1::<f32>()
                    .unwrap();
                for r in 0..m {
                    for j in 0..n {
                        let (g, e, u) = (got[r * n + j], exact[r * n + j], unrounded[r * n + j]);
                        let wj = &w[j * k..(j + 1) * k];
                        let xr = &x[r * k..(r + 1) * k];
                        let scale: f32 = wj
                            .iter()
                            .zip(&x_rounded[r * k..(r + 1) * k])
                            .map(|(a, b)| (a * b).abs())
                            .sum();
                        assert!(
                            (g - e).abs() <= 1e-5 * scale + 1e-6,
                            "{ty} {kernel:?} m={m} n={n} k={k} [{r},{j}]: {g} against {e} on the rounded x"
                        );
                        let bound = activation_rounding_bound(wj, xr);
                        assert!(
                            (g - u).abs() <= bound * 1.0001 + 1e-5 * scale + 1e-6,
                            "{ty} {kernel:?} [{r},{j}]: {g} against {u}, more than the rounding bound {bound}"
                        );
                    }
                }
            }
        }
    }
}

/// Every SIMD kernel equals the scalar loop on `Q1_0` (the same integer sums per 32 weights;
/// only the order of the f32 adds differs): weight row counts that are not a multiple of the 4
/// the 512-bit kernel takes at once, activation row counts that are not a multiple of its 4,
/// `k` from one block of 128 up, and activation rows at the codes' extremes (all `+127`, signs
/// alternating, all zero) beside random ones.
#[test]
fn q1_0_simd_kernels_equal_the_portable_loop() {
    let mut rng = Rng(0x51_7cc1_b727_220a);
    for &(m, n, k) in &[
        (1, 1, 128),
        (1, 7, 384),
        (2, 5, 256),
        (3, 9, 1024),
        (5, 13, 128),
        (8, 6, 512),
        (9, 3, 640),
    ] {
        let bytes = random_blocks(GgmlType::Q1_0, n, k, &mut rng);
        let mut x = rng.values(m * k, 2.0);
        x[..k].fill(1.5);
        if m > 1 {
            for (i, v) in x[k..2 * k].iter_mut().enumerate() {
                *v = if i % 2 == 0 { 3.0 } else { -3.0 };
            }
        }
        if m > 2 {
            x[2 * k..2 * k + 64].fill(0.0);
        }
        simd_kernels_equal_the_portable_loop(GgmlType::Q1_0, &bytes, n, k, &x, m);
    }
}

/// Every SIMD kernel this CPU has gives the portable loop's `x · Wᵀ` (`W`: `n` rows of `k` in
/// `ty`'s blocks, `x`: `m` rows) up to the order of the f32 adds: within 1e-6 of the sum of
/// |w · x| over each output, `x` as the kernels rounded it.
fn simd_kernels_equal_the_portable_loop(
    ty: GgmlType,
    bytes: &[u8],
    n: usize,
    k: usize,
    x: &[f32],
    m: usize,
) {
    let xt = Tensor::from_vec(x.to_vec(), (m, k), &Device::Cpu).unwrap();
    let run = |kernel: Kernel| {
        QMatrix::new(ty, n, k, bytes.to_vec(), KernelPath::Portable, &Device::Cpu)
            .unwrap()
            .with_kernel(kernel)
            .matmul(&xt)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    let want = run(Kernel::Portable);
    let w = dequantize(ty, bytes, n * k).unwrap();
    let x_rounded = ActQ8::quantize(x, m, k).dequantized();
    for kernel in kernels_here() {
        let got = run(kernel);
        for r in 0..m {
            for j in 0..n {
                let scale: f32 = w[j * k..(j + 1) * k]
                    .iter()
                    .zip(&x_rounded[r * k..(r + 1) * k])
                    .map(|(a, b)| (a * b).abs())
                    .sum();
                let (g, e) = (got[r * n + j], want[r * n + j]);
                assert!(
                    (g - e).abs() <= 1e-6 * scale + 1e-7,
                    "{ty} {kernel:?} m={m} n={n} k={k} [{r},{j}]: {g} against the portable {e}"
                );
            }
        }
    }
}

/// A wrong decoding that looks right must fail: the Q4_0 nibble halves swapped, or Q1_0's bit
/// order reversed within a byte, give products the reference rejects.
#[test]
fn the_reference_check_catches_a_wrong_layout() {
    let mut rng = Rng(7);
    let (n, k) = (4, 128);
    let bytes = random_blocks(GgmlType::Q1_0, n, k, &mut rng);
    let mut reversed = bytes.clone();
    for blk in reversed.chunks_mut(18) {
        for b in &mut blk[2..] {
            *b = b.reverse_bits();
        }
    }
    let w = dequantize(GgmlType::Q1_0, &bytes, n * k).unwrap();
    let w_rev = dequantize(GgmlType::Q1_0, &reversed, n * k).unwrap();
    assert_ne!(w, w_rev);
    let x = rng.values(k, 1.0);
    let q = QMatrix::new(
        GgmlType::Q1_0,
        n,
        k,
        bytes,
        KernelPath::widest(),
        &Device::Cpu,
    )
    .unwrap();
    let got = q
        .matmul(&Tensor::from_vec(x.clone(), (1, k), &Device::Cpu).unwrap())
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let right = reference(&w, &x, 1, n, k);
    let wrong = reference(&w_rev, &x, 1, n, k);
    let err = |a: &[f32], b: &[f32]| {
        a.iter()
            .zip(b)
            .map(|(p, q)| (p - q).abs())
            .fold(0f32, f32::max)
    };
    assert!(
        err(&got, &right) < 0.05 * err(&got, &wrong),
        "{got:?} {right:?} {wrong:?}"
    );
}

/// The K-quants run candle's matmul, labelled as such, and match their own dequantization.
#[test]
fn k_quants_run_candles_matmul_labelled_as_such() {
    let mut rng = Rng(99);
    let (m, n, k) = (3, 8, 512);
    let w = rng.values(n * k, 0.3);
    let wt = Tensor::from_vec(w, (n, k), &Device::Cpu).unwrap();
    for (ty, dtype, label) in [
        (GgmlType::Q4K, GgmlDType::Q4K, label::CANDLE_Q4_K),
        (GgmlType::Q6K, GgmlDType::Q6K, label::CANDLE_Q6_K),
    ] {
        let qt = QTensor::quantize(&wt, dtype).unwrap();
        let bytes = qt.data().unwrap().to_vec();
        assert_eq!(bytes.len(), ty.row_bytes(k) * n);
        let q = QMatrix::new(ty, n, k, bytes.clone(), KernelPath::widest(), &Device::Cpu).unwrap();
        assert_eq!(q.label(), label);
        let deq = dequantize(ty, &bytes, n * k).unwrap();
        let x = rng.values(m * k, 1.0);
        let got = q
            .matmul(&Tensor::from_vec(x.clone(), (m, k), &Device::Cpu).unwrap())
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let want = reference(&deq, &x, m, n, k);
        for r in 0..m {
            for j in 0..n {
                // candle rounds x to its Q8_K (8 bits, blocks of 256): each value by at most
                // max|x_block| / 254 or so; the bound is that over the row.
                let (wj, xr) = (&deq[j * k..(j + 1) * k], &x[r * k..(r + 1) * k]);
                let bound: f32 = wj
                    .chunks(256)
                    .zip(xr.chunks(256))
                    .map(|(wb, xb)| {
                        let amax = xb.iter().fold(0f32, |a, v| a.max(v.abs()));
                        wb.iter().map(|v| v.abs()).sum::<f32>() * amax / 254.0
                    })
                    .sum();
                let (g, e) = (got[r * n + j], want[r * n + j]);
                assert!(
                    (g - e).abs() <= bound + 1e-4,
                    "{ty}: {g} against {e}, bound {bound}"
                );
            }
        }
    }
}

#[test]
fn work_is_counted_at_the_stored_width() {
    let (n, k) = (3072, 768);
    for (ty, per_block) in [
        (GgmlType::Q8_0, 34),
        (GgmlType::Q4_0, 18),
        (GgmlType::Q1_0, 18),
    ] {
        let q = QMatrix::new(
            ty,
            n,
            k,
            vec![0; n * k / ty.block_size() * per_block],
            KernelPath::Portable,
            &Device::Cpu,
        )
        .unwrap();
        let (flops, bytes) = q.work(1);
        assert_eq!(flops, 2 * 768 * 3072);
        assert_eq!(
            bytes as usize,
            (768 + 3072) * 4 + n * k / ty.block_size() * per_block
        );
    }
    assert_eq!(GgmlType::Q8_0.bits_per_weight(), 8.5);
    assert_eq!(GgmlType::Q4_0.bits_per_weight(), 4.5);
    assert_eq!(GgmlType::Q1_0.bits_per_weight(), 1.125);
}

/// The kernel each type gets on each device. On CUDA candle's quantized matmul runs every type
/// it has, and Q1_0, which it has not, is refused naming the type and the next step; checked
/// from the device's location, so without a GPU.
#[test]
fn each_device_gets_a_kernel_or_a_refusal_that_names_the_type() {
    use candle_core::DeviceLocation;
    use GgmlType::*;
    let cpu = DeviceLocation::Cpu;
    let cuda = DeviceLocation::Cuda { gpu_id: 0 };
    for ty in [Q8_0, Q4_0, Q1_0] {
        assert_eq!(
            Kernel::choose(ty, KernelPath::Portable, &cpu),
            Ok(Kernel::Portable)
        );
    }
    for ty in [Q4K, Q6K] {
        assert_eq!(
            Kernel::choose(ty, KernelPath::Portable, &cpu),
            Ok(Kernel::Candle)
        );
    }
    for ty in [Q8_0, Q4_0, Q4K, Q6K] {
        for path in [KernelPath::Avx512, KernelPath::Portable] {
            assert_eq!(
                Kernel::choose(ty, path, &cuda),
                Ok(Kernel::Candle),
                "{ty:?}"
            );
        }
    }
    let refused = Kernel::choose(Q1_0, KernelPath::Avx512, &cuda).unwrap_err();
    assert!(
        refused.contains("no q1_0 matmul on Cuda") && refused.contains("--device cpu"),
        "{refused}"
    );
    let dense = Kernel::choose(F32, KernelPath::Portable, &cpu).unwrap_err();
    assert!(dense.contains("f32 is not a quantized type"), "{dense}");
}

#[test]
fn activations_round_to_the_nearest_code_of_their_block() {
    let mut x: Vec<f32> = (0..64).map(|i| i as f32 - 20.0).collect();
    x[40] = -127.0 * 3.0;
    let a = ActQ8::quantize(&x, 1, 64);
    assert_eq!(a.d[0], 20.0 / 127.0);
    assert_eq!(a.q[0], -127);
    assert_eq!(a.d[1], 3.0);
    assert_eq!(a.q[40 - 32 + 32], -127);
    let back = a.dequantized();
    for (i, (b, v)) in back.iter().zip(&x).enumerate() {
        assert!((b - v).abs() <= a.d[i / 32] / 2.0 + 1e-5, "{i}: {b} {v}");
    }
    // An all-zero block has a zero scale and zero codes.
    let z = ActQ8::quantize(&[0.0; 32], 1, 32);
    assert_eq!((z.d[0], z.q.iter().all(|&q| q == 0)), (0.0, true));
}

/// The AVX-512 quantization gives the scalar loop's codes and scales bit for bit: random rows,
/// values that land exactly on a half step (rounded away from zero) and just beside it, an
/// all-zero block, a block whose largest value is negative, and a NaN (code 0, the scale of the
/// rest).
#[test]
fn activation_quantization_simd_equals_the_scalar_loop() {
    if !kernels::has_avx512_vnni() {
        return;
    }
    let mut rng = Rng(0xabc);
    let (m, k) = (5, 160);
    let mut x = rng.values(m * k, 3.0);
    // Block 0 of row 0: largest 127, so codes are the values themselves: halves exactly.
    x[0] = 127.0;
    for (i, v) in [
        2.5f32, -2.5, 0.5, -0.5, 126.5, -126.5, 3.4999998, -3.4999998, 0.49999997,
    ]
    .iter()
    .enumerate()
    {
        x[1 + i] = *v;
    }
    x[32..64].fill(0.0);
    x[64] = -50.0;
    x[70] = f32::NAN;
    let a = ActQ8::quantize_with(&x, m, k, true);
    let b = ActQ8::quantize_with(&x, m, k, false);
    assert_eq!(a.q, b.q);
    assert_eq!(
        a.d.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
        b.d.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
    );
    assert_eq!(&b.q[1..10], &[3, -3, 1, -1, 127, -127, 3, -3, 0]);
    assert_eq!(b.q[70], 0);
    assert_eq!(b.q[64], -127);
}

/// The 512-bit `Q8_0` / `Q4_0` tiles (and AVX2) equal the scalar loop on blocks with every code
/// at its extremes: `Q8_0` bytes from −128 to 127 (−128 is no quantizer's output, but a file may
/// hold it, and the kernels' offset of 128 must take it exactly), `Q4_0` nibbles 0 and 15, and
/// activation rows all `+127` codes or alternating, beside random ones; shapes with weight rows
/// not a multiple of the tile's 4, activation rows not a multiple of its 4, `k` of one block (the
/// tile's half-vector tail), an odd number of blocks, and many.
#[test]
fn q8_0_and_q4_0_simd_kernels_equal_the_portable_loop_at_the_extremes() {
    let mut rng = Rng(0x0dd_ba11);
    for ty in [GgmlType::Q8_0, GgmlType::Q4_0] {
        for &(m, n, k) in &[
            (1, 1, 32),
            (1, 4, 32),
            (2, 9, 64),
            (5, 7, 96),
            (4, 12, 320),
            (6, 5, 32),
            (9, 13, 160),
        ] {
            let ts = ty.type_size();
            let mut bytes = Vec::with_capacity(n * k / 32 * ts);
            for blk in 0..n * k / 32 {
                let d = 0.01 + (blk % 7) as f32 * 0.003;
                bytes.extend(half::f16::from_f32(d).to_le_bytes());
                for i in 0..ts - 2 {
                    bytes.push(match blk % 3 {
                        0 => rng.next() as u8,
                        // Q8_0: −128 and 127 alternating; Q4_0: nibbles 0 and 15.
                        1 if ty == GgmlType::Q8_0 => [0x80, 0x7F][i % 2],
                        1 => [0x0F, 0xF0][i % 2],
                        _ => [0x80, 0xFF][i % 2],
                    });
                }
            }
            let mut x = rng.values(m * k, 2.0);
            x[..k].fill(1.5);
            if m > 1 {
                for (i, v) in x[k..2 * k].iter_mut().enumerate() {
                    *v = if i % 2 == 0 { 3.0 } else { -3.0 };
                }
            }
            simd_kernels_equal_the_portable_loop(ty, &bytes, n, k, &x, m);
        }
    }
}

/// A matrix's blocks read back as given wherever they are held: on the heap (small), in a
/// mapping shared with the next matrices (64 KiB to 4 MiB; two in a row do not overlap), or in
/// a mapping of their own (4 MiB and more).
#[test]
fn blocks_read_back_as_given_wherever_they_are_held() {
    let mut rng = Rng(0xb10c);
    let make = |len: usize, rng: &mut Rng| (0..len).map(|_| rng.next() as u8).collect::<Vec<u8>>();
    let (small, a, b, big) = (
        make(1000, &mut rng),
        make(100_000, &mut rng),
        make(70_001, &mut rng),
        make(5 << 20, &mut rng),
    );
    let held: Vec<Blocks> = [&small, &a, &b, &big]
        .iter()
        .map(|v| Blocks::hold((*v).clone()))
        .collect();
    for (h, v) in held.iter().zip([&small, &a, &b, &big]) {
        assert_eq!(&h[..], &v[..]);
    }
    let (pa, pb) = (held[1].as_ptr() as usize, held[2].as_ptr() as usize);
    assert!(pa + a.len() <= pb || pb + b.len() <= pa);
    // A product on blocks held in a shared mapping equals the same blocks' on the heap.
    let (n, k) = (96, 1024);
    let bytes = random_blocks(GgmlType::Q8_0, n, k, &mut rng);
    assert!(bytes.len() >= 64 << 10);
    let x = rng.values(3 * k, 1.0);
    let xt = Tensor::from_vec(x, (3, k), &Device::Cpu).unwrap();
    let q = QMatrix::new(
        GgmlType::Q8_0,
        n,
        k,
        bytes.clone(),
        KernelPath::widest(),
        &Device::Cpu,
    )
    .unwrap();
    let got = q
        .matmul(&xt)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    let heap = QMatrix {
        data: Data::Blocks(Blocks::Heap(bytes)),
        ..q
    };
    let want = heap
        .matmul(&xt)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1::<f32>()
        .unwrap();
    assert_eq!(got, want);
}

/// The product reads a contiguous f32 input where it lies and converts any other first: a
/// transposed view, a slice that starts part-way into its storage, and the same values in bf16
/// give the product of their contiguous f32 copy, bit for bit; a wrong offset would not.
#[test]
fn inputs_in_any_layout_give_the_contiguous_inputs_product() {
    let mut rng = Rng(11);
    let (n, k, m) = (8, 64, 3);
    let q = QMatrix::new(
        GgmlType::Q8_0,
        n,
        k,
        random_blocks(GgmlType::Q8_0, n, k, &mut rng),
        KernelPath::widest(),
        &Device::Cpu,
    )
    .unwrap();
    let product = |x: &Tensor| {
        q.matmul(x)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1::<f32>()
            .unwrap()
    };
    // Rows 1 .. 4 of five: the input starts k values into its storage.
    let all = Tensor::from_vec(rng.values(5 * k, 1.0), (5, k), &Device::Cpu).unwrap();
    let rows = all.narrow(0, 1, m).unwrap();
    let copy = Tensor::from_vec(
        rows.flatten_all().unwrap().to_vec1::<f32>().unwrap(),
        (m, k),
        &Device::Cpu,
    )
    .unwrap();
    let want = product(&copy);
    assert_eq!(product(&rows), want);
    let transposed = copy.t().unwrap().contiguous().unwrap().t().unwrap();
    assert!(!transposed.is_contiguous());
    assert_eq!(product(&transposed), want);
    // Rows 0 .. 3 hold other values: a product that ignored the offset would read them.
    assert_ne!(product(&all.narrow(0, 0, m).unwrap()), want);
    let halves = copy.to_dtype(candle_core::DType::BF16).unwrap();
    let back = halves.to_dtype(candle_core::DType::F32).unwrap();
    assert_eq!(product(&halves), product(&back));
}

#[test]
fn quantizing_rounds_each_weight_within_a_step_of_its_block() {
    let mut rng = Rng(7);
    let values = rng.values(32 * 40, 0.5);
    // Q8_0: half a step of amax / 127. Q4_0: codes -8 ..= 7 steps of amax / 8 put the largest
    // weight at -8 exactly, so a weight of the other sign beyond 7 steps clamps: a whole step.
    for (ty, step) in [(GgmlType::Q8_0, 0.5 / 127.0), (GgmlType::Q4_0, 1.0 / 8.0)] {
        let bytes = quantize(ty, &values).unwrap();
        assert_eq!(bytes.len(), 40 * ty.type_size());
        let back = dequantize(ty, &bytes, values.len()).unwrap();
        for (b, (v, w)) in values.chunks(32).zip(back.chunks(32)).enumerate() {
            let amax = v.iter().fold(0f32, |a, x| a.max(x.abs()));
            // Plus the f16 scale's own rounding (2^-11 relative) over the range.
            let bound = amax * step + amax * 2f32.powi(-10);
            for (x, y) in v.iter().zip(w) {
                assert!(
                    (x - y).abs() <= bound,
                    "{} block {b}: {x} -> {y}",
                    ty.name()
                );
            }
        }
    }
}

#[test]
fn quantizing_follows_ggmls_reference_at_the_edges() {
    // An all-zero block: scale 0, codes standing for 0 (Q4_0's 8 in both nibbles; its scale
    // 0 / -8 is -0, as ggml stores it).
    let zeros = [0f32; 32];
    assert_eq!(quantize(GgmlType::Q8_0, &zeros).unwrap(), vec![0u8; 34]);
    let q4 = quantize(GgmlType::Q4_0, &zeros).unwrap();
    assert_eq!((&q4[..2], &q4[2..]), (&[0u8, 0x80][..], &[0x88u8; 16][..]));
    // Q8_0: d = 127 / 127 = 1, a half rounds away from zero.
    let mut v = [0f32; 32];
    (v[0], v[1], v[2]) = (127.0, 2.5, -2.5);
    let q8 = quantize(GgmlType::Q8_0, &v).unwrap();
    assert_eq!(&q8[..2], &f16::from_f32(1.0).to_le_bytes());
    assert_eq!((q8[2] as i8, q8[3] as i8, q8[4] as i8), (127, 3, -3));
    // Q4_0: the signed weight of largest magnitude sets d = w / -8, so it is code 0; on a tie
    // of magnitudes the first one wins (here +4: d = -0.5, and -4 clamps to code 15).
    let mut v = [0f32; 32];
    (v[0], v[16]) = (4.0, -4.0);
    let q4 = quantize(GgmlType::Q4_0, &v).unwrap();
    assert_eq!(&q4[..2], &f16::from_f32(-0.5).to_le_bytes());
    assert_eq!(
        q4[2], 0xF0,
        "weight 0 in the low nibble (0), weight 16 in the high (15)"
    );
    assert_eq!(q4[3], 0x88);
    let mut v = [0f32; 32];
    (v[0], v[16]) = (-4.0, 4.0);
    let q4 = quantize(GgmlType::Q4_0, &v).unwrap();
    assert_eq!(&q4[..2], &f16::from_f32(0.5).to_le_bytes());
    assert_eq!(q4[2], 0xF0);
}

#[test]
fn quantizing_refuses_other_types_and_ragged_rows() {
    assert!(quantize(GgmlType::Q4K, &[0.0; 256])
        .unwrap_err()
        .contains("q8_0 and q4_0, not q4_k"));
    assert!(quantize(GgmlType::Q8_0, &[0.0; 48])
        .unwrap_err()
        .contains("48 values are not whole q8_0 blocks of 32"));
}
