//! The course's second tier: a model the engine does not implement, run by candle-transformers
//! and profiled through the `tracing` spans it opens (`profiler::ProfilerLayer`). Today: GGUF
//! files of the Llama and Qwen2 families, through candle-transformers' quantized models, whose
//! matmuls dequantise their weights as they read them.
//!
//! What such a profile can and cannot say: its rows are the spans the model's authors opened
//! (`qmatmul`, `attn`, `attn-rot`, `attn-mlp`, `output`, ...), without shapes and without a work
//! count, so no row has a roofline; the time of the forward pass that no span covers is one
//! row, [`UNTRACED`], on "everything else". Never an invented count.

pub mod gguf;

use std::path::Path;

use candle_core::{Device, Tensor};
use engine::{Error, Result};
use profiler::{Line, OpName, Options, Profile, Profiler, Schedule};

/// The row of the forward pass's time that no span of the model covers.
pub const UNTRACED: OpName = OpName::new("outside_any_span", Line::Other);

/// A model of the second tier.
pub struct TracedModel {
    inner: Inner,
    /// `general.architecture` (GGUF) or `model_type` (safetensors).
    pub architecture: String,
    /// The weights' type as stored (`q8_0`, `q4_0`, `f16`, ...; the largest tensors').
    pub weight_type: String,
    pub parameters: usize,
    device: Device,
}

enum Inner {
    Llama(candle_transformers::models::quantized_llama::ModelWeights),
    Qwen2(candle_transformers::models::quantized_qwen2::ModelWeights),
}

/// The GGUF architectures this tier runs, and which candle-transformers model runs each.
pub const GGUF_ARCHITECTURES: [(&str, &str); 2] = [("llama", "quantized_llama"), ("qwen2", "quantized_qwen2")];

impl TracedModel {
    /// Reads a GGUF file. An architecture this tier does not run is an error naming it and
    /// those it runs.
    pub fn load_gguf(path: &Path, device: &Device) -> Result<Self> {
        let bad = |message: String| Error::Weights { path: path.to_owned(), message };
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let content = candle_core::quantized::gguf_file::Content::read(&mut file).map_err(|e| bad(format!("not a readable GGUF file: {e}")))?;
        let summary = gguf::Summary::of(&content);
        let architecture = summary.architecture.clone().ok_or_else(|| bad("no general.architecture in its metadata".into()))?;
        let inner = match architecture.as_str() {
            "llama" => Inner::Llama(candle_transformers::models::quantized_llama::ModelWeights::from_gguf(content, &mut file, device).map_err(|e| bad(e.to_string()))?),
            "qwen2" => Inner::Qwen2(candle_transformers::models::quantized_qwen2::ModelWeights::from_gguf(content, &mut file, device).map_err(|e| bad(e.to_string()))?),
            other => {
                let runs: Vec<&str> = GGUF_ARCHITECTURES.iter().map(|(a, _)| *a).collect();
                return Err(bad(format!("general.architecture \"{other}\" is not one this program runs from a GGUF file ({})", runs.join(", "))));
            }
        };
        Ok(Self { inner, architecture, weight_type: summary.weight_type, parameters: summary.parameters, device: device.clone() })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Logits of the last position of `ids` (`[batch, seq]`) after `position` cached ones.
    pub fn forward(&mut self, ids: &Tensor, position: usize) -> Result<Tensor> {
        Ok(match &mut self.inner {
            Inner::Llama(m) => m.forward(ids, position)?,
            Inner::Qwen2(m) => m.forward(ids, position)?,
        })
    }

    /// Forgets the cached keys and values, so that the next forward starts a sequence.
    fn restart(&mut self) {
        match &mut self.inner {
            // quantized_llama keeps no way to clear its cache but a new pass at position 0,
            // which replaces it.
            Inner::Llama(_) => {}
            Inner::Qwen2(m) => m.clear_kv_cache(),
        }
    }
}

/// Records forward passes of `seq` tokens (one sequence) under the profiler, `warmup` thrown
/// away and `active` recorded: each pass a fresh sequence, the model's spans its rows, and the
/// time no span covers one [`UNTRACED`] row. The model must have been loaded with a
/// [`profiler::ProfilerLayer`] subscriber in place (its spans are made when it is built): see
/// [`with_span_profiler`].
pub fn profile(model: &mut TracedModel, seq: usize, warmup: usize, active: usize) -> Result<Profile> {
    let ids: Vec<u32> = (0..seq).map(|t| (t * 104_729 % 97 + 3) as u32).collect();
    let ids = Tensor::new(ids.as_slice(), model.device())?.unsqueeze(0)?;
    let options = Options {
        schedule: Schedule::new(0, warmup, active.max(1), 1),
        record_shapes: true,
        device: if model.device().is_cuda() { profiler::DeviceKind::Cuda } else { profiler::DeviceKind::Cpu },
        threads: Some(candle_core::utils::get_num_threads()),
        ..Options::default()
    };
    let mut prof = Profiler::new(options).with_reading_thresholds(profiler::reading::Thresholds::DEFAULT);
    while !prof.is_done() {
        prof.step(|| {
            model.restart();
            let _untraced = profiler::op(UNTRACED);
            let logits = model.forward(&ids, 0)?;
            model.device().synchronize()?;
            Ok::<_, Error>(logits)
        })?;
    }
    let mut profile = prof.finish();
    profile.environment.dtype = model.weight_type.clone();
    Ok(profile)
}

/// Runs `f` with a [`profiler::ProfilerLayer`] as this thread's `tracing` subscriber: a model
/// built and run inside it has its spans recorded as profiler rows.
pub fn with_span_profiler<T>(f: impl FnOnce() -> T) -> T {
    use tracing_subscriber::layer::SubscriberExt;
    let subscriber = tracing_subscriber::registry().with(profiler::ProfilerLayer::new());
    tracing::subscriber::with_default(subscriber, f)
}

/// Exercise 8's second tier in one call: `path`'s GGUF, refused before it is read when twice its
/// file size exceeds the free memory, loaded on `device` under a [`profiler::ProfilerLayer`] and
/// profiled as `spec` says (one sequence: `spec.batch` must be 1). The profile's environment
/// names the model and the tier. Returns it with a line that describes the model.
pub fn profile_file(path: &Path, device: &Device, spec: &engine::profile::ForwardProfile) -> Result<(Profile, String)> {
    if spec.batch != 1 {
        return Err(Error::Input(format!("--batch {}: a GGUF model profiles one sequence (--batch 1)", spec.batch)));
    }
    if !path.is_file() {
        return Err(Error::Input(format!("--model {}: no such file; give the path of a GGUF file, a Hub repository id or a checkpoint folder", path.display())));
    }
    let (summary, size) = gguf::Summary::read(path)?;
    let detail = format!("is a {} GGUF file", engine::memory::gib(size));
    engine::memory::check_fits(&path.display().to_string(), 2 * size, &detail)?;
    let (mut profile, model) = with_span_profiler(|| -> Result<_> {
        let mut model = TracedModel::load_gguf(path, device)?;
        let profile = profile(&mut model, spec.seq, spec.warmup, spec.active)?;
        Ok((profile, model))
    })?;
    profile.environment.model = Some(path.display().to_string());
    profile.environment.tier = Some("spans".into());
    let runs = GGUF_ARCHITECTURES.iter().find(|(a, _)| *a == model.architecture).map_or("", |(_, m)| *m);
    let line = format!(
        "{}: {} ({:.1} M parameters, mostly {}), second tier: candle-transformers' {runs} through its tracing spans; rows \
         are the spans it opens, without work counts, so no roofline; `{}` is the forward's time no span covers",
        path.display(),
        model.architecture,
        summary.parameters as f64 / 1e6,
        model.weight_type,
        UNTRACED.name
    );
    Ok((profile, line))
}
