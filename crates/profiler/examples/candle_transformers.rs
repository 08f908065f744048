//! Profile a model nobody instrumented: a tiny Llama from candle-transformers, whose
//! `with_tracing` wrappers (`linear`, `rms-norm`, `attn-rot`…) and blocks open `tracing`
//! spans. `ProfilerLayer` turns those spans into profiler scopes, so the model lands in the
//! same key_averages table, Chrome trace and flame graph as hand-placed scopes do.
//!
//! The weights are random but seeded (a small generator keyed by each tensor's name), so
//! the run needs no download and computes the same logits every time.
//!
//! Run: `cargo run -p profiler --example candle_transformers -- [OUT_DIR]`
//! (default OUT_DIR: `target/candle-transformers-profile`).
//!
//! The test `tests/tracing_model.rs` includes this file and calls [`run`], so what this
//! prints is what the test checks.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Shape, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::{Init, VarBuilder};
use candle_transformers::models::llama::{Cache, Llama, LlamaConfig};
use profiler::{Options, Profile, Profiler, ProfilerLayer, Schedule, SortBy, TableOptions};
use tracing_subscriber::layer::SubscriberExt;

/// Decoder layers of the tiny model.
pub const LAYERS: usize = 2;
/// Vocabulary size: the logits' last dimension.
pub const VOCAB: usize = 256;
/// The seed the example runs with.
pub const SEED: u64 = 42;

/// Weights drawn from a fixed-seed generator, one stream per tensor name, so every build of
/// the model has the same weights (candle's CPU generator cannot be seeded).
struct SeededWeights {
    seed: u64,
}

/// splitmix64: small, fast and good enough for test weights.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl SeededWeights {
    fn tensor(
        &self,
        shape: Shape,
        name: &str,
        init: Init,
        dtype: DType,
        device: &Device,
    ) -> candle_core::Result<Tensor> {
        // Norm scales ask for a constant (1.0): keep it, or the activations drift.
        if let Init::Const(value) = init {
            return Tensor::full(value as f32, shape, device)?.to_dtype(dtype);
        }
        let (lo, hi) = match init {
            Init::Uniform { lo, up } => (lo as f32, up as f32),
            // Everything else: uniform with the scale of a default linear layer.
            _ => {
                let fan_in = shape.dims().last().copied().unwrap_or(1).max(1) as f32;
                (-fan_in.sqrt().recip(), fan_in.sqrt().recip())
            }
        };
        // FNV-1a of the name, mixed with the seed: each tensor has its own stream.
        let mut state = name
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325u64 ^ self.seed, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
        let values: Vec<f32> = (0..shape.elem_count())
            .map(|_| lo + (hi - lo) * (splitmix64(&mut state) >> 40) as f32 / (1u64 << 24) as f32)
            .collect();
        Tensor::from_vec(values, shape, device)?.to_dtype(dtype)
    }
}

impl SimpleBackend for SeededWeights {
    fn get(
        &self,
        s: Shape,
        name: &str,
        h: Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        self.tensor(s, name, h, dtype, dev)
    }

    fn get_unchecked(
        &self,
        name: &str,
        _dtype: DType,
        _dev: &Device,
    ) -> candle_core::Result<Tensor> {
        candle_core::bail!("the seeded weights need a shape for `{name}`")
    }

    fn contains_tensor(&self, _name: &str) -> bool {
        true
    }
}

/// A tiny Llama (hidden 64, 4 heads, 2 KV heads, [`LAYERS`] layers) with seeded weights.
pub fn tiny_llama(device: &Device, seed: u64) -> candle_core::Result<(Llama, Cache)> {
    let config: LlamaConfig = serde_json::from_value(serde_json::json!({
        "hidden_size": 64,
        "intermediate_size": 128,
        "vocab_size": VOCAB,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
        "max_position_embeddings": 64,
    }))
    .map_err(|e| candle_core::Error::Msg(format!("tiny Llama config: {e}")))?;
    let config = config.into_config(false);
    let vb = VarBuilder::from_backend(Box::new(SeededWeights { seed }), DType::F32, device.clone());
    let model = Llama::load(vb, &config)?;
    let cache = Cache::new(false, DType::F32, &config, device)?;
    Ok((model, cache))
}

/// The prompt every step runs: 8 token ids.
pub fn prompt(device: &Device) -> candle_core::Result<Tensor> {
    Tensor::new(&[[1u32, 5, 9, 2, 7, 3, 4, 8]], device)
}

/// Build the model under a [`ProfilerLayer`] and record `active` forward passes after one
/// warm-up. Returns the profile and the last step's logits.
pub fn record(active: usize, seed: u64) -> candle_core::Result<(Profile, Tensor)> {
    let subscriber = tracing_subscriber::registry().with(ProfilerLayer::new());
    // Spans are made when the model is built: the subscriber must be in place before.
    tracing::subscriber::with_default(subscriber, || {
        let device = Device::Cpu;
        let (model, mut cache) = tiny_llama(&device, seed)?;
        let tokens = prompt(&device)?;
        let options = Options {
            schedule: Schedule::new(0, 1, active, 1),
            ..Options::default()
        };
        let mut prof = Profiler::new(options);
        let mut logits = None;
        while !prof.is_done() {
            logits = Some(prof.step(|| model.forward(&tokens, 0, &mut cache))?);
        }
        let logits = logits.ok_or_else(|| candle_core::Error::Msg("no step ran".into()))?;
        Ok((prof.finish(), logits))
    })
}

/// What [`run`] printed and wrote.
pub struct Written {
    pub table: String,
    pub report: PathBuf,
    pub trace: PathBuf,
    pub flamegraph: PathBuf,
}

/// Record three steps, and write `report.json`, `trace.json` and `flamegraph.svg` into `out`
/// (created if missing). Returns the table and the paths.
pub fn run(out: &Path) -> Result<Written, Box<dyn std::error::Error>> {
    let (profile, _) = record(3, SEED)?;
    std::fs::create_dir_all(out).map_err(|e| {
        format!(
            "cannot create {}: {e}. Pick a writable folder.",
            out.display()
        )
    })?;
    let written = Written {
        table: profile.table(TableOptions {
            sort_by: SortBy::SelfCpuTimeTotal,
            ..TableOptions::default()
        }),
        report: out.join("report.json"),
        trace: out.join("trace.json"),
        flamegraph: out.join("flamegraph.svg"),
    };
    profile.report().write_json(&written.report)?;
    profile.chrome_trace(&written.trace)?;
    profile.flamegraph_svg(&written.flamegraph)?;
    Ok(written)
}

const HELP: &str = "\
Profile a tiny candle-transformers Llama (seeded random weights, no download) through
profiler::ProfilerLayer: print its key_averages table and write report.json, trace.json
and flamegraph.svg.

Usage: cargo run -p profiler --example candle_transformers -- [OUT_DIR]

  OUT_DIR     where the files go (default: target/candle-transformers-profile)
  -h, --help  print this help";

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{HELP}");
        return std::process::ExitCode::SUCCESS;
    }
    if args.len() > 1 || args.iter().any(|a| a.starts_with('-')) {
        eprintln!(
            "error: expected at most one argument, the output folder; got {args:?}\n\n{HELP}"
        );
        return std::process::ExitCode::from(2);
    }
    let out = PathBuf::from(
        args.first()
            .map_or("target/candle-transformers-profile", String::as_str),
    );
    match run(&out) {
        Ok(w) => {
            print!("{}", w.table);
            println!(
                "\nwrote {}, {} (open in https://ui.perfetto.dev) and {}",
                w.report.display(),
                w.trace.display(),
                w.flamegraph.display()
            );
            std::process::ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
