//! The forward pass under the profiler: every op is in a scope, and the scopes account for
//! the wall time of the step.

use std::time::Instant;

use candle_core::{DType, Device};
use gpt2::profile::{profile_forward, sample_ids, ForwardProfile};
use gpt2::{Config, Logits, MlpActivation};
use profiler::{Options, Profiler, Schedule, SortBy, View};

fn names(view: View, profile: &profiler::Profile) -> Vec<String> {
    profile.key_averages(view, false, SortBy::SelfCpuTimeTotal).rows.into_iter().map(|r| r.name).collect()
}

#[test]
fn the_scopes_account_for_the_wall_time_of_a_gpt2_small_forward() {
    let mut model = gpt2::weights::synthetic_model(&Config::gpt2_small(), &Device::Cpu, DType::F32).unwrap();
    for activation in [MlpActivation::Stock, MlpActivation::Fused] {
        model.set_mlp_activation(activation);
        let ids = sample_ids(1, 8, model.config().vocab_size);
        let mut prof = Profiler::new(Options { schedule: Schedule::new(0, 1, 3, 1), ..Options::default() });
        // Wall time measured outside the profiler, over the active steps only.
        let mut measured_ns = 0u128;
        while !prof.is_done() {
            let active = prof.next_phase() == profiler::Phase::Active;
            let start = Instant::now();
            prof.step(|| model.forward(&ids, &mut model.new_cache(1, 8), Logits::AllPositions).map(drop)).unwrap();
            if active {
                measured_ns += start.elapsed().as_nanos();
            }
        }
        let profile = prof.finish();
        let k = profile.key_averages(View::Op, false, SortBy::SelfCpuTimeTotal);
        let self_sum: u64 = k.rows.iter().map(|r| r.self_cpu_ns).sum();
        let gap = (self_sum as f64 - measured_ns as f64).abs() / measured_ns as f64;
        assert!(gap <= 0.02, "Σ self = {self_sum} ns, measured wall = {measured_ns} ns ({:.2}% apart)", gap * 100.0);
        // And almost none of it is outside an op scope.
        assert!(k.scoped_fraction() >= 0.98, "only {:.2}% of the step is inside op scopes", k.scoped_fraction() * 100.0);
    }
}

#[test]
fn the_table_reads_by_op_and_by_module() {
    let mut model = gpt2::weights::synthetic_model(&Config::tiny(), &Device::Cpu, DType::F32).unwrap();
    model.set_mlp_activation(MlpActivation::Stock);
    let p = ForwardProfile { batch: 2, seq: 5, warmup: 1, active: 2, ..ForwardProfile::default() };
    let profile = profile_forward(&model, &p).unwrap();
    let ops = names(View::Op, &profile);
    for op in ["embedding", "layer_norm", "matmul", "bias_add", "attn_qk", "mask_build", "mask_apply", "softmax", "attn_v", "gelu", "bias_residual_add", "lm_head"] {
        assert!(ops.iter().any(|n| n == op), "op {op} missing from {ops:?}");
    }
    let modules = names(View::Module, &profile);
    for m in ["block", "attn", "mlp"] {
        assert!(modules.iter().any(|n| n == m), "module {m} missing from {modules:?}");
    }
    // Fused, the MLP's bias add and GELU become one row.
    model.set_mlp_activation(MlpActivation::Fused);
    let ops = names(View::Op, &profile_forward(&model, &p).unwrap());
    assert!(ops.iter().any(|n| n == "bias_gelu") && !ops.iter().any(|n| n == "gelu"), "{ops:?}");
}

#[test]
fn gpt2_profile_writes_the_three_exports() {
    let out = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["profile", "--model", "synthetic-tiny", "--device", "cpu", "--seq", "6", "--row-limit", "5", "--out"])
        .arg(out.path())
        .env("GPT2_COURSE_CACHE", cache.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(stdout.contains("Self CPU time total:"), "{stdout}");
    let report = profiler::Report::read_json(out.path().join("report.json")).unwrap();
    assert_eq!(report.active_steps, 5);
    assert!(!report.rows.is_empty());
    let trace: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.path().join("trace.json")).unwrap()).unwrap();
    assert!(trace.to_string().contains("lm_head"));
    assert!(std::fs::read_to_string(out.path().join("flamegraph.svg")).unwrap().contains("<svg"));
}

#[test]
fn gpt2_profile_compares_two_reports() {
    let cache = tempfile::tempdir().unwrap();
    let dirs = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    for (dir, mlp) in dirs.iter().zip(["stock", "fused"]) {
        let run = std::process::Command::new(env!("CARGO_BIN_EXE_gpt2"))
            .args(["profile", "--model", "synthetic-tiny", "--device", "cpu", "--mlp", mlp, "--out"])
            .arg(dir.path())
            .env("GPT2_COURSE_CACHE", cache.path())
            .output()
            .unwrap();
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    }
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["profile", "--compare"])
        .arg(dirs[0].path().join("report.json"))
        .arg(dirs[1].path().join("report.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&run.stdout);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    // The stock run's gelu and the fused run's bias_gelu both appear, each on one side only.
    assert!(stdout.contains("gelu") && stdout.contains("bias_gelu"), "{stdout}");
    let missing = std::process::Command::new(env!("CARGO_BIN_EXE_gpt2")).args(["profile", "--compare", "/nonexistent/a.json", "/nonexistent/b.json"]).output().unwrap();
    assert!(!missing.status.success());
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/nonexistent/a.json"));
}
