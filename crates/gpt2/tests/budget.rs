//! The rows a profile of GPT-2 emits, read against the two places that name them: the
//! budget's lines (`bench::budget::line_of`, which the book's budget chapter and `course bench
//! budget` use) and the kernel labels of the contract. A scope renamed in `gpt2::ops` without
//! the budget would silently fall into "everything else"; these tests catch that.

mod common;

use candle_core::{DType, Device};
use common::on_each_path;
use gpt2::cpu::KernelPath;
use gpt2::{Config, Logits, MlpActivation, Model, Segment};
use profiler::{Options, Profiler, Schedule, SortBy, View, STEP_ROW};

/// The ops the budget chapter deliberately leaves on "everything else": the embedding lookup
/// and the slice that keeps the last position. Every other op row must land on a named line.
const OTHER_BY_DESIGN: [&str; 2] = ["embedding", "last_position"];

/// Every label a row may carry (the contract's vocabulary).
const LABELS: [&str; 9] = ["packed-avx512", "packed-avx2", "candle-gemm", "avx512", "avx2", "candle", "cublas", "candle-cuda", "custom"];

/// The op rows (name, kernel) of one recorded step that covers every op: a two-row prefill
/// with logits for all positions (the mask is built and applied), then a decode step for the
/// last position only (`attn_decode` on the fast paths).
fn op_rows(model: &Model) -> Vec<(String, Option<String>)> {
    let mut prof = Profiler::new(Options { schedule: Schedule::new(0, 0, 1, 1), ..Options::default() });
    while !prof.is_done() {
        prof.step(|| {
            let mut caches = model.new_caches(2, 7);
            model.forward(&mut Segment::rows(&[vec![5, 6, 7, 8, 9, 10], vec![1, 2, 7, 8, 9, 10]], &mut caches, Logits::AllPositions)?)?;
            model.forward(&mut Segment::rows(&[vec![11], vec![11]], &mut caches, Logits::LastPosition)?).map(drop)
        })
        .unwrap();
    }
    let rows = prof.finish().key_averages(View::Op, false, SortBy::SelfCpuTimeTotal).rows;
    rows.into_iter().filter(|r| r.name != STEP_ROW).map(|r| (r.name, r.kernel)).collect()
}

fn synthetic(activation: MlpActivation, path: KernelPath) -> Model {
    let mut model = gpt2::weights::synthetic_model(&Config::tiny(), &Device::Cpu, DType::F32, path).unwrap();
    model.set_mlp_activation(activation);
    model
}

#[test]
fn every_op_row_lands_on_a_named_budget_line() {
    on_each_path(|path| {
        for (activation, name) in [(MlpActivation::Stock, "stock"), (MlpActivation::Fused, "fused")] {
            let rows = op_rows(&synthetic(activation, path));
            let names: Vec<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
            // The step covered the ops it was built to: both mask rows, both activations' rows.
            for expected in ["embedding", "mask_build", "mask_apply", "softmax", "attn_qk", "attn_v", "last_position", "lm_head"] {
                assert!(names.contains(&expected), "{path}, {name} MLP: no {expected} row in {names:?}");
            }
            if path != KernelPath::Portable {
                assert!(names.contains(&"attn_decode"), "{path}, {name} MLP: no attn_decode row in {names:?}");
            }
            let activation_row = if name == "stock" { "gelu" } else { "bias_gelu" };
            assert!(names.contains(&activation_row), "{path}, {name} MLP: no {activation_row} row in {names:?}");
            for op in &names {
                let line = bench::budget::line_of(op);
                if OTHER_BY_DESIGN.contains(op) {
                    assert_eq!(line, bench::budget::Line::Other, "{op} moved off \"everything else\": update OTHER_BY_DESIGN and the chapter");
                } else {
                    assert_ne!(line, bench::budget::Line::Other, "{path}, {name} MLP: op row {op} falls into \"everything else\"; map it in bench::budget::line_of");
                }
            }
        }
    });
}

#[test]
fn a_renamed_scope_would_be_caught() {
    // The check above is only as good as `line_of` is strict: a name it does not know is "other".
    assert_eq!(bench::budget::line_of("mask_fill"), bench::budget::Line::Other);
    assert_eq!(bench::budget::line_of("attn_scores"), bench::budget::Line::Other);
}

#[test]
fn every_op_row_says_which_kernel_ran() {
    on_each_path(|path| {
        let rows = op_rows(&synthetic(MlpActivation::Fused, path));
        let kernel = |op: &str| rows.iter().find(|(n, _)| n == op).and_then(|(_, k)| k.clone()).unwrap_or_else(|| panic!("{path}: no kernel on {op}: {rows:?}"));
        for (op, k) in &rows {
            let k = k.as_deref().unwrap_or_else(|| panic!("{path}: row {op} has no kernel label"));
            assert!(k.split('+').all(|l| LABELS.contains(&l)), "{path}: {op} ran on {k}, not a contract label");
        }
        // The path decides: the dense layers' products (a 12-row prefill and a 2-row decode
        // step), attention's products and the element-wise ops.
        let (matmul, attention, elementwise) = match path {
            KernelPath::Avx512 => ("packed-avx512", "packed-avx512", "avx512"),
            KernelPath::Avx2 => ("packed-avx2", "packed-avx2", "avx2"),
            KernelPath::Portable => ("candle-gemm", "candle-gemm", "candle"),
        };
        assert_eq!(kernel("matmul"), matmul, "{path}");
        assert_eq!(kernel("lm_head"), matmul, "{path}");
        for op in ["attn_qk", "attn_v"] {
            assert_eq!(kernel(op), attention, "{path}: {op}");
        }
        for op in ["layer_norm", "mask_apply", "softmax", "bias_gelu", "bias_residual_add"] {
            assert_eq!(kernel(op), elementwise, "{path}: {op}");
        }
        if path != KernelPath::Portable {
            assert_eq!(kernel("attn_decode"), elementwise, "{path}: attn_decode");
        }
        for op in ["embedding", "split_heads", "kv_cache", "merge_heads", "mask_build", "last_position"] {
            assert_eq!(kernel(op), "candle", "{path}: {op}");
        }
    });
}

#[test]
fn models_built_for_different_paths_keep_their_own_kernels_side_by_side() {
    // The path is the model's: building a second model for another path, and running the two
    // in turns, changes no row of the first (a process-wide path would mix them).
    let paths = KernelPath::supported();
    let models: Vec<Model> = paths.iter().map(|&p| synthetic(MlpActivation::Fused, p)).collect();
    for _ in 0..2 {
        for (model, &path) in models.iter().zip(&paths) {
            assert_eq!(model.kernel_path(), path);
            let rows = op_rows(model);
            let softmax = rows.iter().find(|(n, _)| n == "softmax").and_then(|(_, k)| k.clone());
            let want = if path == KernelPath::Portable { "candle" } else { path.name() };
            assert_eq!(softmax.as_deref(), Some(want), "{path}: {rows:?}");
        }
    }
}
