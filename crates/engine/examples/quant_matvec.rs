//! A decode step's matrix-vector product, `x (m × k) · Wᵀ` with `W` `n × k` (`m` = 1, or a few
//! rows as a short prefill chunk or a batch of decodes gives), in each weight
//! format the engine multiplies: f32 and bf16 on the packed kernel, Q8_0, Q4_0 and Q1_0 on the
//! quantized kernels of every path this CPU has, and candle's Q8_0 for comparison. Prints the
//! median time a call (and the fastest) and the GB/s at the stored width (the weight's bytes with its scales, `x`
//! and the output), the figure a profile row's roofline reads.
//!
//!     cargo run -p engine --example quant_matvec -- [K N] [CALLS] [M] [--type q1_0]
//!         [--kernel avx512] [--copies C]
//!
//! Default: k = 768, n = 3072 (GPT-2 small's MLP up-projection), 300 calls each, m = 1, every
//! format (`--type` keeps one quantized type and skips the dense ones), every kernel this CPU
//! has (`--kernel` keeps one), one copy of the matrix (`--copies C` calls C copies in turn, so
//! that with more bytes than the last-level cache each call reads its weights from memory).

use std::time::Instant;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use engine::cpu::packed_matmul::PackedWeight;
use engine::cpu::KernelPath;
use engine::quant::{GgmlType, Kernel, QMatrix};

/// The median and the fastest call, in µs (on a shared machine the fastest is the one least
/// disturbed by other work: compare kernels by it there).
fn median_us(calls: usize, mut f: impl FnMut()) -> (f64, f64) {
    for _ in 0..10 {
        f();
    }
    let mut t: Vec<f64> = (0..calls)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    t.sort_by(|a, b| a.total_cmp(b));
    (t[calls / 2], t[0])
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!(
            "usage: quant_matvec [K N] [CALLS] [M] [--type q8_0|q4_0|q1_0] \
             [--kernel portable|avx2|avx512] [--copies C]  (default 768 3072 300 1, 1 copy)"
        );
        return Ok(());
    }
    // `--NAME VALUE` taken out of the arguments, leaving the positional ones.
    let mut args = args;
    let mut flag = |name: &str| -> Result<Option<String>, String> {
        let Some(i) = args.iter().position(|a| a == name) else {
            return Ok(None);
        };
        let value = args
            .get(i + 1)
            .ok_or(format!("{name} needs a value"))?
            .clone();
        args.drain(i..i + 2);
        Ok(Some(value.to_lowercase()))
    };
    let only = flag("--type")?;
    let kernel_only = flag("--kernel")?;
    let copies = match flag("--copies")? {
        Some(c) => c
            .parse::<usize>()
            .map_err(|_| format!("`{c}` is not a number"))?
            .max(1),
        None => 1,
    };
    let num = |i: usize, d: usize| -> Result<usize, String> {
        args.get(i)
            .map(|a| a.parse().map_err(|_| format!("`{a}` is not a number")))
            .unwrap_or(Ok(d))
    };
    let (k, n, calls, m) = (num(0, 768)?, num(1, 3072)?, num(2, 300)?, num(3, 1)?);
    let dev = Device::Cpu;
    let w = Tensor::randn(0f32, 0.05, (n, k), &dev)?;
    let x = Tensor::randn(0f32, 1.0, (m, k), &dev)?;
    let io = (m * (k + n) * 4) as f64;
    let report = |name: &str, weight_bytes: usize, (us, min): (f64, f64)| {
        let gb = (weight_bytes as f64 + io) / (us * 1e-6) / 1e9;
        println!(
            "{name:<28} {:>9.1} µs (fastest {min:>8.1})  {:>7.2} GB/s  ({weight_bytes} weight bytes)",
            us, gb
        );
    };
    println!(
        "x ({m} × {k}) · Wᵀ, W {n} × {k}, {} threads, median of {calls} calls",
        rayon::current_num_threads()
    );
    engine::cpu::on_pool(|| -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        let path = KernelPath::widest();
        if path != KernelPath::Portable && only.is_none() {
            for dtype in [DType::F32, DType::BF16] {
                let p = PackedWeight::pack(&w.to_dtype(dtype)?, path)?;
                let us = median_us(calls, || {
                    let _ = p.matmul(&x);
                });
                report(
                    &format!("packed-{path}-{}", dtype.as_str()),
                    n * k * dtype.size_in_bytes(),
                    us,
                );
            }
        }
        for (ty, gd) in [
            (GgmlType::Q8_0, GgmlDType::Q8_0),
            (GgmlType::Q4_0, GgmlDType::Q4_0),
            (GgmlType::Q1_0, GgmlDType::Q8_0),
        ] {
            if only
                .as_ref()
                .is_some_and(|o| *o != ty.name().to_lowercase())
            {
                continue;
            }
            let bytes = if ty == GgmlType::Q1_0 {
                // Signs and a mean-magnitude scale per 128 (ggml's quantize_row_q1_0_ref).
                let v = w.flatten_all()?.to_vec1::<f32>()?;
                let mut out = Vec::new();
                for blk in v.chunks(128) {
                    let d = blk.iter().map(|a| a.abs()).sum::<f32>() / 128.0;
                    out.extend(half::f16::from_f32(d).to_le_bytes());
                    let mut bits = [0u8; 16];
                    for (j, a) in blk.iter().enumerate() {
                        if *a >= 0.0 {
                            bits[j / 8] |= 1 << (j % 8);
                        }
                    }
                    out.extend(bits);
                }
                out
            } else {
                QTensor::quantize(&w, gd)?.data()?.to_vec()
            };
            let mut kernels = vec![Kernel::Portable];
            if engine::quant::kernels::has_avx2() {
                kernels.push(Kernel::Avx2);
            }
            if engine::quant::kernels::has_avx512_vnni() {
                kernels.push(Kernel::Avx512Vnni);
            }
            let named = |kernel: Kernel| match kernel {
                Kernel::Portable => "portable",
                Kernel::Avx2 => "avx2",
                _ => "avx512",
            };
            for kernel in kernels {
                if kernel_only.as_ref().is_some_and(|o| o != named(kernel)) {
                    continue;
                }
                // Copies of the matrix, called in turn: more of them than the caches hold make
                // each call stream its weights from memory, as a model's layers do.
                let qs = (0..copies)
                    .map(|_| {
                        QMatrix::new(ty, n, k, bytes.clone(), KernelPath::Portable, &dev)
                            .map(|q| q.with_kernel(kernel))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let mut turn = 0;
                let us = median_us(calls, || {
                    let _ = qs[turn % copies].matmul(&x);
                    turn += 1;
                });
                report(qs[0].label(), qs[0].stored_bytes(), us);
            }
            if ty == GgmlType::Q8_0 {
                let c = QMatMul::from_qtensor(QTensor::quantize(&w, gd)?)?;
                let us = median_us(calls, || {
                    let _ = c.forward(&x);
                });
                report("candle-q8_0 (QMatMul)", bytes.len(), us);
            }
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    Ok(())
}
