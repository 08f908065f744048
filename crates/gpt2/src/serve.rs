//! `gpt2 serve`: GPT-2 behind the course's OpenAI-compatible server with continuous batching
//! (the `serving` crate, which serves any engine model; `cargo run -p serve -- --model ...`
//! serves the Llama family too). The flags are the model's ([`ModelArgs`]) and the server's
//! ([`serving::ServerArgs`]).

use std::sync::Arc;

use anyhow::Result;

use crate::cli::ModelArgs;

#[derive(clap::Args, Debug, Clone)]
pub struct ServeArgs {
    #[command(flatten)]
    pub model: ModelArgs,

    #[command(flatten)]
    pub server: serving::ServerArgs,
}

/// GPT-2 ready to serve: the model, its tokenizer (a checkpoint without one is refused: the
/// server turns text into tokens), its limits, no chat template (GPT-2 has none).
pub fn served_model(model_args: &ModelArgs, program: &str) -> Result<serving::ServedModel> {
    let loaded = model_args.load()?;
    let Some(tokenizer) = loaded.tokenizer else {
        return Err(serving::no_tokenizer(loaded.checkpoint.path(), program));
    };
    let cfg = loaded.model.config();
    let kv_dtype = serving::kv_dtype(&loaded.model);
    // Keys and values, every layer, n_embd wide each.
    let kv_bytes_per_token = (2 * cfg.n_layer * cfg.n_embd * kv_dtype.size_in_bytes()) as u64;
    Ok(serving::ServedModel {
        limits: crate::generate::limits(cfg),
        kv_dtype,
        kv_bytes_per_token,
        model: Box::new(loaded.model),
        tokenizer,
        chat_template: crate::weights::load_chat_template(&loaded.checkpoint)?,
        synthetic: loaded.checkpoint.synthetic,
    })
}

/// `gpt2 serve`: load the model, listen, serve until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<()> {
    let model_args = Arc::new(args.model.clone());
    let load: serving::Loader = Box::new(move || served_model(&model_args, "gpt2 serve"));
    serving::run(args.server, "gpt2 serve", args.model.model.clone(), load)
}
