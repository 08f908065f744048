//! `results/memory.json`, exercise 8's memory record: the batch and context the learner's
//! memory prediction is asked at, the config values the course's arithmetic reads (as the run
//! loaded the model), and, after a `--profile-memory` run, what a generation at that batch and
//! context measured. Exercise 8's program (`driver-exercise-8`) writes [`MemoryRecord`]; the
//! grader reads it (`grader::exercise_checks::memory`), and grades the prediction by the
//! arithmetic on [`ModelConfig`], never by [`Measured`].
//!
//! An incompatible change bumps [`SCHEMA`], adds the old identifier to [`OLD_SCHEMAS`] with
//! what it lacks, and regenerates the grader's fixture (crates/grader/tests/fixtures/memory).

use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::version::{FileSchema, SchemaError};

/// The schema identifier written in every memory record.
pub const SCHEMA: &str = "memory-prediction/1";

/// Earlier identifiers, oldest first, each refused with what it lacks (none yet).
pub const OLD_SCHEMAS: &[(&str, &str)] = &[];

/// memory.json's schema, for [`FileSchema::check`].
pub const FILE: FileSchema = FileSchema {
    file: "memory.json",
    current: SCHEMA,
    old: OLD_SCHEMAS,
    rerun: "Run exercise 8 again on a safetensors checkpoint of the Llama family (`course run 8`) \
            to write a current one.",
};

/// `results/memory.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MemoryRecord {
    /// [`SCHEMA`].
    pub schema: String,
    /// The model as the learner named it: a repository id, a folder, a synthetic name.
    pub model: String,
    /// The sequences the prediction is asked for.
    pub batch: u64,
    /// The positions each sequence's KV cache holds, prompt and generated tokens together.
    pub context: u64,
    pub config: ModelConfig,
    /// Null until a `--profile-memory` run measures the generation.
    #[serde(default)]
    pub measured: Option<Measured>,
}

/// The config values the arithmetic reads, as the run loaded the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ModelConfig {
    pub parameters: u64,
    pub layers: u64,
    /// Key/value heads (fewer than the query heads under grouped-query attention).
    pub kv_heads: u64,
    pub head_dim: u64,
    /// Query heads.
    pub heads: u64,
    pub hidden_size: u64,
    pub intermediate_size: u64,
    pub vocab_size: u64,
    /// The weights' element type as loaded (`f32`, `bf16`, ...) and its bytes.
    pub weights_dtype: String,
    pub weight_bytes: u64,
    /// The KV cache's element type (the activations', f32 on the CPU's packed kernels whatever
    /// the weights' type) and its bytes.
    pub kv_dtype: String,
    pub kv_bytes: u64,
}

/// What a `--profile-memory` run measured of the generation, or why it could not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum Measured {
    Peak(MeasuredPeak),
    NotMeasured {
        /// Why, e.g. the device is CUDA and the counting allocator sees host memory only.
        not_measured: String,
    },
}

/// The measured generation: a prefill of `prefill_tokens`, then `new_tokens` decode steps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MeasuredPeak {
    pub peak_bytes: i64,
    pub peak_step: u64,
    /// The op running at the peak.
    pub peak_during: String,
    pub prefill_tokens: u64,
    pub new_tokens: u64,
    pub at_highest_sample: Categories,
}

/// Live bytes by category at the highest sample of the timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Categories {
    pub weights_bytes: i64,
    pub kv_cache_bytes: i64,
    pub activations_bytes: i64,
    pub temporaries_bytes: i64,
}

/// Reading or writing a memory.json, each error naming the file and the next step.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("cannot write {path}: {source}. Check that the folder exists and is writable.")]
    Write {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path} is not a memory record: {source} (line {line}, column {column}). {rerun}",
        line = source.line(),
        column = source.column(),
        rerun = FILE.rerun
    )]
    Parse {
        path: String,
        source: serde_json::Error,
    },
    #[error(transparent)]
    Schema(#[from] SchemaError),
}

impl MemoryRecord {
    /// A record of the current schema, nothing measured yet.
    pub fn new(model: String, batch: u64, context: u64, config: ModelConfig) -> Self {
        Self {
            schema: SCHEMA.to_string(),
            model,
            batch,
            context,
            config,
            measured: None,
        }
    }

    pub fn to_json(&self) -> String {
        // A record holds only strings and numbers: serialising cannot fail.
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    /// Parse a record's text; `path` names it in errors. The schema is checked first, so an
    /// old or foreign file gets the migration message rather than a missing field.
    pub fn from_json(text: &str, path: &Path) -> Result<Self, MemoryError> {
        let shown = path.display().to_string();
        let parse = |source| MemoryError::Parse {
            path: shown.clone(),
            source,
        };
        let value: serde_json::Value = serde_json::from_str(text).map_err(parse)?;
        FILE.check_value(&value, &shown)?;
        serde_json::from_str(text).map_err(parse)
    }

    pub fn write_json(&self, path: &Path) -> Result<(), MemoryError> {
        std::fs::write(path, self.to_json()).map_err(|source| MemoryError::Write {
            path: path.display().to_string(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> MemoryRecord {
        MemoryRecord::new(
            "synthetic-llama-tiny".into(),
            2,
            16,
            ModelConfig {
                parameters: 1000,
                layers: 2,
                kv_heads: 1,
                head_dim: 8,
                heads: 2,
                hidden_size: 16,
                intermediate_size: 32,
                vocab_size: 64,
                weights_dtype: "bf16".into(),
                weight_bytes: 2,
                kv_dtype: "f32".into(),
                kv_bytes: 4,
            },
        )
    }

    #[test]
    fn a_record_reads_back_as_written_measured_or_not() {
        let path = Path::new("results/memory.json");
        let mut r = record();
        let text = r.to_json();
        assert!(text.contains("\"measured\": null"), "{text}");
        assert_eq!(MemoryRecord::from_json(&text, path).unwrap(), r);
        r.measured = Some(Measured::NotMeasured {
            not_measured: "the device is CUDA".into(),
        });
        assert_eq!(MemoryRecord::from_json(&r.to_json(), path).unwrap(), r);
        r.measured = Some(Measured::Peak(MeasuredPeak {
            peak_bytes: 5000,
            peak_step: 0,
            peak_during: "matmul".into(),
            prefill_tokens: 12,
            new_tokens: 4,
            at_highest_sample: Categories {
                weights_bytes: 2000,
                kv_cache_bytes: 1024,
                activations_bytes: 900,
                temporaries_bytes: 0,
            },
        }));
        assert_eq!(MemoryRecord::from_json(&r.to_json(), path).unwrap(), r);
    }

    #[test]
    fn another_file_gets_the_schema_message_before_its_fields_are_read() {
        let path = Path::new("results/memory.json");
        let foreign = MemoryRecord::from_json(r#"{"schema": "bench-report/4"}"#, path)
            .unwrap_err()
            .to_string();
        assert!(
            foreign.contains("results/memory.json")
                && foreign.contains("is it a memory.json?")
                && foreign.contains("course run 8"),
            "{foreign}"
        );
        let broken = record()
            .to_json()
            .replace("\"batch\": 2", "\"batch\": \"two\"");
        let broken = MemoryRecord::from_json(&broken, path)
            .unwrap_err()
            .to_string();
        assert!(
            broken.starts_with("results/memory.json is not a memory record")
                && broken.contains("line 4"),
            "{broken}"
        );
    }
}
