//! The engine benchmark's cases (forward B=1 T=8, prefill 128, decode at context 32 for B = 1,
//! 8 and 16) on a Llama-family checkpoint, for comparison with `llama-bench` on the same weights:
//!
//!     cargo run -p llama --example llama_bench -- [DIR|FILE.gguf|synthetic-smollm2-135m] [f32|bf16|f16] [REPEATS]
//!
//! A GGUF file runs with its matrices in their stored types (q8_0, q4_0, Q1_0: the engine's own
//! kernels), as exercise 8's first tier loads it; the dtype argument does not apply to it.
//!
//! Prints one line per case (median, min and max in ms), for a GGUF file its decode step's
//! memory floor (the bytes it reads as stored over the bandwidth measured in the same run), and
//! the JSON of all of them.

use candle_core::{DType, Device};
use engine::cpu::KernelPath;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let model_arg = args
        .first()
        .map(String::as_str)
        .unwrap_or("synthetic-smollm2-135m");
    let dtype = match args.get(1).map(String::as_str).unwrap_or("f32") {
        "f32" => DType::F32,
        "bf16" => DType::BF16,
        "f16" => DType::F16,
        other => return Err(format!("dtype {other}: use f32, bf16 or f16").into()),
    };
    let repeats: usize = args.get(2).map(|r| r.parse()).transpose()?.unwrap_or(15);
    let dir = match model_arg
        .strip_prefix("synthetic-")
        .and_then(|n| llama::synthetic::SHAPES.iter().find(|s| s.name == n))
    {
        Some(shape) => shape.cached()?,
        None => model_arg.into(),
    };
    let kernels = KernelPath::resolve(None)?;
    let gguf = dir.extension().is_some_and(|e| e == "gguf");
    let model = if gguf {
        llama::gguf::load_quantized(&dir, &Device::Cpu, kernels)?
    } else {
        llama::weights::load(&dir, &Device::Cpu, dtype, kernels)?
    };
    eprintln!(
        "{} ({dtype:?}, {} threads, kernels {})",
        dir.display(),
        candle_core::utils::get_num_threads(),
        engine::CausalLm::kernels(&model)
    );
    let results =
        engine::model_cases::run_model_cases(&model, 3, repeats, |case| eprintln!("  {case}"))?;
    for r in &results {
        println!(
            "{:<18} median {:>9.2} ms  min {:>9.2}  max {:>9.2}",
            r.name, r.median_ms, r.min_ms, r.max_ms
        );
    }
    // A GGUF's decode floor, its stored bytes over the bandwidth measured now, in the same run
    // (on a shared machine the bandwidth moves between runs, and the decode moves with it).
    if gguf {
        let threads = candle_core::utils::get_num_threads();
        let gbps = engine::ceilings::memory_read_bandwidth(threads, 3);
        let floor_ms = llama::gguf::weight_bytes(&dir)? as f64 / (gbps * 1e9) * 1e3;
        let decode = results.iter().find(|r| r.name == "decode_b1_ctx32");
        println!(
            "memory read {gbps:.1} GB/s → decode floor (all weights read once) {floor_ms:.2} ms{}",
            decode.map_or(String::new(), |d| format!(
                "; decode_b1_ctx32 median {:.2}× the floor",
                d.median_ms / floor_ms
            ))
        );
    }
    println!("{}", serde_json::to_string(&results)?);
    Ok(())
}
