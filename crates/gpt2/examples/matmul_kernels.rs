//! Times the CPU matmul kernels on GPT-2 small's weight shapes: candle's gemm (weight
//! (out, in) used transposed), the AVX2 skinny kernel (1–16 rows) and the AVX-512 packed
//! kernel, alternating them so a busy machine slows all alike. Prints GFLOP/s too.
//!
//!     cargo run --release -p gpt2 --example matmul_kernels [M ...]

use std::time::Instant;

use candle_core::{Device, Tensor};
use gpt2::cpu::{packed_matmul, skinny_matmul, KernelPath};

fn main() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let ms: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let ms = if ms.is_empty() { vec![1, 8, 16, 128] } else { ms };
    println!("{:<12} {:>4} {:>9} {:>9} {:>9} {:>8} {:>8}", "matrix", "M", "gemm ms", "skinny ms", "packed ms", "gemm GF", "pack GF");
    for (name, k, n) in [("c_attn", 768, 2304), ("attn.c_proj", 768, 768), ("c_fc", 768, 3072), ("mlp.c_proj", 3072, 768), ("lm_head", 768, 50257)] {
        let w = Tensor::randn(0f32, 0.02, (n, k), &dev)?;
        let packed = KernelPath::Avx512.is_supported().then(|| packed_matmul::PackedWeight::pack(&w)).transpose()?;
        for &m in &ms {
            let x = Tensor::randn(0f32, 1.0, (m, k), &dev)?;
            let mut times = [Vec::new(), Vec::new(), Vec::new()];
            for i in 0..12 {
                let mut time = |slot: usize, f: &dyn Fn() -> candle_core::Result<Option<Tensor>>| -> candle_core::Result<()> {
                    let t = Instant::now();
                    let ran = std::hint::black_box(f()?).is_some();
                    if i >= 2 && ran {
                        times[slot].push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    Ok(())
                };
                time(0, &|| x.matmul(&w.t()?).map(Some))?;
                time(1, &|| if skinny_matmul::applies(&x, &w) { skinny_matmul::matmul(&x, &w).map(Some) } else { Ok(None) })?;
                time(2, &|| packed.as_ref().map(|p| p.matmul(&x)).transpose())?;
            }
            let med: Vec<f64> = times.iter_mut().map(|t| if t.is_empty() { f64::NAN } else { gpt2::timing::median(t) }).collect();
            let gflop = 2.0 * (m * k * n) as f64 / 1e9;
            println!("{name:<12} {m:>4} {:>9.3} {:>9.3} {:>9.3} {:>8.1} {:>8.1}", med[0], med[1], med[2], gflop / med[0] * 1e3, gflop / med[2] * 1e3);
        }
    }
    Ok(())
}
