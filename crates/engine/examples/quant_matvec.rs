//! A decode step's matrix-vector product, `x (m × k) · Wᵀ` with `W` `n × k` (`m` = 1, or a few
//! rows as a short prefill chunk or a batch of decodes gives), in each weight
//! format the engine multiplies: f32 and bf16 on the packed kernel, Q8_0, Q4_0 and Q1_0 on the
//! quantized kernels of every path this CPU has, and candle's Q8_0 for comparison. Prints the
//! median time a call and the GB/s at the stored width (the weight's bytes with its scales, `x`
//! and the output), the figure a profile row's roofline reads.
//!
//!     cargo run -p engine --example quant_matvec -- [K N] [CALLS] [M] [--type q1_0]
//!
//! Default: k = 768, n = 3072 (GPT-2 small's MLP up-projection), 300 calls each, m = 1, every
//! format (`--type` keeps one quantized type and skips the dense ones).

use std::time::Instant;

use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};
use engine::cpu::packed_matmul::PackedWeight;
use engine::cpu::KernelPath;
use engine::quant::{GgmlType, Kernel, QMatrix};

fn median_us(calls: usize, mut f: impl FnMut()) -> f64 {
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
    t[calls / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--help" || a == "-h") {
        println!("usage: quant_matvec [K N] [CALLS] [M] [--type q8_0|q4_0|q1_0]  (default 768 3072 300 1)");
        return Ok(());
    }
    let (args, only) = match args.iter().position(|a| a == "--type") {
        Some(i) => {
            let name = args.get(i + 1).ok_or("--type needs a type")?.to_lowercase();
            let rest = [&args[..i], &args[(i + 2).min(args.len())..]].concat();
            (rest, Some(name))
        }
        None => (args, None),
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
    let report = |name: &str, weight_bytes: usize, us: f64| {
        let gb = (weight_bytes as f64 + io) / (us * 1e-6) / 1e9;
        println!(
            "{name:<28} {:>9.1} µs  {:>7.2} GB/s  ({weight_bytes} weight bytes)",
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
            for kernel in kernels {
                let q = QMatrix::new(ty, n, k, bytes.clone(), KernelPath::Portable, &dev)?
                    .with_kernel(kernel);
                let us = median_us(calls, || {
                    let _ = q.matmul(&x);
                });
                report(q.label(), q.stored_bytes(), us);
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
