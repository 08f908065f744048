//! `serve`: any model the course's engine runs behind its OpenAI-compatible server.
//!
//! ```text
//! cargo run -p serve -- --model HuggingFaceTB/SmolLM2-135M      # a Hub repository
//! cargo run -p serve -- --model path/to/checkpoint              # a folder
//! cargo run -p serve -- --model gpt2                            # GPT-2 small (as `gpt2 serve`)
//! cargo run -p serve -- --model synthetic-smollm2-135m          # SmolLM2's shapes, random weights
//! cargo run -p serve -- --model path/to/model-Q8_0.gguf         # a GGUF file, weights kept quantized
//! cargo run -p serve -- --model owner/name-GGUF --file m.gguf   # one GGUF of a Hub repository
//! ```
//!
//! The family comes from the checkpoint's `config.json` (`model_type`): GPT-2, or one of the
//! Llama family the engine implements (Llama 2/3, SmolLM2, TinyLlama, Mistral, Qwen2, Qwen3).
//! The tokenizer is the checkpoint's `tokenizer.json`; chats use its chat template
//! (`tokenizer_config.json`), else a plain transcript, as the first line printed says.
//!
//! A GGUF file (`llama`, `qwen2` or `qwen3` architecture) runs on the engine's own Llama model
//! with its matrices in their stored types (`llama::gguf`), its tokenizer and chat template
//! from the file's metadata; a `gpt2` one on GPT-2 the same way (`gpt2::gguf`). A Hub repository whose files are GGUF files (no safetensors
//! weights) gives the one `--file` names, else its only one, else its one Q8_0 file; with
//! several and no Q8_0, the error lists them.
//!
//! Why a package of its own: the server ([`serving`]) depends on the engine only and serves
//! any [`engine::CausalLm`]; `gpt2` depends on it for `gpt2 serve`; this package depends on
//! `gpt2`, `llama` and `serving` to pick the family, so no package points back up.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use engine::run_args::RunArgs;

const PROGRAM: &str = "serve";

#[derive(Parser, Debug)]
#[command(
    name = "serve",
    version,
    about = "Serve any model the course's engine runs (GPT-2, the Llama family) with an OpenAI-compatible API \
             (/v1/completions, /v1/chat/completions, /v1/models, /health, /metrics), continuous batching and a KV-cache budget"
)]
struct Args {
    /// The checkpoint: a Hub repository id (owner/name, fetched into the Hugging Face cache, or
    /// read from it offline), a folder with config.json, safetensors weights and tokenizer.json,
    /// `gpt2` (GPT-2 small, as `gpt2 serve`), `synthetic` / `synthetic-tiny` (GPT-2's shapes) or
    /// `synthetic-NAME` (a Llama-family shape: synthetic-smollm2-135m, synthetic-llama-tiny).
    #[arg(long, value_name = "ID|DIR|FILE.gguf|gpt2|synthetic-NAME")]
    model: String,

    /// Which GGUF file of the Hub repository `--model` names (e.g. `model-Q4_0.gguf`). Without
    /// it: the repository's only GGUF file, else its one Q8_0 file, else an error listing them.
    #[arg(long, value_name = "NAME")]
    file: Option<String>,

    #[command(flatten)]
    run: RunArgs,

    #[command(flatten)]
    server: serving::ServerArgs,
}

fn main() -> ExitCode {
    let args = Args::parse();
    match serve(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: Args) -> Result<()> {
    // Fetched (or found) before the model thread starts, so what the Hub says comes first.
    let model = Family::of(&args.model, args.file.as_deref(), &args.run)?;
    let run = args.run.clone();
    let load: serving::Loader = Box::new(move || model.load(&run));
    serving::run(args.server, PROGRAM, args.model.clone(), load)
}

/// Which family runs `--model`, with its checkpoint where it is already found.
enum Family {
    /// GPT-2, through `gpt2`'s own `--model` (its names, the pinned Hub revision, a folder, a
    /// gpt2 GGUF file).
    Gpt2(String),
    /// The Llama family, from a checkpoint folder.
    Llama(llama::source::Checkpoint),
    /// The Llama family, from a GGUF file (llama, qwen2, qwen3).
    Gguf(PathBuf),
}

impl Family {
    fn of(model: &str, file: Option<&str>, run: &RunArgs) -> Result<Family> {
        if matches!(
            model,
            "gpt2" | gpt2::weights::HUB_REPO | "synthetic" | "synthetic-tiny"
        ) && file.is_none()
        {
            return Ok(Family::Gpt2(model.to_string()));
        }
        if let Some(path) = llama::source::gguf_of(model, file)? {
            // A gpt2 file runs on GPT-2, through its own `--model FILE.gguf`.
            if gpt2::gguf::is_gpt2(&path)? {
                return Ok(Family::Gpt2(path.display().to_string()));
            }
            return Ok(Family::Gguf(path));
        }
        let checkpoint = llama::source::resolve(
            &llama::source::Source::parse(model)?,
            // The memory check's type; a quantized --dtype is refused when a Llama checkpoint
            // loads (`load_llama`), and a GPT-2 one quantizes its matrices at load.
            run.dtype.dense(),
            &mut |notice| eprintln!("{notice}"),
        )?;
        let config = checkpoint.dir.join("config.json");
        if llama::config::family_of_file(&config)?.is_some() {
            return Ok(Family::Llama(checkpoint));
        }
        if model_type(&config)?.as_deref() == Some("gpt2") {
            return Ok(Family::Gpt2(checkpoint.dir.display().to_string()));
        }
        anyhow::bail!(
            "{}: this model's type is neither GPT-2 nor one of the Llama family the engine runs (Llama, SmolLM2, Mistral, \
             Qwen2, Qwen3); exercise 8 profiles other models through candle-transformers",
            config.display()
        )
    }

    fn load(self, run: &RunArgs) -> Result<serving::ServedModel> {
        match self {
            Family::Gpt2(model) => {
                let args = gpt2::cli::ModelArgs {
                    model,
                    run: run.clone(),
                };
                gpt2::serve::served_model(&args, PROGRAM)
            }
            Family::Llama(checkpoint) => load_llama(&checkpoint, run),
            Family::Gguf(path) => load_gguf(&path, run),
        }
    }
}

/// A Llama-family GGUF file, its matrices in their stored types, with the tokenizer, limits and
/// chat template its metadata holds.
fn load_gguf(path: &Path, run: &RunArgs) -> Result<serving::ServedModel> {
    let device = run.open_device()?;
    let loaded = llama::gguf::load_for_generation(path, &device, run.kernel_path()?)
        .with_context(|| format!("cannot load {}", path.display()))?;
    let tokenizer = loaded.tokenizer.ok_or_else(|| {
        anyhow::anyhow!(
            "{}: the file carries no tokenizer (no tokenizer.ggml.model); the server needs one to read prompts: \
             convert the checkpoint again with llama.cpp's convert_hf_to_gguf.py, which writes it",
            path.display()
        )
    })?;
    let cfg = loaded.model.config();
    let kv_dtype = serving::kv_dtype(&loaded.model);
    let kv_bytes_per_token = llama::generate::kv_bytes_per_token(cfg, kv_dtype);
    Ok(serving::ServedModel {
        limits: loaded.limits,
        kv_dtype,
        kv_bytes_per_token,
        model: Box::new(loaded.model),
        tokenizer,
        chat_template: loaded.chat_template,
        synthetic: false,
    })
}

/// A Llama-family checkpoint with its tokenizer, limits and chat template.
fn load_llama(
    checkpoint: &llama::source::Checkpoint,
    run: &RunArgs,
) -> Result<serving::ServedModel> {
    let dir: &Path = &checkpoint.dir;
    let tokenizer = engine::tokenizer::Tokenizer::from_dir(dir)?
        .ok_or_else(|| serving::no_tokenizer(dir, PROGRAM))?;
    let device = run.open_device()?;
    let dtype = run.dtype.dense_only("Llama-family")?;
    let model = llama::weights::load(dir, &device, dtype, run.kernel_path()?)
        .with_context(|| format!("cannot load {}", checkpoint.name))?;
    let cfg = model.config();
    let kv_dtype = serving::kv_dtype(&model);
    let kv_bytes_per_token = llama::generate::kv_bytes_per_token(cfg, kv_dtype);
    Ok(serving::ServedModel {
        limits: llama::generate::limits(cfg, dir)?,
        kv_dtype,
        kv_bytes_per_token,
        model: Box::new(model),
        tokenizer,
        chat_template: engine::loader::chat_template(dir)?,
        synthetic: checkpoint.synthetic,
    })
}

/// `model_type` of a config.json.
fn model_type(config: &PathBuf) -> Result<Option<String>> {
    let text = std::fs::read_to_string(config)
        .with_context(|| format!("cannot read {}", config.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not JSON", config.display()))?;
    Ok(json
        .get("model_type")
        .and_then(|t| t.as_str())
        .map(str::to_string))
}
