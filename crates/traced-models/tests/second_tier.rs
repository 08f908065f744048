//! The second tier on tiny GGUF files written by candle itself and on tiny Phi-3 and Gemma
//! checkpoints: each architecture loads, runs and profiles into the rows of the spans its model
//! opens, plus one row for the time outside any span; no row has a work count, so none has a
//! roofline. An architecture this tier does not run is refused by name.

use candle_core::quantized::GgmlDType;
use candle_core::Device;
use engine::profile::ForwardProfile;
use profiler::{Line, SortBy, View};
use traced_models::gguf::{write_tiny, TinyShape, TINY_LLAMA, TINY_QWEN2};
use traced_models::{profile, with_span_profiler, TracedModel, UNTRACED};

fn tiny(shape: &TinyShape, dtype: GgmlDType) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(format!("tiny-{}.gguf", shape.arch));
    write_tiny(&path, shape, dtype).unwrap();
    (dir, path)
}

#[test]
fn each_architecture_profiles_into_its_spans_and_the_untraced_rest() {
    // Each model opens its own spans: quantized_llama wraps every matmul in `qmatmul`;
    // quantized_qwen2 does not, so its matmuls' time is inside `attn-mlp`, `output` and the
    // untraced row, which is what this tier cannot take apart.
    for (shape, spans) in [
        (&TINY_LLAMA, &["qmatmul", "attn-rot", "attn-mlp"][..]),
        (&TINY_QWEN2, &["attn-rot", "attn-mlp", "output"][..]),
    ] {
        let (_dir, path) = tiny(shape, GgmlDType::Q8_0);
        let profile = with_span_profiler(|| {
            let mut model = TracedModel::load_gguf(&path, &Device::Cpu).unwrap();
            assert_eq!(
                (model.architecture.as_str(), model.weight_type.as_str()),
                (shape.arch, "q8_0")
            );
            profile(
                &mut model,
                &ForwardProfile {
                    seq: 6,
                    warmup: 1,
                    active: 2,
                    ..ForwardProfile::default()
                },
            )
            .unwrap()
        });
        let rows = profile
            .key_averages(View::Op, false, SortBy::SelfCpuTimeTotal)
            .rows;
        let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
        for expected in spans.iter().copied().chain([UNTRACED.name]) {
            assert!(
                names.contains(&expected),
                "{}: no {expected} row in {names:?}",
                shape.arch
            );
        }
        for row in &rows {
            // No work count, so no roofline: never an invented count.
            assert!(
                row.flops.is_none() && row.bytes.is_none(),
                "{}: {} has a work count nobody measured",
                shape.arch,
                row.name
            );
        }
        let untraced = rows.iter().find(|r| r.name == UNTRACED.name).unwrap();
        assert_eq!(untraced.line, Line::Other);
        if let Some(qmatmul) = rows.iter().find(|r| r.name == "qmatmul") {
            assert_eq!(qmatmul.line, Line::Matmuls);
        }
        assert_eq!(profile.environment.dtype, "q8_0");
    }
}

#[test]
fn the_quantized_model_computes_the_same_logits_each_time() {
    let (_dir, path) = tiny(&TINY_LLAMA, GgmlDType::Q8_0);
    let mut model = TracedModel::load_gguf(&path, &Device::Cpu).unwrap();
    let ids = candle_core::Tensor::new(&[[3u32, 14, 15, 92]], &Device::Cpu).unwrap();
    let a: Vec<f32> = model
        .forward(&ids, 0)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    let b: Vec<f32> = model
        .forward(&ids, 0)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    assert_eq!(a.len(), 256);
    assert!(a.iter().all(|v| v.is_finite()));
    assert_eq!(a, b);
}

#[test]
fn an_architecture_this_tier_does_not_run_is_refused_by_name() {
    let (_dir, path) = tiny(
        &TinyShape {
            arch: "gemma3",
            ..TINY_LLAMA
        },
        GgmlDType::Q8_0,
    );
    let e = TracedModel::load_gguf(&path, &Device::Cpu)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("general.architecture \"gemma3\" is not one this program runs from a GGUF file (llama, qwen2)"), "{e}");
    assert!(e.contains("tiny-gemma3.gguf"), "names the file: {e}");
    let not_gguf = _dir.path().join("not.gguf");
    std::fs::write(&not_gguf, b"safetensors?").unwrap();
    assert!(TracedModel::load_gguf(&not_gguf, &Device::Cpu)
        .err()
        .unwrap()
        .to_string()
        .contains("not a readable GGUF file"));
}

/// Phi-3 opens `linear` and `rms-norm` spans; Gemma opens none, so its whole forward pass is the
/// untraced row: what "through its spans" can show depends on the model's authors.
#[test]
fn phi3_and_gemma_checkpoints_profile_into_the_spans_they_open() {
    for (arch, spans) in [("phi3", &["linear", "rms-norm"][..]), ("gemma", &[][..])] {
        let dir = tempfile::tempdir().unwrap();
        traced_models::tiny::write(dir.path(), arch).unwrap();
        let profile = with_span_profiler(|| {
            let mut model =
                TracedModel::load_safetensors(dir.path(), &Device::Cpu, candle_core::DType::F32)
                    .unwrap();
            assert_eq!(model.architecture, arch);
            profile(
                &mut model,
                &ForwardProfile {
                    seq: 6,
                    warmup: 1,
                    active: 2,
                    ..ForwardProfile::default()
                },
            )
            .unwrap()
        });
        let rows = profile
            .key_averages(View::Op, false, SortBy::SelfCpuTimeTotal)
            .rows;
        let names: Vec<&str> = rows
            .iter()
            .map(|r| r.name.as_str())
            .filter(|n| *n != profiler::STEP_ROW)
            .collect();
        for expected in spans.iter().copied().chain([UNTRACED.name]) {
            assert!(
                names.contains(&expected),
                "{arch}: no {expected} row in {names:?}"
            );
        }
        if spans.is_empty() {
            assert_eq!(names, [UNTRACED.name], "{arch} opens no span");
        }
        assert!(
            rows.iter().all(|r| r.flops.is_none() && r.bytes.is_none()),
            "{arch}: a work count nobody measured"
        );
    }
    let dir = tempfile::tempdir().unwrap();
    traced_models::tiny::write(dir.path(), "phi3").unwrap();
    let config = std::fs::read_to_string(dir.path().join("config.json"))
        .unwrap()
        .replace("\"phi3\"", "\"mamba\"");
    std::fs::write(dir.path().join("config.json"), config).unwrap();
    let e = TracedModel::load_safetensors(dir.path(), &Device::Cpu, candle_core::DType::F32)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("model_type \"mamba\" is not one this program runs through candle-transformers (phi3, gemma)") && e.contains("config.json"), "{e}");
}
