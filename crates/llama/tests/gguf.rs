//! Quantized GGUF files written by llama.cpp itself (`scripts/make-gguf-fixtures.py` runs its
//! converter and `llama-quantize`) on the engine, on every kernel path this CPU has:
//! - against the engine's f32 logits on the same file's dequantized weights: the only difference
//!   is the quantized products' rounding of the activations to 8-bit blocks of 32 ([`TIGHT`]);
//! - against transformers' logits on the f32 original (the safetensors fixture): the weights'
//!   own quantization error too, a looser bound per type ([`LOOSE`]);
//! - the llama architecture's permuted query and key rows undone (the dequantized model matches
//!   transformers within the weights' rounding only);
//! - every quantized product in its `matmul` / `lm_head` row, with its kernel label, its type and
//!   its work at the stored width.

mod common;

use candle_core::{Device, Tensor};
use common::{fixtures, paths};
use engine::cpu::KernelPath;
use engine::{CausalLm, Logits};
use llama::gguf::Weights;
use llama::Model;

/// Quantized against dequantized weights, the same file: the largest logit difference allowed,
/// relative to the largest logit magnitude of the reference. What differs is the activations'
/// rounding to 8 bits before every quantized product (each value by at most half a step of its
/// block of 32; each product within that bound exactly, `engine::quant`'s kernel tests), carried
/// through two layers: measured 0.022 (q8_0), 0.026 (q4_0), 0.014, 0.010 and 0.017 (the mixed
/// files), 0.016 (Q1_0) and 0.025 (Q4_K_M, whose activations candle rounds in blocks of 256),
/// the same on every kernel path.
const TIGHT: f32 = 0.03;

/// Against transformers' f32 logits, the largest difference relative to the largest logit
/// magnitude, per file: the weights' own rounding on top (measured 0.024 for q8_0, 0.47 for
/// q4_0, whose 4-bit codes of these tiny random weights move the logits a lot, and whose head
/// llama-quantize keeps in q8_0; 0.18, 0.08 and 0.13 for the mixed files). A decoding or row-order error moves them by more than their size
/// (`the_llama_architectures_permuted_rows_are_put_back`, and the weights' own check below).
const LOOSE: [(&str, f32); 5] = [
    ("tiny-llama-q8_0", 0.04),
    ("tiny-llama-q4_0", 0.6),
    ("tiny-llama-mixed", 0.25),
    ("tiny-qwen2-mixed", 0.12),
    ("tiny-qwen3-mixed", 0.2),
];

fn load(file: &str, path: KernelPath, weights: Weights) -> Model {
    llama::gguf::load(
        &fixtures().join("gguf").join(format!("{file}.gguf")),
        &Device::Cpu,
        path,
        weights,
    )
    .unwrap_or_else(|e| panic!("{file}: {e}"))
}

/// Every position's logits for `ids`.
fn logits(model: &Model, ids: &[u32]) -> Tensor {
    let mut cache = model.new_cache(ids.len() + 1);
    model
        .forward_one(ids, &mut cache, Logits::AllPositions)
        .unwrap()
        .squeeze(0)
        .unwrap()
}

fn reference(variant: &str) -> (Vec<u32>, Vec<Vec<f32>>) {
    let path = fixtures().join(format!("tiny-{variant}-reference.json"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (
        serde_json::from_value(json["ids"][0].clone()).unwrap(),
        serde_json::from_value(json["logits"].clone()).unwrap(),
    )
}

/// The largest difference between `a` and `b`, over the largest magnitude in `b`.
fn relative(a: &Tensor, b: &[Vec<f32>]) -> f32 {
    engine::parity::relative_difference(&a.flatten_all().unwrap().to_vec1().unwrap(), &b.concat())
}

fn rows(t: &Tensor) -> Vec<Vec<f32>> {
    t.to_vec2().unwrap()
}

#[test]
fn quantized_logits_match_the_dequantized_weights_and_the_f32_original() {
    for (file, loose) in LOOSE {
        let variant = file.trim_start_matches("tiny-").split('-').next().unwrap();
        let (ids, want) = reference(variant);
        for path in paths() {
            let q = logits(&load(file, path, Weights::Quantized), &ids);
            let deq = logits(&load(file, path, Weights::Dequantized), &ids);
            let tight = relative(&q, &rows(&deq));
            assert!(
                tight <= TIGHT,
                "{file} on {path}: quantized against dequantized {tight}"
            );
            let against_f32 = relative(&q, &want);
            assert!(
                against_f32 <= loose,
                "{file} on {path}: against transformers' f32 logits {against_f32} (bound {loose})"
            );
            eprintln!("{file} {path}: tight {tight:.5}, against f32 {against_f32:.5}");
        }
    }
}

/// The Q1_0 file (every matrix 1-bit, head and embeddings included) against its own dequantized
/// weights: 1-bit random weights have no f32 original worth comparing with.
#[test]
fn q1_0_logits_match_the_dequantized_weights() {
    let ids = [5u32, 17, 200, 42, 255, 0, 99, 128];
    for path in paths() {
        let q = logits(&load("tiny-qwen3-q1_0", path, Weights::Quantized), &ids);
        let deq = logits(&load("tiny-qwen3-q1_0", path, Weights::Dequantized), &ids);
        let tight = relative(&q, &rows(&deq));
        eprintln!("tiny-qwen3-q1_0 {path}: tight {tight:.5}");
        assert!(tight <= TIGHT, "q1_0 on {path}: {tight}");
    }
}

/// Without undoing the converter's permutation the llama file's logits are far from
/// transformers': the dequantized q8_0 model is within the weights' rounding of them.
#[test]
fn the_llama_architectures_permuted_rows_are_put_back() {
    let (ids, want) = reference("llama");
    let deq = logits(
        &load(
            "tiny-llama-q8_0",
            KernelPath::Portable,
            Weights::Dequantized,
        ),
        &ids,
    );
    let err = relative(&deq, &want);
    assert!(err < 0.02, "{err}");
}

#[test]
fn every_quantized_product_has_its_row_label_type_and_stored_bytes() {
    for path in paths() {
        let model = load("tiny-llama-mixed", path, Weights::Quantized);
        let rows = engine::profile::every_op_rows(&model).unwrap();
        let matmul: Vec<_> = rows
            .iter()
            .filter(|r| r.name == "matmul" || r.name == "lm_head")
            .collect();
        assert!(!matmul.is_empty());
        let kernels: Vec<String> = matmul
            .iter()
            .flat_map(|r| {
                r.kernel
                    .clone()
                    .unwrap_or_default()
                    .split('+')
                    .map(String::from)
                    .collect::<Vec<_>>()
            })
            .collect();
        let want = match path {
            KernelPath::Portable => ["quant-portable-q8_0", "quant-portable-q4_0"],
            KernelPath::Avx2 => ["quant-avx2-q8_0", "quant-avx2-q4_0"],
            KernelPath::Avx512 if engine::quant::kernels::has_avx512_vnni() => {
                ["quant-avx512-vnni-q8_0", "quant-avx512-vnni-q4_0"]
            }
            KernelPath::Avx512 => ["quant-avx2-q8_0", "quant-avx2-q4_0"],
        };
        for k in want {
            assert!(
                kernels.iter().any(|x| x == k),
                "{path}: {k} not in {kernels:?}"
            );
        }
        for r in &matmul {
            assert!(
                r.flops.is_some() && r.bytes.is_some(),
                "{path}: {} has no work",
                r.name
            );
        }
    }
    // The q8_0 file's products: the weights' bytes at 34 per 32 values.
    let model = load("tiny-llama-q8_0", KernelPath::Portable, Weights::Quantized);
    let rows = engine::profile::every_op_rows(&model).unwrap();
    let head = rows.iter().find(|r| r.name == "lm_head").unwrap();
    assert_eq!(head.kernel.as_deref(), Some("quant-portable-q8_0"));
    // Two calls (prefill and decode): each reads 512 × 64 weights at 34 bytes per 32.
    let weight_bytes = 512 * 64 / 32 * 34;
    let bytes = head.bytes.unwrap();
    let activations = (12 * 64 + 12 * 512 + 2 * 64 + 2 * 512) * 4;
    assert_eq!(bytes as usize, 2 * weight_bytes + activations, "{head:?}");
}

#[test]
fn a_gguf_that_is_not_a_llama_family_model_is_refused_by_name() {
    let dir = std::env::temp_dir().join(format!("llama-gguf-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = dir.join("bert.gguf");
    let mut bytes = b"GGUF".to_vec();
    bytes.extend(3u32.to_le_bytes());
    bytes.extend(0u64.to_le_bytes());
    bytes.extend(1u64.to_le_bytes());
    let key = "general.architecture";
    bytes.extend((key.len() as u64).to_le_bytes());
    bytes.extend(key.as_bytes());
    bytes.extend(8u32.to_le_bytes());
    bytes.extend(4u64.to_le_bytes());
    bytes.extend(b"bert");
    std::fs::write(&p, bytes).unwrap();
    assert!(!llama::gguf::runs_on_engine(&p).unwrap());
    for file in ["tiny-llama-q8_0", "tiny-qwen2-mixed", "tiny-qwen3-q1_0"] {
        let path = fixtures().join("gguf").join(format!("{file}.gguf"));
        assert!(llama::gguf::runs_on_engine(&path).unwrap(), "{file}");
    }
    let e = match llama::gguf::load(&p, &Device::Cpu, KernelPath::Portable, Weights::Quantized) {
        Ok(_) => panic!("a bert GGUF loaded as a Llama-family model"),
        Err(e) => e.to_string(),
    };
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        e.contains("bert.gguf") && e.contains("bert") && e.contains("qwen3"),
        "{e}"
    );
}

/// The stored weights against the f32 originals they were quantized from (the safetensors
/// fixture), value by value: Q8_0 within half a step (its block's largest magnitude / 127 / 2);
/// Q4_0 within a step (/ 8: its codes reach the block's largest value on one side and 7/8 of it
/// on the other, so a value there can be clipped by up to a step); plus the f16 rounding of
/// the scale.
#[test]
fn dequantized_weights_are_within_half_a_step_of_the_originals() {
    let st = candle_core::safetensors::load(
        fixtures().join("tiny-llama/model.safetensors"),
        &Device::Cpu,
    )
    .unwrap();
    for (file, steps, allowed) in [
        ("tiny-llama-q8_0", 127.0f32, 0.5f32),
        ("tiny-llama-q4_0", 8.0, 1.0),
    ] {
        let f = engine::gguf::GgufFile::open(&fixtures().join("gguf").join(format!("{file}.gguf")))
            .unwrap();
        for (hf, gguf) in [
            ("model.embed_tokens.weight", "token_embd.weight"),
            (
                "model.layers.1.mlp.down_proj.weight",
                "blk.1.ffn_down.weight",
            ),
            (
                "model.layers.0.self_attn.v_proj.weight",
                "blk.0.attn_v.weight",
            ),
        ] {
            let orig: Vec<f32> = st[hf].flatten_all().unwrap().to_vec1().unwrap();
            let (_, deq) = f.dequantize(gguf).unwrap();
            assert_eq!(orig.len(), deq.len());
            for (b, (o, d)) in orig.chunks(32).zip(deq.chunks(32)).enumerate() {
                let amax = o.iter().fold(0f32, |a, v| a.max(v.abs()));
                let step = amax / steps;
                for (x, y) in o.iter().zip(d) {
                    assert!(
                        (x - y).abs() <= step * allowed * 1.01 + amax * 1e-3,
                        "{file} {gguf} block {b}: {y} for {x} (step {step})"
                    );
                }
            }
        }
    }
}

/// The reference logits the GGUF fixture script wrote beside the files (the wide Qwen3's: its
/// checkpoint is not committed).
fn gguf_reference(name: &str) -> (Vec<u32>, Vec<Vec<f32>>) {
    let path = fixtures()
        .join("gguf")
        .join(format!("{name}-reference.json"));
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    (
        serde_json::from_value(json["ids"][0].clone()).unwrap(),
        serde_json::from_value(json["logits"].clone()).unwrap(),
    )
}

/// llama-quantize's Q4_K_M preset on the wide Qwen3 (rows of 256, so the K-quants' blocks fit):
/// Q4_K matrices, Q6_K for the head and the values and down projections the preset gives more
/// bits, each product in its row with candle's kernel label; against the dequantized weights
/// (candle rounds the activations to 8-bit blocks of 256, `Q8_K`: measured 0.025, within
/// [`TIGHT`]) and against transformers' f32 logits of the checkpoint it was quantized from
/// (measured 0.22: 4-bit codes of random weights, as for q4_0 above).
#[test]
fn q4_k_m_logits_match_the_dequantized_weights_and_the_f32_original() {
    let file = "tiny-qwen3-q4_k_m";
    let types =
        llama::gguf::stored_types(&fixtures().join("gguf").join(format!("{file}.gguf"))).unwrap();
    assert_eq!(types, "q4_k+q6_k", "what llama-quantize wrote");
    let (ids, want) = gguf_reference("tiny-qwen3-wide");
    for path in paths() {
        let model = load(file, path, Weights::Quantized);
        let q = logits(&model, &ids);
        let deq = logits(&load(file, path, Weights::Dequantized), &ids);
        let tight = relative(&q, &rows(&deq));
        let against_f32 = relative(&q, &want);
        eprintln!("{file} {path}: tight {tight:.5}, against f32 {against_f32:.5}");
        assert!(tight <= TIGHT, "{file} on {path}: {tight}");
        assert!(against_f32 <= 0.3, "{file} on {path}: {against_f32}");
        let kernels: Vec<String> = engine::profile::every_op_rows(&model)
            .unwrap()
            .into_iter()
            .filter(|r| r.name == "matmul" || r.name == "lm_head")
            .filter_map(|r| r.kernel)
            .collect();
        for k in ["candle-q4_k", "candle-q6_k"] {
            assert!(
                kernels.iter().any(|x| x.split('+').any(|p| p == k)),
                "{path}: {k} not in {kernels:?}"
            );
        }
    }
}

/// Llama 3.1's scaled rotation as the converter writes it (rope_freqs.weight: a divisor per
/// frequency) gives the angles the safetensors checkpoint's `rope_scaling` gives, and so its
/// logits: tiny-llama3 (factor 32 over an original context of 16, so most frequencies are
/// slowed) converted to f16. The f16 weights against the f32 ones move the logits by 0.0008 of
/// their largest (measured); reading the file without its divisors moves them by 0.39.
#[test]
fn llama3s_rope_freqs_give_the_safetensors_checkpoints_rotation() {
    let gguf = fixtures().join("gguf/tiny-llama3-f16.gguf");
    let file = engine::gguf::GgufFile::open(&gguf).unwrap();
    let from_gguf = llama::gguf::config(&file).unwrap();
    let from_json = llama::Config::from_file(&fixtures().join("tiny-llama3/config.json")).unwrap();
    assert!(matches!(
        from_gguf.rope_scaling,
        llama::config::RopeScaling::Divisors(_)
    ));
    let (g, s) = (
        llama::rope::inverse_frequencies(&from_gguf),
        llama::rope::inverse_frequencies(&from_json),
    );
    let unscaled = llama::rope::inverse_frequencies(&llama::Config {
        rope_scaling: llama::config::RopeScaling::None,
        ..from_json.clone()
    });
    assert_eq!(g.len(), s.len());
    for (i, (a, b)) in g.iter().zip(&s).enumerate() {
        assert!(
            (a - b).abs() <= b * 1e-6,
            "frequency {i}: {a} from the GGUF, {b}"
        );
    }
    // The scaling matters here: the slowest frequency is a 32nd of its unscaled value.
    let slowest = g.len() - 1;
    assert!((unscaled[slowest] / g[slowest] - 32.0).abs() < 1e-3);

    let (ids, _) = reference("llama3");
    for path in paths() {
        let ours = logits(&load("tiny-llama3-f16", path, Weights::Dequantized), &ids);
        let st = llama::weights::load(
            &fixtures().join("tiny-llama3"),
            &Device::Cpu,
            candle_core::DType::F32,
            path,
        )
        .unwrap();
        let err = relative(&ours, &rows(&logits(&st, &ids)));
        eprintln!("tiny-llama3-f16 {path}: against the safetensors engine {err:.6}");
        assert!(err <= 0.002, "{path}: {err}");
    }
}
