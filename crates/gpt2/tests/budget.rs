//! The rows a profile of GPT-2 emits, read against what they declare: the budget line each op
//! names with itself in `engine::ops::list` (which the book's budget chapter, `course bench
//! budget` and the grader read from report.json) and the kernel labels of the contract. An op
//! left off the list, or put on "everything else" by mistake, is caught here.

mod common;

use candle_core::{DType, Device};
use common::on_each_path;
use engine::cpu::KernelPath;
use engine::ops::list;
use gpt2::{Config, MlpActivation, Model};
use profiler::{Line, STEP_ROW};

/// The ops the budget chapter deliberately leaves on "everything else": the embedding lookup
/// and the slice that keeps the last position. Every other op row must land on a named line.
const OTHER_BY_DESIGN: [&str; 2] = ["embedding", "last_position"];

/// Whether this CPU has `avx512_bf16`, whose dot product the AVX-512 path's bf16 products of
/// 8 rows or more run on.
fn has_bf16_dot() -> bool {
    #[cfg(target_arch = "x86_64")]
    return std::arch::is_x86_feature_detected!("avx512bf16");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

/// Every label a row may carry (the contract's vocabulary).
const LABELS: [&str; 14] = [
    "packed-avx512",
    "packed-avx2",
    "packed-avx512-bf16",
    "packed-avx512-bf16-dot",
    "packed-avx2-bf16",
    "packed-avx512-f16",
    "packed-avx2-f16",
    "candle-gemm",
    "avx512",
    "avx2",
    "candle",
    "cublas",
    "candle-cuda",
    "custom",
];

/// The model types a CPU model may be loaded in (`--dtype`).
const DTYPES: [DType; 3] = [DType::F32, DType::BF16, DType::F16];

/// One op row: its name, budget line, kernel label and work.
#[derive(Debug)]
struct OpRow {
    name: String,
    line: Line,
    kernel: Option<String>,
    dtype: Option<String>,
    flops: Option<u64>,
    bytes: Option<u64>,
}

/// The op rows of one step that runs every op (`engine::profile::every_op_rows`).
fn op_rows(model: &Model) -> Vec<OpRow> {
    let rows = engine::profile::every_op_rows(model).unwrap();
    rows.into_iter()
        .map(|r| OpRow {
            name: r.name,
            line: r.line,
            kernel: r.kernel,
            dtype: r.dtype,
            flops: r.flops,
            bytes: r.bytes,
        })
        .collect()
}

fn synthetic(activation: MlpActivation, path: KernelPath) -> Model {
    synthetic_in(activation, path, DType::F32)
}

/// The tiny synthetic model with its weights in `dtype`.
fn synthetic_in(activation: MlpActivation, path: KernelPath, dtype: DType) -> Model {
    let mut model =
        gpt2::weights::synthetic_model(&Config::tiny(), &Device::Cpu, dtype, path).unwrap();
    model.set_mlp_activation(activation);
    model
}

#[test]
fn every_op_row_lands_on_a_named_budget_line() {
    on_each_path(|path| {
        for (activation, name) in [
            (MlpActivation::Stock, "stock"),
            (MlpActivation::Fused, "fused"),
        ] {
            let rows = op_rows(&synthetic(activation, path));
            let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
            // The step covered the ops it was built to: both mask rows, both activations' rows.
            for expected in [
                "embedding",
                "mask_build",
                "mask_apply",
                "softmax",
                "attn_qk",
                "attn_v",
                "last_position",
                "lm_head",
            ] {
                assert!(
                    names.contains(&expected),
                    "{path}, {name} MLP: no {expected} row in {names:?}"
                );
            }
            if path != KernelPath::Portable {
                assert!(
                    names.contains(&"attn_decode"),
                    "{path}, {name} MLP: no attn_decode row in {names:?}"
                );
            }
            let activation_row = if name == "stock" { "gelu" } else { "bias_gelu" };
            assert!(
                names.contains(&activation_row),
                "{path}, {name} MLP: no {activation_row} row in {names:?}"
            );
            for row in &rows {
                let op = row.name.as_str();
                let declared = list::ALL.iter().find(|o| o.name == op);
                assert_eq!(
                    declared.map(|o| o.line()),
                    Some(row.line),
                    "{path}, {name} MLP: op row {op} is not on the line engine::ops::list declares"
                );
                if OTHER_BY_DESIGN.contains(&op) {
                    assert_eq!(row.line, Line::Other, "{op} moved off \"everything else\": update OTHER_BY_DESIGN and the chapter");
                } else {
                    assert_ne!(row.line, Line::Other, "{path}, {name} MLP: op row {op} falls into \"everything else\"; give it its line in engine::ops::list");
                }
            }
        }
    });
}

#[test]
fn the_op_list_names_each_op_once() {
    let mut names: Vec<&str> = list::ALL.iter().map(|o| o.name).collect();
    names.sort_unstable();
    let before = names.len();
    names.dedup();
    assert_eq!(
        names.len(),
        before,
        "an op name is declared twice in engine::ops::list"
    );
    // The learner's own fused op of exercise 5 lands on the activations line, whatever its name.
    assert_eq!(list::custom("my_kernel").line(), Line::Activations);
}

#[test]
fn every_op_row_says_which_kernel_ran() {
    on_each_path(|path| {
        for dtype in DTYPES {
            let rows = op_rows(&synthetic_in(MlpActivation::Fused, path, dtype));
            let kernel = |op: &str| {
                rows.iter()
                    .find(|r| r.name == op)
                    .and_then(|r| r.kernel.clone())
                    .unwrap_or_else(|| panic!("{path} {dtype:?}: no kernel on {op}: {rows:?}"))
            };
            for OpRow {
                name: op,
                kernel: k,
                ..
            } in &rows
            {
                let k = k
                    .as_deref()
                    .unwrap_or_else(|| panic!("{path} {dtype:?}: row {op} has no kernel label"));
                assert!(
                    k.split('+').all(|l| LABELS.contains(&l)),
                    "{path} {dtype:?}: {op} ran on {k}, not a contract label"
                );
            }
            // The path decides: the dense layers' products (a 12-row prefill and a 2-row decode
            // step), named with the weights' type where it is a half type; attention's products
            // and the element-wise ops, which run on f32 activations on the packed paths.
            let half = match dtype {
                DType::BF16 => "-bf16",
                DType::F16 => "-f16",
                _ => "",
            };
            // On AVX-512 a bf16 product of 8 rows or more runs on `avx512_bf16`'s dot product
            // where the CPU has it: the prefill's row then names both kernels.
            let dot = path == KernelPath::Avx512 && dtype == DType::BF16 && has_bf16_dot();
            let (matmul, attention, elementwise) = match path {
                KernelPath::Avx512 if dot => (
                    "packed-avx512-bf16+packed-avx512-bf16-dot".to_string(),
                    "packed-avx512",
                    "avx512",
                ),
                KernelPath::Avx512 => (format!("packed-avx512{half}"), "packed-avx512", "avx512"),
                KernelPath::Avx2 => (format!("packed-avx2{half}"), "packed-avx2", "avx2"),
                KernelPath::Portable => ("candle-gemm".to_string(), "candle-gemm", "candle"),
            };
            assert_eq!(kernel("matmul"), matmul, "{path} {dtype:?}");
            assert_eq!(kernel("lm_head"), matmul, "{path} {dtype:?}");
            for op in ["attn_qk", "attn_v"] {
                assert_eq!(kernel(op), attention, "{path} {dtype:?}: {op}");
            }
            for op in [
                "layer_norm",
                "mask_apply",
                "softmax",
                "bias_gelu",
                "bias_residual_add",
            ] {
                assert_eq!(kernel(op), elementwise, "{path} {dtype:?}: {op}");
            }
            if path != KernelPath::Portable {
                assert_eq!(
                    kernel("attn_decode"),
                    elementwise,
                    "{path} {dtype:?}: attn_decode"
                );
            }
            for op in [
                "embedding",
                "split_heads",
                "kv_cache",
                "merge_heads",
                "mask_build",
                "last_position",
            ] {
                assert_eq!(kernel(op), "candle", "{path} {dtype:?}: {op}");
            }
            // And each row names the type it streamed: the products the weights', the mask its
            // bytes, the rest the activations' (f32 on the packed paths, the weights' on portable).
            let activations = if path == KernelPath::Portable {
                dtype
            } else {
                DType::F32
            };
            for row in &rows {
                let want = match row.name.as_str() {
                    "matmul" | "lm_head" => dtype.as_str(),
                    "mask_build" => "u8",
                    _ => activations.as_str(),
                };
                assert_eq!(
                    row.dtype.as_deref(),
                    Some(want),
                    "{path} {dtype:?}: {}",
                    row.name
                );
            }
        }
    });
}

#[test]
fn a_half_type_weight_is_counted_at_its_stored_width() {
    on_each_path(|path| {
        let work = |dtype: DType, op: &str| {
            let rows = op_rows(&synthetic_in(MlpActivation::Fused, path, dtype));
            let row = rows
                .iter()
                .find(|r| r.name == op)
                .unwrap_or_else(|| panic!("{path}: no {op} row"));
            (
                row.flops.expect("a product counts its FLOPs"),
                row.bytes.expect("a product counts its bytes"),
            )
        };
        let model = synthetic(MlpActivation::Fused, path);
        let c = model.config();
        let (e, inner) = (c.n_embd, c.inner_dim());
        // `op_rows` runs two passes, each through every dense layer once and the head once.
        let layer_weights = 2 * c.n_layer * (e * 3 * e + e * e + e * inner + inner * e);
        let head_weights = 2 * c.vocab_size * e;
        for dtype in [DType::BF16, DType::F16] {
            for (op, weights) in [("matmul", layer_weights), ("lm_head", head_weights)] {
                let ((f32_flops, f32_bytes), (flops, bytes)) =
                    (work(DType::F32, op), work(dtype, op));
                assert_eq!(
                    flops, f32_flops,
                    "{path} {dtype:?} {op}: the same arithmetic"
                );
                if path == KernelPath::Portable {
                    // Candle's ops run in the half type: every operand is half as wide.
                    assert_eq!(2 * bytes, f32_bytes, "{path} {dtype:?} {op}");
                } else {
                    // The weights at 2 bytes instead of 4; the f32 activations as before.
                    assert_eq!(
                        f32_bytes - bytes,
                        2 * weights as u64,
                        "{path} {dtype:?} {op}"
                    );
                }
            }
        }
    });
}

#[test]
fn models_built_for_different_paths_keep_their_own_kernels_side_by_side() {
    // The path is the model's: building a second model for another path, and running the two
    // in turns, changes no row of the first (a process-wide path would mix them).
    let paths = KernelPath::supported();
    let models: Vec<Model> = paths
        .iter()
        .map(|&p| synthetic(MlpActivation::Fused, p))
        .collect();
    for _ in 0..2 {
        for (model, &path) in models.iter().zip(&paths) {
            assert_eq!(model.kernel_path(), path);
            let rows = op_rows(model);
            let softmax = rows
                .iter()
                .find(|r| r.name == "softmax")
                .and_then(|r| r.kernel.clone());
            let want = if path == KernelPath::Portable {
                "candle"
            } else {
                path.name()
            };
            assert_eq!(softmax.as_deref(), Some(want), "{path}: {rows:?}");
        }
    }
}

/// The committed report fixtures other crates' tests read: the grader's (real runs and the
/// hand-written CUDA one) and bench's.
fn report_fixtures() -> Vec<std::path::PathBuf> {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut paths: Vec<_> = std::fs::read_dir(crates.join("grader/tests/fixtures/reports"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.push(crates.join("bench/tests/fixtures/profile-report.json"));
    paths.sort();
    paths
}

#[test]
fn the_committed_report_fixtures_put_each_op_on_its_declared_line() {
    let fixtures = report_fixtures();
    assert!(fixtures.len() >= 6, "{fixtures:?}");
    for path in fixtures {
        let report: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        assert_eq!(report["schema"], profiler::SCHEMA, "{}", path.display());
        for row in report["rows"].as_array().unwrap() {
            let name = row["name"].as_str().unwrap();
            let line: Line = serde_json::from_value(row["line"].clone())
                .unwrap_or_else(|e| panic!("{}: {name}: {e}", path.display()));
            // The step row is "everything else"; exercise 5's fused ops are a caller's own.
            let declared = match list::ALL.iter().find(|o| o.name == name) {
                Some(op) => op.line(),
                None if name == STEP_ROW => Line::Other,
                None if name.starts_with("fused_bias_gelu") => list::custom("fused").line(),
                None => panic!(
                    "{}: `{name}` is no op of engine::ops::list: regenerate the fixture",
                    path.display()
                ),
            };
            assert_eq!(line, declared, "{}: {name}", path.display());
        }
    }
}
