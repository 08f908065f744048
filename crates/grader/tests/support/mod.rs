//! Fixture submissions built in code, so each case states only what differs from a perfect one
//! and every results file is consistent unless a test breaks it on purpose. Shared by the
//! integration tests and the cohort benchmark (examples/cohort_bench.rs).
#![allow(dead_code)]

use grader::key::Key;
use grader::manifest::{Manifest, MANIFEST_PATH};
use grader::quiz::QuestionBank;
use grader::Grader;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn fixture_quiz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/quizzes")
}

/// The course's own manifest and default key, with the fixture quiz files.
pub fn grader() -> Grader {
    let root = repo_root();
    let manifest = Manifest::load(&root.join(MANIFEST_PATH)).expect("exercises/info.toml");
    let key = Key::load(&root.join(grader::key::DEFAULT_KEY_DIR), &manifest).expect("default key");
    let names: Vec<String> = manifest.exercises.iter().flat_map(|e| e.quizzes.clone()).collect();
    let bank = QuestionBank::load(&[fixture_quiz_dir()], &names).expect("fixture quizzes");
    Grader::new(manifest, bank, key).expect("grader")
}

/// A consistent profiler-report/1: shares of the device's column, totals equal to the rows.
/// Rows are (name, self CPU µs, self CUDA µs) in the order given.
pub fn profile_json(device: &str, rows: &[(&str, f64, Option<f64>)]) -> String {
    let cpu_sum: f64 = rows.iter().map(|r| r.1).sum();
    let cuda_sum: f64 = rows.iter().filter_map(|r| r.2).sum();
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|(name, cpu, cuda)| {
            serde_json::json!({
                "name": name, "input_shapes": null, "calls": 12,
                "self_cpu_us": cpu, "cpu_total_us": cpu, "self_cpu_pct": round2(cpu / cpu_sum * 100.0),
                "self_cuda_us": cuda, "cuda_total_us": cuda,
                "self_cuda_pct": cuda.map(|c| round2(c / cuda_sum * 100.0)),
                "flops": null, "bytes": null
            })
        })
        .collect();
    let sort_by = if device == "cuda" { "self_cuda_time_total" } else { "self_cpu_time_total" };
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "profiler-report/1", "device": device, "sort_by": sort_by, "view": "op",
        "grouped_by_input_shape": false, "active_steps": 5,
        "environment": {"threads": 2, "os": "linux", "arch": "x86_64", "cpu": "test cpu", "build": "release",
                        "features": [], "timing": if device == "cuda" { "cuda-events" } else { "host" }, "crate_version": "0.1.0"},
        "totals": {"self_cpu_us": cpu_sum, "self_cuda_us": if device == "cuda" { Some(cuda_sum) } else { None }, "wall_us": cpu_sum * 1.1},
        "rows": rows
    }))
    .unwrap()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// The CPU profile of the perfect learner: matmul 52%, gelu 26%, add 11%, softmax 6%, layer_norm 5%.
pub fn cpu_profile() -> String {
    profile_json("cpu", &[("matmul", 5200.0, None), ("gelu", 2600.0, None), ("add", 1100.0, None), ("softmax", 600.0, None), ("layer_norm", 500.0, None)])
}

/// The same model on CUDA: ranked by self CUDA time, whatever the CPU column says.
pub fn cuda_profile() -> String {
    profile_json(
        "cuda",
        &[("matmul", 300.0, Some(6000.0)), ("softmax", 250.0, Some(2000.0)), ("gelu", 400.0, Some(1500.0)), ("add", 350.0, Some(500.0))],
    )
}

pub fn bench_json(verdict: &str, ratio: f64, ci: (f64, f64), p90_ttft_ms: f64) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "bench-report/1",
        "environment": {"os": "linux"},
        "runs": [{"label": "a", "config": {}, "metrics": {"completed": 64, "ttft_ms": {"p50": p90_ttft_ms * 0.7, "p90": p90_ttft_ms, "p99": p90_ttft_ms * 1.2}}}],
        "comparison": {"metric": "e2el_ms", "ratio": ratio, "ci_low": ci.0, "ci_high": ci.1, "threshold": 0.05,
                       "better": "lower", "verdict": verdict, "a": 100.0, "b": 100.0 * ratio}
    }))
    .unwrap()
}

pub const PERFECT_EX1: &str = "[quiz]\nntq-1 = \"Benchmark\"\nntq-2 = \"Profile\"\nntq-3 = \"Benchmark\"\nntq-4 = \"Profile\"\nntq-5 = \"Benchmark\"\nntq-6 = \"Profile\"\n";
pub const PERFECT_EX2: &str = "[comparison]\nratio = 0.82\nverdict = \"faster\"\n";
pub const PERFECT_EX3_CPU: &str = r#"[[top_ops]]
name = "matmul"
share_pct = 52.0
[[top_ops]]
name = "gelu"
share_pct = 26.0
[[top_ops]]
name = "add"
share_pct = 11.0
[plan]
attack_first = "Attack gelu first: it takes 26% of the step but does little math, so fusing it with the bias add cuts its memory traffic."
"#;
pub const PERFECT_EX4: &str = "[illustrative]\nactivations_share_pct = 15\nsaving_ms = 4\nsaving_pct = 10\nnew_step_ms = 36\n[own]\nop = \"gelu\"\nop_share_pct = 26\nremoved_fraction = 0.5\nsaving_pct = 13\n";
pub const PERFECT_EX5: &str = "[fused_check]\nmax_abs_error = 3.2e-7\n[profile]\nactivation_op = \"gelu\"\nshare_before_pct = 26\nfused_op = \"fused_bias_gelu\"\nshare_after_pct = 4.55\n[benchmark]\nverdict = \"faster\"\n";
pub const PERFECT_EX6: &str = "[quiz]\ncy-double-traffic = \"Benchmark at twice the load\"\ncy-slower-than-vllm = \"Profile your serving code\"\ncy-nsight-ttft = \"No: change the configuration and benchmark\"\ncy-6ms-before-22ms = \"The activations do little math, so their time is memory traffic that fusing removes, while the matmuls are already near peak.\"\n";
pub const PERFECT_EX7: &str = "target_p90_ttft_ms = 200\np90_ttft_ms_at_rate = 120\np90_ttft_ms_at_double = 260\ntarget_holds_at_double = \"no\"\n";

/// Every file of a perfect submission, relative to the exercises folder.
pub fn perfect_files() -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        f.insert(k.to_string(), v);
    };
    put("exercise-1/answers.toml", PERFECT_EX1.into());
    put("exercise-2/answers.toml", PERFECT_EX2.into());
    put("exercise-2/results/bench.json", bench_json("faster", 0.82, (0.78, 0.86), 40.0));
    put("exercise-3/answers.toml", PERFECT_EX3_CPU.into());
    put("exercise-3/results/report.json", cpu_profile());
    put("exercise-4/answers.toml", PERFECT_EX4.into());
    put("exercise-5/answers.toml", PERFECT_EX5.into());
    put("exercise-5/results/fused_check.json", r#"{"schema": "fused-check/1", "max_abs_error": 3.2e-7, "shape": [8, 3072], "device": "cpu"}"#.into());
    put("exercise-5/results/unfused/report.json", cpu_profile());
    put(
        "exercise-5/results/fused/report.json",
        profile_json("cpu", &[("matmul", 5200.0, None), ("add", 1100.0, None), ("softmax", 600.0, None), ("layer_norm", 500.0, None), ("fused_bias_gelu", 350.0, None)]),
    );
    put("exercise-5/results/bench.json", bench_json("faster", 0.9, (0.86, 0.93), 40.0));
    put("exercise-6/answers.toml", PERFECT_EX6.into());
    put("exercise-7/answers.toml", PERFECT_EX7.into());
    put("exercise-7/results/rate-1x/bench.json", bench_json("within_noise", 1.0, (0.97, 1.03), 120.0));
    put("exercise-7/results/rate-2x/bench.json", bench_json("within_noise", 1.0, (0.97, 1.03), 260.0));
    f
}

/// Write files under `dir/exercises/`.
pub fn write_tree(dir: &Path, files: &BTreeMap<String, String>) {
    for (rel, text) in files {
        let path = dir.join("exercises").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}
