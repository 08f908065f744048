//! Exercise 8's command line.

use clap::Parser;
use engine::profile::ScheduleArgs;
use engine::run_args::RunArgs;
use llama::source::DEFAULT_MODEL;

/// The flags `cargo run -p exercise-8 -- ...` takes (`--exercise-dir` is added by
/// `course_model::exercise::main`).
#[derive(Parser)]
#[command(
    about = "Exercise 8: profile a model of your own choosing, print its top ops and write results/report.json",
    long_about = "Exercise 8: Your own model.\n\n\
        Supported: the Llama family, on the course's own engine, every op in its own row with its work count and \
        roofline (the first tier): config.json's model_type llama (Llama 2, 3, 3.1, 3.2, SmolLM, SmolLM2, \
        TinyLlama), mistral, qwen2 (Qwen2, Qwen2.5) and qwen3, from safetensors checkpoints in f32, bf16 or f16, \
        and GGUF files whose general.architecture is llama, qwen2 or qwen3, their matrices kept in the types the \
        file stores (q8_0, q4_0, q1_0, q4_k, q6_k, f16, bf16; --dtype does not apply), each quantized matmul in \
        its own row with its kernel and its work counted at the stored width. \
        The second tier: a checkpoint whose model_type is phi3 or gemma (candle-transformers' phi3 and gemma \
        models), or a GGUF file the engine does not read (run by candle-transformers' quantized_llama or \
        quantized_qwen2 where it can), profiled through the tracing spans those models open: the rows are those \
        spans, without work counts (so no roofline), and the time no span covers is one row, outside_any_span. \
        Other model types are refused with what was found.\n\n\
        --model takes a Hub repository id (downloaded once into the Hugging Face cache; offline, the cache), a \
        folder holding config.json and model.safetensors (or an index and its shards), a synthetic checkpoint \
        with a real model's shapes (synthetic-smollm2-135m, synthetic-llama-tiny), a GGUF file, or a Hub \
        repository of GGUF files (--file NAME picks one; else its only one, else its one Q8_0 file). A model \
        needs about twice its weights in free memory while it loads (parameters × 4 bytes in f32, × 2 in bf16; a \
        GGUF file's bytes as stored); a larger one is refused before anything is read.\n\n\
        Before the profile, in a terminal, it asks for your prediction of the table's top op when answers.toml \
        holds none yet, and, for a safetensors checkpoint on the first tier, your memory prediction ([memory]: \
        parameters × bytes per weight does not count a GGUF file's quantized blocks, so a GGUF is not asked it). \
        Then fill in answers.toml from the table and run `course check 8`."
)]
pub struct Args {
    /// The model: a Hub repository id (of a safetensors checkpoint or of GGUF files), a
    /// checkpoint folder, synthetic-smollm2-135m / synthetic-llama-tiny (offline, the default
    /// falls back to synthetic-smollm2-135m), or a GGUF file (llama, qwen2 and qwen3 on the first
    /// tier, their weights as stored; another architecture on the second).
    #[arg(long, default_value = DEFAULT_MODEL, value_name = "ID|DIR|synthetic-NAME|FILE.gguf")]
    pub model: String,
    /// Which GGUF file of a Hub repository of several (e.g. model-Q4_0.gguf).
    #[arg(long, value_name = "NAME")]
    pub file: Option<String>,
    #[command(flatten)]
    pub run: RunArgs,
    /// Rows printed (results/report.json holds every row).
    #[arg(long, default_value_t = 12)]
    pub row_limit: usize,
    #[command(flatten)]
    pub schedule: ScheduleArgs,
    /// Record memory too (PyTorch's `profile_memory=True`): CPU Mem, Self CPU Mem and the
    /// allocations of every row, the step's peak under the table and in results/report.json;
    /// then a generation of --memory-batch sequences filling --memory-context positions, whose
    /// measured peak results/memory.json holds beside the config your prediction is graded
    /// against (the first tier from safetensors, on a CPU).
    #[arg(long)]
    pub profile_memory: bool,
    /// Your memory prediction's sequences (answers.toml's [memory] batch).
    #[arg(long, default_value_t = 4, value_name = "N")]
    pub memory_batch: usize,
    /// Your memory prediction's context: the positions each sequence's KV cache holds, prompt
    /// and generated tokens together (answers.toml's [memory] context).
    #[arg(long, default_value_t = 256, value_name = "TOKENS")]
    pub memory_context: usize,
}
