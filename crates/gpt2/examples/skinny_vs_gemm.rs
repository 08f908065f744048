//! Times the skinny matmul kernel against candle's gemm on GPT-2 small's weight shapes,
//! alternating the two so a busy machine slows both alike.
//!
//!     cargo run --release -p gpt2 --example skinny_vs_gemm

use std::time::Instant;

use candle_core::{Device, Tensor};
use gpt2::skinny_matmul;

fn main() -> candle_core::Result<()> {
    let dev = Device::Cpu;
    println!("{:<12} {:>3} {:>10} {:>10} {:>8}", "matrix", "M", "gemm ms", "skinny ms", "speed-up");
    for (name, k, n) in [("c_attn", 768, 2304), ("c_fc", 768, 3072), ("mlp.c_proj", 3072, 768), ("lm_head", 768, 50257)] {
        let w = Tensor::randn(0f32, 0.02, (n, k), &dev)?;
        for m in [2, 8, 16] {
            let x = Tensor::randn(0f32, 1.0, (m, k), &dev)?;
            let (mut g, mut s) = (Vec::new(), Vec::new());
            for i in 0..12 {
                let t = Instant::now();
                std::hint::black_box(x.matmul(&w.t()?)?);
                let gemm = t.elapsed().as_secs_f64() * 1e3;
                let t = Instant::now();
                std::hint::black_box(skinny_matmul::matmul(&x, &w)?);
                let skinny = t.elapsed().as_secs_f64() * 1e3;
                if i >= 2 {
                    g.push(gemm);
                    s.push(skinny);
                }
            }
            let (g, s) = (gpt2::bench::median(&mut g), gpt2::bench::median(&mut s));
            println!("{name:<12} {m:>3} {g:>10.3} {s:>10.3} {:>7.2}x", g / s);
        }
    }
    Ok(())
}
