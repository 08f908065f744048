//! Times the CPU matmul kernels on GPT-2 small's weight shapes: candle's gemm (weight
//! (out, in) used transposed, what the `portable` path runs) and the packed kernel on the
//! AVX-512 and AVX2 paths, alternating them so a busy machine slows all alike, and reports
//! each one's fastest run (ms) and its GFLOP/s. A path this CPU lacks shows `NaN`.
//!
//!     cargo run -p gpt2 --example matmul_kernels [M ...]

use std::time::Instant;

use candle_core::{Device, Tensor};
use engine::cpu::{packed_matmul, KernelPath};

fn main() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    let ms: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let ms = if ms.is_empty() {
        vec![1, 8, 16, 128]
    } else {
        ms
    };
    println!(
        "fastest of 10 runs, {} threads",
        rayon::current_num_threads()
    );
    println!(
        "{:<12} {:>4} {:>9} {:>10} {:>10} {:>8} {:>8} {:>8}",
        "matrix", "M", "gemm ms", "p-avx512", "p-avx2", "gemm GF", "p512 GF", "p2 GF"
    );
    for (name, k, n) in [
        ("c_attn", 768, 2304),
        ("attn.c_proj", 768, 768),
        ("c_fc", 768, 3072),
        ("mlp.c_proj", 3072, 768),
        ("lm_head", 768, 50257),
    ] {
        let w = Tensor::randn(0f32, 0.02, (n, k), &dev)?;
        let pack = |path: KernelPath| {
            path.is_supported()
                .then(|| packed_matmul::PackedWeight::pack(&w, path))
                .transpose()
        };
        let (packed512, packed2) = (pack(KernelPath::Avx512)?, pack(KernelPath::Avx2)?);
        for &m in &ms {
            let x = Tensor::randn(0f32, 1.0, (m, k), &dev)?;
            let mut times = [Vec::new(), Vec::new(), Vec::new()];
            for i in 0..12 {
                let mut time = |slot: usize,
                                f: &dyn Fn() -> candle_core::Result<Option<Tensor>>|
                 -> candle_core::Result<()> {
                    let t = Instant::now();
                    let ran = std::hint::black_box(f()?).is_some();
                    if i >= 2 && ran {
                        times[slot].push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    Ok(())
                };
                time(0, &|| x.matmul(&w.t()?).map(Some))?;
                time(1, &|| packed512.as_ref().map(|p| p.matmul(&x)).transpose())?;
                time(2, &|| packed2.as_ref().map(|p| p.matmul(&x)).transpose())?;
            }
            // The fastest run of each: on a busy machine, the one least disturbed by others.
            let best: Vec<f64> = times
                .iter()
                .map(|t| t.iter().copied().fold(f64::NAN, f64::min))
                .collect();
            let gflop = 2.0 * (m * k * n) as f64 / 1e9;
            let gf = |ms: f64| gflop / ms * 1e3;
            println!(
                "{name:<12} {m:>4} {:>9.3} {:>10.3} {:>10.3} {:>8.1} {:>8.1} {:>8.1}",
                best[0],
                best[1],
                best[2],
                gf(best[0]),
                gf(best[1]),
                gf(best[2])
            );
        }
    }
    Ok(())
}
