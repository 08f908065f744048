//! The engine benchmark's cases (forward B=1 T=8, prefill 128, decode at context 32 for B = 1,
//! 8 and 16) on a Llama-family checkpoint, for comparison with `llama-bench` on the same weights:
//!
//!     cargo run -p llama --example llama_bench -- [DIR|FILE.gguf|synthetic-smollm2-135m] [f32|bf16|f16] [REPEATS]
//!
//! A GGUF file runs with its matrices in their stored types (q8_0, q4_0, Q1_0: the engine's own
//! kernels), as exercise 8's first tier loads it; the dtype argument does not apply to it.
//!
//! Prints one line per case (median, min and max in ms) and the JSON of all of them.

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
    let model = if dir.extension().is_some_and(|e| e == "gguf") {
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
    println!("{}", serde_json::to_string(&results)?);
    Ok(())
}
