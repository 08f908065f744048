//! Exercise 8's memory prediction: its givens, printed and written to results/memory.json
//! (`formats::memory`), and the generation `--profile-memory` measures beside them.

use std::path::Path;

use anyhow::{Context, Result};
use engine::profile::{profile_generation_memory, ForwardProfile};
use engine::CausalLm;

use formats::memory::{Categories, Measured, MeasuredPeak, MemoryRecord, ModelConfig};

use crate::args::Args;

/// Decode steps of the measured generation: the rest of the context is its prompt, prefilled
/// at once (the largest activations a generation holds).
const MEMORY_NEW_TOKENS: usize = 16;

/// Your memory prediction's givens, written to results/memory.json: the batch and context, the
/// config values the course's arithmetic reads, and, after a `--profile-memory` run, the peak a
/// generation at that batch and context measured. `course check 8` recomputes your `[memory]`
/// answers from this config, never from the measurement.
pub struct MemoryGiven {
    /// The model as you named it.
    pub model: String,
    /// The sequences generated at once.
    pub batch: usize,
    /// The positions each sequence's KV cache holds, prompt and generated tokens together.
    pub context: usize,
    pub parameters: usize,
    pub layers: usize,
    /// Key/value heads (fewer than the query heads under grouped-query attention).
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Query heads.
    pub heads: usize,
    pub hidden_size: usize,
    pub intermediate_size: usize,
    pub vocab_size: usize,
    /// The weights' type as loaded (`--dtype`).
    pub weights_dtype: candle_core::DType,
    /// The KV cache's: the activations' type, f32 on the CPU's packed kernels whatever the
    /// weights' type.
    pub kv_dtype: candle_core::DType,
    /// What `--profile-memory` measured of the generation, once it has.
    measured: Option<Measured>,
}

impl MemoryGiven {
    /// The givens of `model` (named `name`) at the batch and context `args` ask for, printed
    /// as the learner reads them.
    pub fn of(
        model: &llama::Model,
        name: &str,
        args: &Args,
        device: &candle_core::Device,
    ) -> Result<Self> {
        let cfg = model.config();
        let batch = args.memory_batch;
        if batch == 0 || args.memory_context < 2 || cfg.max_positions < 2 {
            anyhow::bail!(
                "--memory-batch {batch} --memory-context {}: the prediction needs at least one sequence \
                 and a context of at least 2 positions",
                args.memory_context
            );
        }
        // A model whose longest sequence is shorter than the context asked for is predicted at
        // its longest (the default context suits real models, not the tests' tiny ones).
        let context = args.memory_context.min(cfg.max_positions);
        if context < args.memory_context {
            println!(
                "(--memory-context {}: {} holds at most {context} positions, so the prediction is at {context})",
                args.memory_context, name
            );
        }
        let given = Self {
            model: name.to_string(),
            batch,
            context,
            parameters: cfg.parameters(),
            layers: cfg.num_hidden_layers,
            kv_heads: cfg.num_key_value_heads,
            head_dim: cfg.head_dim,
            heads: cfg.num_attention_heads,
            hidden_size: cfg.hidden_size,
            intermediate_size: cfg.intermediate_size,
            vocab_size: cfg.vocab_size,
            weights_dtype: args.run.dtype.dense(),
            kv_dtype: args
                .run
                .kernel_path()?
                .activations(device, args.run.dtype.dense()),
            measured: None,
        };
        println!(
            "Your memory prediction ([memory] in answers.toml): {batch} sequences whose KV caches hold {context} \
             positions each. The config: {} parameters, weights in {} ({} bytes each); {} layers, {} key/value \
             heads of {} dimensions; the KV cache in {} ({} bytes each).",
            given.parameters,
            given.weights_dtype.as_str(),
            given.weights_dtype.size_in_bytes(),
            given.layers,
            given.kv_heads,
            given.head_dim,
            given.kv_dtype.as_str(),
            given.kv_dtype.size_in_bytes()
        );
        Ok(given)
    }

    /// results/memory.json's record of these givens and what was measured.
    pub fn record(&self) -> MemoryRecord {
        let n = |v: usize| v as u64;
        let mut record = MemoryRecord::new(
            self.model.clone(),
            n(self.batch),
            n(self.context),
            ModelConfig {
                parameters: n(self.parameters),
                layers: n(self.layers),
                kv_heads: n(self.kv_heads),
                head_dim: n(self.head_dim),
                heads: n(self.heads),
                hidden_size: n(self.hidden_size),
                intermediate_size: n(self.intermediate_size),
                vocab_size: n(self.vocab_size),
                weights_dtype: self.weights_dtype.as_str().to_string(),
                weight_bytes: n(self.weights_dtype.size_in_bytes()),
                kv_dtype: self.kv_dtype.as_str().to_string(),
                kv_bytes: n(self.kv_dtype.size_in_bytes()),
            },
        );
        record.measured = self.measured.clone();
        record
    }

    /// results/memory.json, and the batch and context in answers.toml's `[memory]`.
    pub fn write(&self, dir: &Path) -> Result<()> {
        let results = dir.join("results");
        std::fs::create_dir_all(&results)
            .with_context(|| format!("cannot create {}", results.display()))?;
        self.record().write_json(&results.join("memory.json"))?;
        answers_file::fill_answers::set_in_table(
            &dir.join("answers.toml"),
            "memory",
            &[
                ("batch".to_string(), (self.batch as f64).into()),
                ("context".to_string(), (self.context as f64).into()),
            ],
        )
    }

    /// A generation at the given batch and context, recorded with memory: its peak, and the
    /// categories at the highest sample, into results/memory.json beside the config.
    pub fn measure(
        &mut self,
        model: &llama::Model,
        spec: &ForwardProfile,
        dir: &Path,
    ) -> Result<()> {
        if model.device().is_cuda() {
            println!(
                "(--profile-memory on CUDA: the counting allocator sees host memory only, so the generation's \
                 device peak is not measured; results/memory.json says so)"
            );
            self.measured = Some(Measured::NotMeasured {
                not_measured: "the device is CUDA: host allocations only".into(),
            });
            return self.write(dir);
        }
        let new_tokens = MEMORY_NEW_TOKENS.min(self.context - 1);
        let prefill = ForwardProfile {
            batch: self.batch,
            seq: self.context - new_tokens,
            ..spec.clone()
        };
        let (generation, _) = profile_generation_memory(model, &prefill, new_tokens)?;
        let Some(timeline) = generation.memory_timeline() else {
            self.measured = Some(Measured::NotMeasured {
                not_measured: "no allocation was counted".into(),
            });
            return self.write(dir);
        };
        let highest = timeline
            .points
            .iter()
            .max_by_key(|p| p.live)
            .map_or([0; 4], |p| p.by_category);
        let svg = dir.join("results/memory-timeline-generate.svg");
        let title = format!(
            "Live bytes over a generation: {} sequences, a prefill of {} tokens, then {new_tokens} decode steps",
            self.batch, prefill.seq
        );
        generation.memory_timeline_svg(&svg, &title, None)?;
        println!(
            "the generation's measured peak: {} in step {}, during {} ({})",
            profiler::format_bytes(timeline.peak.bytes),
            timeline.peak.step,
            timeline.peak.during,
            svg.display()
        );
        self.measured = Some(Measured::Peak(MeasuredPeak {
            peak_bytes: timeline.peak.bytes,
            peak_step: timeline.peak.step as u64,
            peak_during: timeline.peak.during.to_string(),
            prefill_tokens: prefill.seq as u64,
            new_tokens: new_tokens as u64,
            at_highest_sample: Categories {
                weights_bytes: highest[0],
                kv_cache_bytes: highest[1],
                activations_bytes: highest[2],
                temporaries_bytes: highest[3],
            },
        }));
        self.write(dir)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::DType;

    #[test]
    fn the_record_names_each_type_with_its_bytes_and_reads_back() {
        let mut given = MemoryGiven {
            model: "synthetic-llama-tiny".into(),
            batch: 4,
            context: 64,
            parameters: 1_000_000,
            layers: 2,
            kv_heads: 2,
            head_dim: 16,
            heads: 4,
            hidden_size: 64,
            intermediate_size: 128,
            vocab_size: 256,
            weights_dtype: DType::BF16,
            kv_dtype: DType::F32,
            measured: None,
        };
        let record = given.record();
        let c = &record.config;
        assert_eq!(
            (
                c.weights_dtype.as_str(),
                c.weight_bytes,
                c.kv_dtype.as_str(),
                c.kv_bytes
            ),
            ("bf16", 2, "f32", 4)
        );
        assert_eq!(
            (record.batch, record.context, record.measured),
            (4, 64, None)
        );
        given.measured = Some(Measured::NotMeasured {
            not_measured: "the device is CUDA: host allocations only".into(),
        });
        let path = Path::new("results/memory.json");
        let back = MemoryRecord::from_json(&given.record().to_json(), path).unwrap();
        assert_eq!(back, given.record());
    }
}
