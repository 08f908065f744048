//! The course's second tier: a model the engine does not implement, run by candle-transformers
//! and profiled through the `tracing` spans it opens (`profiler::ProfilerLayer`). Today: GGUF
//! files of the Llama and Qwen2 families, through candle-transformers' quantized models, whose
//! matmuls dequantise their weights as they read them; and Phi-3 and Gemma checkpoints
//! (safetensors), through its `phi3` and `gemma` models.
//!
//! What such a profile can and cannot say: its rows are the spans the model's authors opened
//! (`qmatmul`, `attn`, `attn-rot`, `attn-mlp`, `output`, ...), without shapes and without a work
//! count, so no row has a roofline; the time of the forward pass that no span covers is one
//! row, [`UNTRACED`], on "everything else". Never an invented count.

pub mod gguf;
pub mod tiny;

use std::path::Path;

use candle_core::{Device, Tensor};
use engine::profile::ForwardProfile;
use engine::{Error, Result};
use profiler::{Line, OpName, Profile};

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
    Phi3(candle_transformers::models::phi3::Model),
    Gemma(candle_transformers::models::gemma::Model),
}

/// The GGUF architectures this tier runs, and which candle-transformers model runs each.
pub const GGUF_ARCHITECTURES: [(&str, &str); 2] =
    [("llama", "quantized_llama"), ("qwen2", "quantized_qwen2")];

/// The `model_type`s this tier runs from safetensors checkpoints, and the model that runs each.
pub const SAFETENSORS_ARCHITECTURES: [(&str, &str); 2] = [("phi3", "phi3"), ("gemma", "gemma")];

impl TracedModel {
    /// Reads a GGUF file. An architecture this tier does not run is an error naming it and
    /// those it runs.
    pub fn load_gguf(path: &Path, device: &Device) -> Result<Self> {
        let bad = |message: String| Error::Weights {
            path: path.to_owned(),
            message,
        };
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let content = candle_core::quantized::gguf_file::Content::read(&mut file)
            .map_err(|e| bad(format!("not a readable GGUF file: {e}")))?;
        let summary = gguf::Summary::of(&content);
        let architecture = summary
            .architecture
            .clone()
            .ok_or_else(|| bad("no general.architecture in its metadata".into()))?;
        let inner = match architecture.as_str() {
            "llama" => Inner::Llama(
                candle_transformers::models::quantized_llama::ModelWeights::from_gguf(
                    content, &mut file, device,
                )
                .map_err(|e| bad(e.to_string()))?,
            ),
            "qwen2" => Inner::Qwen2(
                candle_transformers::models::quantized_qwen2::ModelWeights::from_gguf(
                    content, &mut file, device,
                )
                .map_err(|e| bad(e.to_string()))?,
            ),
            other => {
                let runs: Vec<&str> = GGUF_ARCHITECTURES.iter().map(|(a, _)| *a).collect();
                return Err(bad(format!("general.architecture \"{other}\" is not one this program runs from a GGUF file ({})", runs.join(", "))));
            }
        };
        Ok(Self {
            inner,
            architecture,
            weight_type: summary.weight_type,
            parameters: summary.parameters,
            device: device.clone(),
        })
    }

    /// Reads a safetensors checkpoint folder whose config.json's `model_type` is one of
    /// [`SAFETENSORS_ARCHITECTURES`], its weights held as `dtype`; refused before any weight is
    /// read when twice their size exceeds the free memory.
    pub fn load_safetensors(
        dir: &Path,
        device: &Device,
        dtype: candle_core::DType,
    ) -> Result<Self> {
        let config_path = dir.join("config.json");
        let text = std::fs::read_to_string(&config_path).map_err(|e| Error::io(&config_path, e))?;
        let bad_config = |message: String| Error::Config {
            path: config_path.clone(),
            message,
        };
        let json: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| bad_config(e.to_string()))?;
        let architecture = json
            .get("model_type")
            .and_then(|v| v.as_str())
            .unwrap_or_default()
            .to_string();
        if !SAFETENSORS_ARCHITECTURES
            .iter()
            .any(|(a, _)| *a == architecture)
        {
            let runs: Vec<&str> = SAFETENSORS_ARCHITECTURES.iter().map(|(a, _)| *a).collect();
            return Err(bad_config(format!("model_type \"{architecture}\" is not one this program runs through candle-transformers ({})", runs.join(", "))));
        }
        let files = engine::checkpoint::safetensors_files(dir)?;
        let parameters = engine::checkpoint::parameters(&files)?;
        let size = parameters as u64 * dtype.size_in_bytes() as u64;
        let detail = format!(
            "has {:.2} billion parameters: {} in {}",
            parameters as f64 / 1e9,
            engine::memory::gib(size),
            dtype.as_str()
        );
        engine::memory::check_fits(&dir.display().to_string(), 2 * size, &detail)?;
        let bad = |e: candle_core::Error| Error::Weights {
            path: files[0].clone(),
            message: engine::error::weights_message(&e, &architecture),
        };
        // SAFETY: mapped read-only; the tensors are copied out while the model is built.
        let vb = unsafe { candle_nn::VarBuilder::from_mmaped_safetensors(&files, dtype, device) }
            .map_err(bad)?;
        let inner = match architecture.as_str() {
            "phi3" => Inner::Phi3(
                candle_transformers::models::phi3::Model::new(
                    &serde_json::from_value(json).map_err(|e| bad_config(e.to_string()))?,
                    vb,
                )
                .map_err(bad)?,
            ),
            // gemma: the only other one the check above lets through.
            _ => Inner::Gemma(
                candle_transformers::models::gemma::Model::new(
                    false,
                    &serde_json::from_value(json).map_err(|e| bad_config(e.to_string()))?,
                    vb,
                )
                .map_err(bad)?,
            ),
        };
        Ok(Self {
            inner,
            architecture,
            weight_type: dtype.as_str().to_string(),
            parameters,
            device: device.clone(),
        })
    }

    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Logits of the last position of `ids` (`[batch, seq]`) after `position` cached ones.
    pub fn forward(&mut self, ids: &Tensor, position: usize) -> Result<Tensor> {
        Ok(match &mut self.inner {
            Inner::Llama(m) => m.forward(ids, position)?,
            Inner::Qwen2(m) => m.forward(ids, position)?,
            Inner::Phi3(m) => m.forward(ids, position)?,
            Inner::Gemma(m) => m.forward(ids, position)?,
        })
    }

    /// Forgets the cached keys and values, so that the next forward starts a sequence.
    fn restart(&mut self) {
        match &mut self.inner {
            // quantized_llama keeps no way to clear its cache but a new pass at position 0,
            // which replaces it.
            Inner::Llama(_) => {}
            Inner::Qwen2(m) => m.clear_kv_cache(),
            Inner::Phi3(m) => m.clear_kv_cache(),
            Inner::Gemma(m) => m.clear_kv_cache(),
        }
    }
}

/// Records forward passes as `spec` says (one sequence of `spec.seq` tokens), with the profiler
/// every model's profile is recorded with (`engine::profile::recorder`): each pass a fresh
/// sequence, the model's spans its rows, and the time no span covers one [`UNTRACED`] row. The
/// model must have been loaded with a [`profiler::ProfilerLayer`] subscriber in place (its spans
/// are made when it is built): see [`with_span_profiler`].
pub fn profile(model: &mut TracedModel, spec: &ForwardProfile) -> Result<Profile> {
    // Ids inside the smallest vocabulary this tier meets (the tests' 256 tokens).
    let ids = engine::profile::sample_ids(1, spec.seq, 256).remove(0);
    let ids = Tensor::new(ids.as_slice(), model.device())?.unsqueeze(0)?;
    let mut prof = engine::profile::recorder(model.device(), spec)?;
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

/// Exercise 8's second tier in one call: the model at `path` (a GGUF file, or a checkpoint
/// folder of [`SAFETENSORS_ARCHITECTURES`] held as `dtype`), refused before its weights are read
/// when it does not fit in the free memory, loaded on `device` under a
/// [`profiler::ProfilerLayer`] and profiled as `spec` says (one sequence: `spec.batch` must be
/// 1). The profile's environment names the model (`name`) and the tier. Returns it with a line
/// that describes the model.
pub fn profile_model(
    path: &Path,
    name: &str,
    device: &Device,
    dtype: candle_core::DType,
    spec: &ForwardProfile,
) -> Result<(Profile, String)> {
    if spec.batch != 1 {
        return Err(Error::Input(format!(
            "--batch {}: the second tier profiles one sequence (--batch 1)",
            spec.batch
        )));
    }
    if !path.exists() {
        return Err(Error::Input(format!("--model {}: no such file; give the path of a GGUF file, a Hub repository id or a checkpoint folder", path.display())));
    }
    let gguf = path.is_file();
    if gguf {
        let (_, size) = gguf::Summary::read(path)?;
        engine::memory::check_fits(
            &path.display().to_string(),
            2 * size,
            &format!("is a {} GGUF file", engine::memory::gib(size)),
        )?;
    }
    let (mut profile, model) = with_span_profiler(|| -> Result<_> {
        let mut model = match gguf {
            true => TracedModel::load_gguf(path, device)?,
            false => TracedModel::load_safetensors(path, device, dtype)?,
        };
        let profile = profile(&mut model, spec)?;
        Ok((profile, model))
    })?;
    profile.environment.model = Some(name.to_string());
    profile.environment.tier = Some("spans".into());
    let runs = GGUF_ARCHITECTURES
        .iter()
        .chain(&SAFETENSORS_ARCHITECTURES)
        .find(|(a, _)| *a == model.architecture)
        .map_or("", |(_, m)| *m);
    let line = format!(
        "{name}: {} ({:.1} M parameters, {}), second tier: candle-transformers' {runs} through its tracing spans; rows are \
         the spans it opens, without work counts, so no roofline; `{}` is the forward's time no span covers",
        model.architecture,
        model.parameters as f64 / 1e6,
        model.weight_type,
        UNTRACED.name
    );
    Ok((profile, line))
}
