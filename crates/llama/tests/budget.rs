//! The rows a profile of each Llama-family variant emits, read against what they declare: the
//! budget line each op names in `engine::ops::list`, the kernel labels of the contract, and a
//! work count on every row that does arithmetic or moves a tensor, so that each has a roofline.
//! On every kernel path and in every weight type a CPU model may be loaded in.

use candle_core::{DType, Device};
use engine::cpu::KernelPath;
use engine::ops::list;
use llama::Model;
use profiler::Line;

/// The ops the budget chapter leaves on "everything else" by design (as for GPT-2).
const OTHER_BY_DESIGN: [&str; 2] = ["embedding", "last_position"];

/// The rows that only move or reshape values and declare no work (as for GPT-2).
const NO_WORK: [&str; 5] = [
    "embedding",
    "split_heads",
    "kv_cache",
    "merge_heads",
    "last_position",
];

const LABELS: [&str; 11] = [
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
];

fn model(variant: &str, path: KernelPath, dtype: DType) -> Model {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/tiny-{variant}"));
    llama::weights::load(&dir, &Device::Cpu, dtype, path).unwrap()
}

#[derive(Debug)]
struct OpRow {
    name: String,
    line: Line,
    kernel: Option<String>,
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
            flops: r.flops,
            bytes: r.bytes,
        })
        .collect()
}

#[test]
fn every_op_of_every_variant_has_its_named_row_kernel_and_work() {
    for path in KernelPath::supported() {
        for dtype in [DType::F32, DType::BF16, DType::F16] {
            for variant in ["llama", "smollm2", "qwen2", "qwen3"] {
                let rows = op_rows(&model(variant, path, dtype));
                let names: Vec<&str> = rows.iter().map(|r| r.name.as_str()).collect();
                let at = format!("{variant}, {path}, {dtype:?}");
                let mut expected = vec![
                    "embedding",
                    "rms_norm",
                    "matmul",
                    "split_heads",
                    "rope",
                    "kv_cache",
                    "silu_mul",
                    "residual_add",
                    "merge_heads",
                    "lm_head",
                    "last_position",
                ];
                expected.extend(["mask_build", "mask_apply", "attn_qk", "softmax", "attn_v"]);
                if variant != "smollm2" {
                    expected.push("repeat_kv"); // grouped-query: 4 query heads over 2 key/value heads
                }
                if path != KernelPath::Portable {
                    expected.push("attn_decode");
                }
                for op in expected {
                    assert!(names.contains(&op), "{at}: no {op} row in {names:?}");
                }
                assert!(
                    !names.contains(&"layer_norm") && !names.contains(&"gelu"),
                    "{at}: a GPT-2 op in {names:?}"
                );
                for row in &rows {
                    let op = row.name.as_str();
                    let declared = list::ALL.iter().find(|o| o.name == op);
                    assert_eq!(
                        declared.map(|o| o.line()),
                        Some(row.line),
                        "{at}: row {op} is not on the line engine::ops::list declares"
                    );
                    assert_eq!(
                        row.line == Line::Other,
                        OTHER_BY_DESIGN.contains(&op),
                        "{at}: {op} is on {:?}",
                        row.line
                    );
                    let kernel = row
                        .kernel
                        .as_deref()
                        .unwrap_or_else(|| panic!("{at}: {op} has no kernel label"));
                    // A row that ran on two kernels (a bf16 product widened for a decode row and
                    // on the dot product for a prefill) names both, joined by `+`.
                    assert!(
                        kernel.split('+').all(|k| LABELS.contains(&k)),
                        "{at}: {op} ran on {kernel}, not a contract label"
                    );
                    if !NO_WORK.contains(&op) && op != "mask_build" && op != "mask_apply" {
                        assert!(
                            row.flops.is_some() && row.bytes.is_some_and(|b| b > 0),
                            "{at}: {op} has no work count: {row:?}"
                        );
                    }
                }
                let matmul = rows
                    .iter()
                    .find(|r| r.name == "matmul")
                    .unwrap()
                    .kernel
                    .clone()
                    .unwrap();
                let packed = path != KernelPath::Portable;
                assert_eq!(
                    matmul.starts_with("packed-"),
                    packed,
                    "{at}: the dense layers ran on {matmul}"
                );
                if packed && dtype != DType::F32 {
                    // Each kernel the products ran on names the weights' type (bf16's dot product too).
                    let half = if dtype == DType::BF16 {
                        "-bf16"
                    } else {
                        "-f16"
                    };
                    assert!(
                        matmul
                            .split('+')
                            .all(|k| k.ends_with(half) || k.ends_with(&format!("{half}-dot"))),
                        "{at}: {matmul}"
                    );
                }
            }
        }
    }
}
