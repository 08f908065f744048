//! `--dtype q8_0` and `--dtype q4_0` on a dense checkpoint: its matrices quantized at load.
//!
//! - The quantizer writes llama.cpp's bytes: every matrix of the tiny fixture's f32 GGUF file,
//!   quantized here, is byte for byte the tensor llama.cpp's tools wrote from the same weights
//!   (`scripts/make-gpt2-gguf-fixtures.py`): the q8_0 file's (gguf-py's quantizer, through
//!   `convert_hf_to_gguf.py --outtype q8_0`) and the q4_0 file's (`llama-quantize`, whose head
//!   is Q8_0 there, not Q4_0, and is compared with the q8_0 quantizer).
//! - The model loaded from the safetensors fixture with a quantized `--dtype` gives the logits of
//!   the GGUF file of that type: the same blocks through the same kernels. The one difference is
//!   the token embeddings' lookup, which a GGUF file reads from its quantized `token_embd` and
//!   the checkpoint from its f32 `wte` ([`LOOKUP`]); given the file's embeddings, the q8_0 logits
//!   are identical. `--dtype q4_0` quantizes the head to Q4_0 too, where llama-quantize kept it
//!   wider ([`HEAD_Q4_0`]).
//! - Every product is a quantized row with its kernel label, and reports name the type.

mod common;

use std::path::PathBuf;

use candle_core::{Device, Tensor};
use common::{fixture, on_each_path, reference};
use engine::cpu::KernelPath;
use engine::device_flags::parse_dtype;
use engine::gguf::{GgmlType, GgufFile, Weights};
use gpt2::{CausalLm, Logits, Model};

/// The largest logit difference over the largest logit magnitude, quantized at load against the
/// GGUF file of the same type, where only the first layer's input differs: the embeddings looked
/// up from f32 rows against rows rounded to Q8_0 (both files' `token_embd`). Measured 0.0223
/// (0.0230 on the AVX2 path); with the file's embeddings the q8_0 logits are identical.
const LOOKUP: f32 = 0.03;

/// The same measure for `--dtype q4_0` against llama-quantize's q4_0 file with the same
/// embeddings: the head is Q4_0 here and Q8_0 there (the quantizer's fallback for a head whose
/// rows are not whole Q6_K blocks). Measured 0.0977 on every path.
const HEAD_Q4_0: f32 = 0.12;

fn gguf(kind: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/gguf/tiny-gpt2-{kind}.gguf"))
}

/// Every 2-D tensor of the f32 file quantized to `ty`, beside the tensor of that name in `other`
/// where `other` stores it as `ty`.
fn quantized_pairs(other: &str, ty: GgmlType) -> Vec<(String, Vec<u8>, Vec<u8>)> {
    let f32_file = GgufFile::open(&gguf("f32")).unwrap();
    let file = GgufFile::open(&gguf(other)).unwrap();
    let mut pairs = Vec::new();
    for info in f32_file.tensors().iter().filter(|t| t.dims.len() == 2) {
        let (_, stored, bytes) = file.tensor(&info.name).unwrap();
        if stored != ty {
            continue;
        }
        let (_, values) = f32_file.dequantize(&info.name).unwrap();
        let ours = engine::quant::quantize(ty, &values).unwrap();
        pairs.push((info.name.clone(), ours, bytes.to_vec()));
    }
    pairs
}

fn assert_bytes_equal(pairs: &[(String, Vec<u8>, Vec<u8>)]) {
    for (name, ours, theirs) in pairs {
        assert_eq!(ours.len(), theirs.len(), "{name}");
        if let Some(at) = ours.iter().zip(theirs).position(|(a, b)| a != b) {
            panic!(
                "{name}: byte {at} is {} here and {} in llama.cpp's file",
                ours[at], theirs[at]
            );
        }
    }
}

#[test]
fn q8_0_blocks_are_the_converters_byte_for_byte() {
    let pairs = quantized_pairs("q8_0", GgmlType::Q8_0);
    // Each block's four matrices of both layers and the tied head.
    assert_eq!(
        pairs.len(),
        9,
        "{:?}",
        pairs.iter().map(|p| &p.0).collect::<Vec<_>>()
    );
    assert_bytes_equal(&pairs);
}

#[test]
fn q4_0_blocks_are_llama_quantizes_byte_for_byte() {
    let pairs = quantized_pairs("q4_0", GgmlType::Q4_0);
    assert_eq!(
        pairs.len(),
        8,
        "{:?}",
        pairs.iter().map(|p| &p.0).collect::<Vec<_>>()
    );
    assert_bytes_equal(&pairs);
    // The file's head fell back to Q8_0 (see the fixture script): llama-quantize's Q8_0 blocks.
    let head = quantized_pairs("q4_0", GgmlType::Q8_0);
    assert_eq!(head.len(), 1);
    assert_bytes_equal(&head);
}

fn logits(model: &Model) -> Vec<Vec<f32>> {
    let ids = reference().ids;
    let t: Tensor = model
        .forward_one(&ids, &mut model.new_cache(ids.len()), Logits::AllPositions)
        .unwrap();
    t.to_vec2().unwrap()
}

fn relative(a: &[Vec<f32>], b: &[Vec<f32>]) -> f32 {
    engine::parity::relative_difference(&a.concat(), &b.concat())
}

fn at_load(dtype: &str, path: KernelPath) -> Model {
    let weights = parse_dtype(dtype).unwrap();
    gpt2::weights::load(&fixture(), &Device::Cpu, weights, path)
        .unwrap_or_else(|e| panic!("--dtype {dtype}: {e}"))
}

/// The safetensors fixture with its token embeddings replaced by the values of `kind`'s GGUF
/// `token_embd` (its blocks dequantized), written to a temporary folder: the checkpoint whose
/// lookup reads what the GGUF file's reads.
fn with_the_files_embeddings(kind: &str) -> (tempfile::TempDir, gpt2::weights::Checkpoint) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        common::fixture_dir().join("config.json"),
        dir.path().join("config.json"),
    )
    .unwrap();
    let mut tensors = candle_core::safetensors::load(
        common::fixture_dir().join("model.safetensors"),
        &Device::Cpu,
    )
    .unwrap();
    let (shape, values) = GgufFile::open(&gguf(kind))
        .unwrap()
        .dequantize("token_embd.weight")
        .unwrap();
    let wte = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
    assert!(tensors
        .insert("transformer.wte.weight".into(), wte)
        .is_some());
    candle_core::safetensors::save(&tensors, dir.path().join("model.safetensors")).unwrap();
    let ckpt = gpt2::weights::Checkpoint::folder(dir.path().to_path_buf(), false);
    (dir, ckpt)
}

#[test]
fn quantized_at_load_gives_the_gguf_files_logits() {
    on_each_path(|path| {
        for kind in ["q8_0", "q4_0"] {
            let file =
                gpt2::gguf::load(&gguf(kind), &Device::Cpu, path, Weights::Quantized).unwrap();
            let theirs = logits(&file);
            // With the file's embeddings, the same model: every block and every input the same.
            let (_dir, ckpt) = with_the_files_embeddings(kind);
            let same =
                gpt2::weights::load(&ckpt, &Device::Cpu, parse_dtype(kind).unwrap(), path).unwrap();
            match kind {
                "q8_0" => assert_eq!(logits(&same), theirs, "{kind} on {path}"),
                // The blocks' matrices the same; the head Q4_0 here, Q8_0 in llama-quantize's
                // file (its Q6_K fallback), which moves the logits by [`HEAD_Q4_0`].
                _ => {
                    let r = relative(&logits(&same), &theirs);
                    assert!(r > 0.0 && r <= HEAD_Q4_0, "{kind} on {path}: {r}");
                }
            }
            // With the checkpoint's own f32 embeddings, the lookup's rounding apart.
            let ours = logits(&at_load(kind, path));
            let r = relative(&ours, &theirs);
            let bound = if kind == "q8_0" {
                LOOKUP
            } else {
                HEAD_Q4_0 + LOOKUP
            };
            assert!(r <= bound, "{kind} on {path}: {r} (bound {bound})");
            // Not the f32 model's: the weights really are rounded.
            let dense = logits(&common::tiny_model(path));
            assert!(relative(&ours, &dense) > 1e-4, "{kind} on {path}");
        }
    });
}

#[test]
fn every_matrix_is_a_quantized_row_with_its_label() {
    on_each_path(|path| {
        for kind in ["q8_0", "q4_0"] {
            let rows = engine::profile::every_op_rows(&at_load(kind, path)).unwrap();
            for op in ["matmul", "lm_head"] {
                let row = rows
                    .iter()
                    .find(|r| r.name == op)
                    .unwrap_or_else(|| panic!("{kind}: no {op} row"));
                let kernel = row.kernel.as_deref().unwrap_or_default();
                assert!(
                    kernel.starts_with("quant-") && kernel.ends_with(kind),
                    "{kind} {op} on {path}: {kernel}"
                );
                assert_eq!(row.dtype.as_deref(), Some(kind), "{op}");
            }
        }
    });
}
