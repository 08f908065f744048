//! Greedy generation of each Llama-family variant against Hugging Face transformers' `generate`
//! on its tiny seeded checkpoint: the tokens `scripts/make-llama-fixtures.py` recorded
//! (`greedy`, after the reference ids, the end token not stopping it), token for token, alone
//! and beside another sequence in the same batch, on each kernel path this CPU supports (or the
//! one `COURSE_CPU_KERNELS` names).

mod common;

use candle_core::{DType, Device};
use common::{fixtures, paths};
use engine::generate::{generate, Flow, Request};

const VARIANTS: [&str; 6] = ["llama", "llama3", "smollm2", "mistral", "qwen2", "qwen3"];

#[test]
fn greedy_generation_matches_transformers_token_for_token() {
    for variant in VARIANTS {
        let dir = fixtures().join(format!("tiny-{variant}"));
        let path = fixtures().join(format!("tiny-{variant}-reference.json"));
        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let ids: Vec<u32> = serde_json::from_value(json["ids"][0].clone()).unwrap();
        let expected: Vec<u32> =
            serde_json::from_value(json["greedy"].clone()).unwrap_or_else(|e| {
                panic!(
                    "{}: no greedy tokens ({e}); run scripts/make-llama-fixtures.py",
                    path.display()
                )
            });
        assert!(expected.len() >= 16, "{variant}: {expected:?}");
        for kernels in paths() {
            let model = llama::weights::load(&dir, &Device::Cpu, DType::F32, kernels).unwrap();
            let limits = llama::generate::limits(model.config(), &dir).unwrap();
            assert_eq!(limits.eos, [2], "{variant}: config.json's end token");
            let alone = generate(
                &model,
                &limits,
                &[Request::greedy(&ids, expected.len())],
                &mut |_| Flow::Continue,
            )
            .unwrap();
            assert_eq!(alone[0].tokens, expected, "{variant} on {kernels:?}, alone");
            // Beside a shorter sequence that finishes first: the same tokens.
            let batch = [
                Request::greedy(&ids, expected.len()),
                Request::greedy(&ids[..5], 7),
            ];
            let together = generate(&model, &limits, &batch, &mut |_| Flow::Continue).unwrap();
            assert_eq!(
                together[0].tokens, expected,
                "{variant} on {kernels:?}, in a batch"
            );
            assert_eq!(together[1].tokens.len(), 7);
        }
    }
}
