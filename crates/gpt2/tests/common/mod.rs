//! Shared by the gpt2 integration tests: the committed tiny fixture and its reference logits.
#![allow(dead_code, reason = "each test file uses some of the shared helpers")]

use std::path::PathBuf;

use candle_core::{DType, Device};
use engine::cpu::KernelPath;
use engine::profile::ForwardProfile;
use engine::settings::CPU_KERNELS;
use gpt2::weights::{self, Checkpoint};
use gpt2::Model;

pub fn fixture_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-gpt2")
}

pub fn fixture() -> Checkpoint {
    Checkpoint::folder(fixture_dir(), false)
}

/// Runs `check` once per kernel path (which it builds its models for): every path this CPU
/// supports, or only the one `COURSE_CPU_KERNELS` names.
pub fn on_each_path(mut check: impl FnMut(KernelPath)) {
    let paths = match CPU_KERNELS.var().map(|v| KernelPath::parse(&v)) {
        Some(Ok(Some(path))) => vec![path],
        _ => KernelPath::supported(),
    };
    for path in paths {
        check(path);
    }
}

/// The path a model is built for when nothing names one: `COURSE_CPU_KERNELS`'s, else the widest.
pub fn default_path() -> KernelPath {
    KernelPath::resolve(None).expect("COURSE_CPU_KERNELS names a path this CPU runs")
}

/// A small forward profile of the tiny model: a batch of two five-token rows, one warm-up
/// forward, two recorded (enough for every op to have a row, and for a row's total to be a sum).
pub fn small_profile() -> ForwardProfile {
    ForwardProfile {
        batch: 2,
        seq: 5,
        warmup: 1,
        active: 2,
        ..ForwardProfile::default()
    }
}

/// The committed fixture, built for `path`.
pub fn tiny_model(path: KernelPath) -> Model {
    weights::load(&fixture(), &Device::Cpu, DType::F32, path).expect("the committed fixture loads")
}

pub struct Reference {
    pub ids: Vec<u32>,
    pub logits: Vec<Vec<f32>>,
}

fn reference_json() -> serde_json::Value {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-gpt2-reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A JSON array of rows of logits.
fn logit_rows(rows: &serde_json::Value) -> Vec<Vec<f32>> {
    let rows = rows.as_array().expect("rows of logits");
    rows.iter()
        .map(|row| {
            row.as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_f64().unwrap() as f32)
                .collect()
        })
        .collect()
}

pub fn reference() -> Reference {
    let v = reference_json();
    let ids = v["ids"][0]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as u32)
        .collect();
    Reference {
        ids,
        logits: logit_rows(&v["logits"]),
    }
}

/// Transformers' logits for the reference ids with every parameter of the fixture rounded to
/// `dtype` (bf16 or f16) and the model then run in f32 (`scripts/make-gpt2-fixture.py`).
pub fn rounded_reference(dtype: DType) -> Vec<Vec<f32>> {
    let key = format!("{dtype:?}").to_lowercase();
    let v = reference_json();
    assert!(
        v["rounded_weights_logits"][&key].is_array(),
        "the reference has no {key} rows: rerun scripts/make-gpt2-fixture.py"
    );
    logit_rows(&v["rounded_weights_logits"][&key])
}

pub fn max_abs_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}
