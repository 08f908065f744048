//! Fixture submissions built in code, so each case states only what differs from a perfect one
//! and every results file is consistent unless a test breaks it on purpose. Shared by the
//! integration tests and the cohort benchmark (examples/cohort_bench.rs).
#![allow(dead_code, reason = "each test file uses some of the shared helpers")]

use course_model::manifest::{Manifest, MANIFEST_PATH};
use course_model::quiz::QuestionBank;
use flate2::write::GzEncoder;
use grader::key::Key;
use grader::Grader;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

mod graded;
#[allow(
    unused_imports,
    reason = "each test file uses some of the shared helpers"
)]
pub use graded::*;

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
    let names: Vec<String> = manifest
        .exercises
        .iter()
        .flat_map(|e| e.quizzes.clone())
        .collect();
    let bank = QuestionBank::load(&[fixture_quiz_dir()], &names).expect("fixture quizzes");
    Grader::new(manifest, bank, key).expect("grader")
}

/// A consistent profiler-report/7 without ceilings (so no roofline columns): shares of the
/// device's column, totals equal to the rows. Rows are (name, self CPU µs, self CUDA µs) in the
/// order given; each is on the line its name gives an op nobody declared (`Line::of_undeclared`).
pub fn profile_json(device: &str, rows: &[(&str, f64, Option<f64>)]) -> String {
    let cpu_sum: f64 = rows.iter().map(|r| r.1).sum();
    let cuda_sum: f64 = rows.iter().filter_map(|r| r.2).sum();
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|(name, cpu, cuda)| {
            serde_json::json!({
                "name": name, "line": profiler::Line::of_undeclared(name), "input_shapes": null, "calls": 12,
                "self_cpu_us": cpu, "cpu_total_us": cpu, "self_cpu_pct": round2(cpu / cpu_sum * 100.0),
                "self_cuda_us": cuda, "cuda_total_us": cuda,
                "self_cuda_pct": cuda.map(|c| round2(c / cuda_sum * 100.0)),
                "flops": null, "bytes": null, "kernel": null, "roofline": null, "reading": null
            })
        })
        .collect();
    let sort_by = if device == "cuda" {
        "self_cuda_time_total"
    } else {
        "self_cpu_time_total"
    };
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "profiler-report/7", "device": device, "sort_by": sort_by, "view": "op", "ceilings": null, "warnings": [],
        "reading_thresholds": profiler::reading::Thresholds::DEFAULT,
        "grouped_by_input_shape": false, "active_steps": 5,
        "environment": {"cpu_model": "test cpu", "threads": 2, "os": "linux", "arch": "x86_64", "device": device,
                        "cargo_features": [], "dtype": "f32", "timing": if device == "cuda" { "cuda-events" } else { "host" },
                        "git_revision": "unknown", "git_dirty": null, "optimized_build": true, "crate_version": "0.1.0",
                        "timestamp_unix_s": 0},
        "totals": {"self_cpu_us": cpu_sum, "self_cuda_us": if device == "cuda" { Some(cuda_sum) } else { None }, "wall_us": cpu_sum * 1.1},
        "rows": rows
    }))
    .unwrap()
}

fn round2(x: f64) -> f64 {
    (x * 100.0).round() / 100.0
}

/// A committed report fixture (tests/fixtures/reports, written by make-fixtures.py there).
pub fn fixture_report(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/reports")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The CPU profile of the perfect learner: a real `gpt2 profile --model synthetic --mlp stock`
/// run on the 2-core AVX-512 development machine (B=1, T=8), with its ceilings and every row's
/// roofline columns: matmul 60.9%, lm_head 20.0% (at 90% of its memory roofline), gelu 13.4%
/// (0.57 GB/s, 2% of the read bandwidth).
pub fn cpu_profile() -> String {
    fixture_report("cpu-b1-t8-stock-mlp.json")
}

/// Exercise 8's profile: a real run of its solution on the development machine, on
/// `synthetic-smollm2-135m` (SmolLM2-135M's shapes, the Llama engine, f32, B=1 T=8).
pub fn llama_profile() -> String {
    fixture_report("ex8-cpu-smollm2.json")
}

/// Exercise 8's plan on [`llama_profile`]: the layers' matmuls, memory-bound at 64% of the read
/// bandwidth, with their weights halved.
pub const PERFECT_PLAN_EX8: &str = "[plan]\nattack = \"matmul\"\nexpected_cut_pct = 10\nmechanism = \"memory-traffic\"\nwhy = \"matmul is 70% of the step and reads its weights at 64% of the measured bandwidth: bf16 weights halve the bytes.\"\n";

/// Exercise 8's results/memory.json (tests/fixtures/memory, beside the reports: it is not one):
/// a real `--profile-memory` run of solution 8 on synthetic-smollm2-135m (f32 weights and KV
/// cache, 4 sequences × 256 positions).
pub fn llama_memory() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/memory/ex8-smollm2.json");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Exercise 8's `[memory]` on [`llama_memory`]: the course's arithmetic on its config (134,515,008
/// parameters × 4 bytes; 2 × 30 layers × 3 KV heads × 64 × 4 bytes × 256 × 4), and a peak
/// with about 40 MB of activations.
pub const PERFECT_MEMORY_EX8: &str = "[memory]\nbatch = 4\ncontext = 256\nweights_bytes = 538060032\nkv_cache_bytes = 47185920\npeak_bytes = 625000000\n";

/// Exercise 8's answers on [`llama_profile`], as a learner copies the table (two decimals), and
/// its memory prediction.
pub fn perfect_ex8() -> String {
    let top: Vec<(String, f64)> = fixture_top3(&llama_profile())
        .into_iter()
        .map(|(n, s)| (n, (s * 100.0).round() / 100.0))
        .collect();
    let top: Vec<(&str, f64)> = top.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    perfect_ex3(&top, PERFECT_PLAN_EX8) + PERFECT_MEMORY_EX8
}

/// Exercise 5's two profiles from one real run of its solution on the same machine: the stock
/// MLP, and the learner's `fused_bias_gelu` plugged in.
pub fn cpu_unfused_profile() -> String {
    fixture_report("ex5-cpu-unfused.json")
}

/// Exercise 5's stage 1 (the natural fusion: one pass, the same tanh) from the same run.
pub fn cpu_stage1_profile() -> String {
    fixture_report("ex5-cpu-stage1.json")
}

/// Exercise 5's stage 2 (the kernel fix) from the same run.
pub fn cpu_stage2_profile() -> String {
    fixture_report("ex5-cpu-stage2.json")
}

/// An illustrative CUDA run (H200-sized, B=8, T=128, hand-written: see make-fixtures.py there):
/// ranked by self CUDA time; the element-wise ops sit near the memory roofline (gelu at 69.7%).
pub fn cuda_profile() -> String {
    fixture_report("cuda-b8-t128-stock-mlp.json")
}

/// A row of a report fixture: (share in the device's column, the roofline object).
pub fn fixture_row(report: &str, name: &str) -> (f64, serde_json::Value) {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    let column = if v["device"] == "cuda" {
        "self_cuda_pct"
    } else {
        "self_cpu_pct"
    };
    let row = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no {name} row"));
    (row[column].as_f64().unwrap(), row["roofline"].clone())
}

/// The top three ops of a report fixture, with their shares.
pub fn fixture_top3(report: &str) -> Vec<(String, f64)> {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    let column = if v["device"] == "cuda" {
        "self_cuda_pct"
    } else {
        "self_cpu_pct"
    };
    let mut rows: Vec<(String, f64)> = v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] != "ProfilerStep*")
        .map(|r| {
            (
                r["name"].as_str().unwrap().to_string(),
                r[column].as_f64().unwrap(),
            )
        })
        .collect();
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    rows.truncate(3);
    rows
}

pub fn bench_json(verdict: &str, ratio: f64, ci: (f64, f64), p90_ttft_ms: f64) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "bench-report/4",
        "environment": {"os": "linux"},
        "runs": [{"label": "a", "config": {}, "metrics": {"completed": 64, "ttft_ms": {"p50": p90_ttft_ms * 0.7, "p90": p90_ttft_ms, "p99": p90_ttft_ms * 1.2}}}],
        "comparison": {"metric": "e2el_ms", "ratio": ratio, "ci_low": ci.0, "ci_high": ci.1, "min_effect": 0.05,
                       "better": "lower", "verdict": verdict, "a": 100.0, "b": 100.0 * ratio}
    }))
    .unwrap()
}

pub const PERFECT_EX1: &str = "[quiz]\nntq-1 = \"Benchmark\"\nntq-2 = \"Profile\"\nntq-3 = \"Benchmark\"\nntq-4 = \"Profile\"\nntq-5 = \"Benchmark\"\nntq-6 = \"Profile\"\nroute-why = \"A latency percentile under load is a whole-system figure, so a benchmark; a gap in our own engine whose fix is code needs a profile of where its time goes.\"\n";
/// Exercise 2's answers on [`ex2_bench`]'s comparisons.
pub const PERFECT_EX2: &str = "[below]\nthroughput = \"arrivals\"\nttft_p90 = \"inconclusive\"\ntpot_p90 = \"slower\"\n\
    [above]\nthroughput_ratio = 1.31\nthroughput = \"faster\"\nttft_p90 = \"inconclusive\"\ntpot_p90 = \"slower\"\n\
    [decision]\nmeaning = \"tpot\"\nanswer = \"slower\"\n";

/// One of exercise 2's comparisons of batch 16 against batch 8: (scenario, metric, better,
/// verdict, ratio, interval); the verdict "arrivals" marks a throughput the arrivals set.
pub type Ex2Comparison<'a> = (&'a str, &'a str, &'a str, &'a str, f64, (f64, f64));

/// Exercise 2's bench.json: batch 8 and batch 16 below and above saturation, and the given
/// comparisons of 16 against 8.
pub fn ex2_bench_json(comparisons: &[Ex2Comparison<'_>]) -> String {
    let run = |label: &str, p90: f64| serde_json::json!({"label": label, "config": {}, "metrics": {"completed": 72, "ttft_ms": {"p50": p90 * 0.6, "p90": p90, "p99": p90 * 1.1}}});
    let comparisons: Vec<serde_json::Value> = comparisons
        .iter()
        .map(|(scenario, metric, better, verdict, ratio, (low, high))| {
            let arrivals = *verdict == "arrivals";
            serde_json::json!({"scenario": scenario, "metric": metric, "ratio": ratio, "ci_low": low, "ci_high": high, "min_effect": 0.05,
                               "better": better, "verdict": if arrivals { "inconclusive" } else { verdict }, "set_by_arrivals": arrivals,
                               "a": 100.0, "b": 100.0 * ratio})
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "bench-report/4",
        "environment": {"os": "linux"},
        "runs": [run("batch-8 below", 300.0), run("batch-8 above", 900.0), run("batch-16 below", 280.0), run("batch-16 above", 700.0)],
        "comparisons": comparisons,
    }))
    .unwrap()
}

/// [`ex2_bench_json`] as a run could write it: below saturation the arrivals set the
/// throughput, the P90 TTFT interval straddles the band and the P90 TPOT is clearly worse;
/// above it the throughput is clearly up, the P90 TTFT open above, the P90 TPOT clearly worse.
pub fn ex2_bench() -> String {
    ex2_bench_json(&[
        (
            "below",
            "output_tokens_per_s",
            "higher",
            "arrivals",
            1.01,
            (0.93, 1.09),
        ),
        (
            "below",
            "ttft_ms.p90",
            "lower",
            "inconclusive",
            0.95,
            (0.71, 1.24),
        ),
        (
            "below",
            "tpot_ms.p90",
            "lower",
            "slower",
            1.48,
            (1.33, 1.66),
        ),
        (
            "above",
            "output_tokens_per_s",
            "higher",
            "faster",
            1.31,
            (1.12, 1.52),
        ),
        (
            "above",
            "ttft_ms.p90",
            "lower",
            "inconclusive",
            0.80,
            (0.41, 1.9),
        ),
        (
            "above",
            "tpot_ms.p90",
            "lower",
            "slower",
            1.62,
            (1.40, 1.88),
        ),
    ])
}
/// The prediction `course run 3` records, made before the report was written (see
/// [`REPORT_WRITTEN`]).
pub const PREDICTION: &str = "[prediction]\nop = \"matmul\"\nshare_pct = 50\nmade_at = \"Mon, 01 Jan 2024 09:03:12 GMT\"\nreport_existed = false\n";

/// When the fixtures' exercise-3/results/report.json was written: a minute after [`PREDICTION`].
pub fn report_written() -> std::time::SystemTime {
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_704_099_792 + 60)
}

/// The plan the course's rule accepts on [`cpu_profile`]: lm_head at 90% of its memory
/// roofline, so halving its bytes is memory traffic, and 10% is within its 20% share.
pub const PERFECT_PLAN_CPU: &str = "[plan]\nattack = \"lm_head\"\nexpected_cut_pct = 10\nmechanism = \"memory-traffic\"\nwhy = \"lm_head takes a fifth of the step and streams its 154 MB weight matrix at 90% of the read bandwidth, so storing it in bf16 halves the bytes it reads.\"\n";

pub fn perfect_ex3(top: &[(&str, f64)], plan: &str) -> String {
    let mut out = PREDICTION.to_string();
    for (name, share) in top {
        out.push_str(&format!(
            "[[top_ops]]\nname = \"{name}\"\nshare_pct = {share}\n"
        ));
    }
    out.push_str(plan);
    out
}

/// Exercise 3's answers on [`cpu_profile`]: its top three as the table prints them (two
/// decimals), the prediction and the plan.
pub fn perfect_ex3_cpu() -> String {
    let top: Vec<(String, f64)> = fixture_top3(&cpu_profile())
        .into_iter()
        .map(|(n, s)| (n, (s * 100.0).round() / 100.0))
        .collect();
    let top: Vec<(&str, f64)> = top.iter().map(|(n, s)| (n.as_str(), *s)).collect();
    perfect_ex3(&top, PERFECT_PLAN_CPU)
}

/// The learner id of the perfect submission ([`perfect_files`]).
pub const LEARNER: &str = "alice";

/// `learner.toml` for an id, as `course` writes it.
pub fn learner_toml(id: &str) -> String {
    format!("id = \"{id}\"\n")
}

/// `[illustrative]` answers for a learner's own step, to two decimals as a learner copies them.
pub fn illustrative_answers(id: &str) -> String {
    let step = course_model::illustrative_step::IllustrativeStep::for_learner(id);
    let mut out = "[illustrative]\n".to_string();
    for (field, value) in step.answers() {
        out.push_str(&format!("{field} = {value:.2}\n"));
    }
    out
}

/// Exercise 4 on [`cpu_profile`] for [`LEARNER`]: see [`perfect_ex4_for`].
pub fn perfect_ex4() -> String {
    perfect_ex4_for(LEARNER)
}

/// Exercise 4 on [`cpu_profile`]: the learner's own illustrative step; lm_head, removing half
/// of it; the matmuls line (matmul and lm_head) is the largest; [`bytes_answers`] and
/// [`quantized_answers`].
pub fn perfect_ex4_for(id: &str) -> String {
    let report = cpu_profile();
    let lm_head = fixture_row(&report, "lm_head").0;
    let matmuls = fixture_row(&report, "matmul").0 + lm_head;
    format!(
        "{}[own]\nop = \"lm_head\"\nop_share_pct = {lm_head:.2}\n\
         removed_fraction = 0.5\nsaving_pct = {:.2}\n[lines]\nlargest = \"matmuls\"\nlargest_ceiling_pct = {matmuls:.2}\none_line_gives_target = \"yes\"\n{}",
        illustrative_answers(id),
        lm_head / 2.0,
        bytes_answers(&report) + &quantized_answers(&report)
    )
}

/// Exercise 4's `[bytes]` on a report: each row at the same % of its roofline with twice its
/// intensity takes old roof / new roof of its time, the roofs min(peak, bandwidth × intensity).
/// On the CPU fixture both rows stay below its ridge (3.95 and 3.96 FLOP/byte doubled, against
/// 352.2 / 27.8 = 12.7) and halve; on `ex4-cpu-f32.json` both cross it (doubled 7.9 against 6.0).
pub fn bytes_answers(report: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    let (bw, peak) = (
        v["ceilings"]["mem_read_gbps"].as_f64().unwrap(),
        v["ceilings"]["peak_gflops"].as_f64().unwrap(),
    );
    let cut = |name| {
        let (share, roofline) = fixture_row(report, name);
        let intensity = roofline["intensity"].as_f64().unwrap();
        share * (1.0 - f64::min(peak, bw * intensity) / f64::min(peak, 2.0 * bw * intensity))
    };
    let (matmul, lm_head) = (cut("matmul"), cut("lm_head"));
    bytes_section(matmul, lm_head, matmul + lm_head)
}

/// Exercise 4's `[quantized]` on a report: q8_0 stores 34 bytes per 32 weights, 8.5 bits a
/// weight, so each row's intensity grows by 32 / 8.5 and, at the same % of its roofline, it takes
/// old roof / new roof of its time (on the CPU fixture both rows pass the ridge, 14.9 FLOP/byte
/// against 12.7, and the peak bounds them).
pub fn quantized_answers(report: &str) -> String {
    let v: serde_json::Value = serde_json::from_str(report).unwrap();
    let (bw, peak) = (
        v["ceilings"]["mem_read_gbps"].as_f64().unwrap(),
        v["ceilings"]["peak_gflops"].as_f64().unwrap(),
    );
    let factor = 32.0 / (34.0 * 8.0 / 32.0);
    let cut = |name| {
        let (share, roofline) = fixture_row(report, name);
        let intensity = roofline["intensity"].as_f64().unwrap();
        share * (1.0 - f64::min(peak, bw * intensity) / f64::min(peak, factor * bw * intensity))
    };
    let (matmul, lm_head) = (cut("matmul"), cut("lm_head"));
    quantized_section(8.5, matmul, lm_head, matmul + lm_head)
}

/// A `[quantized]` section, to two decimals as a learner copies them.
pub fn quantized_section(bits: f64, matmul: f64, lm_head: f64, total: f64) -> String {
    format!("[quantized]\nbits_per_weight = {bits}\nmatmul_cut_pct = {matmul:.2}\nlm_head_cut_pct = {lm_head:.2}\npredicted_cut_pct = {total:.2}\n")
}

/// A `[bytes]` section, to two decimals as a learner copies them.
pub fn bytes_section(matmul: f64, lm_head: f64, total: f64) -> String {
    format!("[bytes]\nmatmul_cut_pct = {matmul:.2}\nlm_head_cut_pct = {lm_head:.2}\npredicted_cut_pct = {total:.2}\n")
}

/// Exercise 5's prediction, made a minute before its first profile was written
/// ([`report_written`]).
pub const PREDICTION_EX5: &str = "[prediction]\nrow_time = \"shorter\"\npct_of_roofline = \"higher\"\nmade_at = \"Mon, 01 Jan 2024 09:03:12 GMT\"\nreport_existed = false\n";

/// Exercise 5's answers after `prediction` on its three profiles: what moved at each stage,
/// the unfused row's reading (a slow kernel on this CPU), what a fusion removes and what the
/// kernel fix addressed.
pub fn answers_ex5(prediction: &str, stage2: bool) -> String {
    let (_, gelu) = fixture_row(&cpu_unfused_profile(), "gelu");
    let (_, fused) = fixture_row(&cpu_stage1_profile(), "fused_bias_gelu");
    let (_, fast) = fixture_row(&cpu_stage2_profile(), "fused_bias_gelu_fast");
    let f = |r: &serde_json::Value| r["pct_of_roofline"].as_f64().unwrap();
    let mut out = format!(
        "{prediction}[fused_check]\nmax_abs_error = {}\n[stage1]\npct_of_roofline_before = {:.2}\npct_of_roofline_after = {:.2}\n\
         reading = \"slow kernel\"\nmechanism = \"memory-traffic\"\n",
        if stage2 { "4.8e-7" } else { "2.4e-7" },
        f(&gelu),
        f(&fused)
    );
    if stage2 {
        out.push_str(&format!(
            "[stage2]\npct_of_roofline_after = {:.2}\nmechanism = \"slow-kernel\"\n",
            f(&fast)
        ));
    }
    out.push_str("[benchmark]\nverdict = \"faster\"\n");
    out
}

pub fn perfect_ex5() -> String {
    answers_ex5(PREDICTION_EX5, true)
}

/// Exercise 5's results/fused_check.json, with both stages or stage 1 only.
pub fn fused_check_json(stage2: bool) -> String {
    let mut stages = vec![serde_json::json!({"op": "fused_bias_gelu", "max_abs_error": 2.4e-7})];
    if stage2 {
        stages.push(serde_json::json!({"op": "fused_bias_gelu_fast", "max_abs_error": 4.8e-7}));
    }
    let worst = if stage2 { 4.8e-7 } else { 2.4e-7 };
    serde_json::json!({"schema": "fused-check/2", "max_abs_error": worst, "limit": 1e-5, "shape": [64, 3072], "device": "cpu", "stages": stages})
        .to_string()
}

pub const PERFECT_EX6: &str = "[quiz]\ncy-double-traffic = \"Benchmark at twice the load\"\ncy-slower-than-vllm = \"Profile your serving code\"\ncy-nsight-ttft = \"No: change the configuration and benchmark\"\narticle-double-traffic = \"Benchmark at twice the load: a whole-system figure.\"\narticle-slower-than-vllm = \"Profile your own code to see where its time goes.\"\narticle-nsight-ttft = \"No: tune the configuration and benchmark each change.\"\narticle-activations-first = \"The matmuls are already tuned, while the activations do little math for their time: excess memory reads that a fused kernel removes.\"\n";
pub const PERFECT_EX7: &str = "target_p90_ttft_ms = 500\nknee_rps = 5.2\np90_ttft_ms_at_rate = 180\ntarget_holds_at_rate = \"yes\"\np90_ttft_ms_at_double = 900\ntarget_holds_at_double = \"no\"\n";

/// One open-loop load run at `rate` req/s, as exercise 7 writes it: its P90 TTFT and that
/// P90's 95% interval.
pub fn ex7_run_json(rate: f64, p90_ttft_ms: f64, ci: (f64, f64)) -> String {
    let config = serde_json::json!({"traffic": {"open_loop": {"rate": rate, "seed": 7}}});
    ex7_run_json_with(config, p90_ttft_ms * 0.7, p90_ttft_ms, ci)
}

/// The lone run (one request at a time), with its median TTFT given: the target is 4 × it.
pub fn ex7_run_json_with_median(median_ttft_ms: f64, p90_ttft_ms: f64, ci: (f64, f64)) -> String {
    let config = serde_json::json!({"traffic": {"closed_loop": {"concurrency": 1}}});
    ex7_run_json_with(config, median_ttft_ms, p90_ttft_ms, ci)
}

fn ex7_run_json_with(
    config: serde_json::Value,
    median_ttft_ms: f64,
    p90_ttft_ms: f64,
    ci: (f64, f64),
) -> String {
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "bench-report/4",
        "environment": {"os": "linux"},
        "runs": [{"label": "rate", "config": config, "metrics": {"completed": 60,
                  "ttft_ms": {"median": median_ttft_ms, "p90": p90_ttft_ms, "p99": p90_ttft_ms * 1.2,
                              "ci95_p90": {"low": ci.0, "high": if ci.1.is_finite() { serde_json::json!(ci.1) } else { serde_json::Value::Null },
                                           "method": "replicates", "runs": 3, "effective_n": 40.0}}}}]
    }))
    .unwrap()
}

/// Exercise 7's calibration sweep against P90 TTFT ≤ `bound_ms`: `knee` is bench's `Knee`
/// as JSON (`{"at": 5.2}`, `{"above": 32}`, `{"below": 1}`); the rates tried are 1, 2, 4, …
/// up to `highest_held`, which held, and twice it, which failed (none failed for a knee above).
pub fn ex7_sweep_json(
    bound_ms: f64,
    highest_held: f64,
    knee: serde_json::Value,
    ci: Option<(f64, f64)>,
) -> String {
    let mut points = Vec::new();
    let mut rate = 1.0;
    while rate <= highest_held {
        points.push(serde_json::json!({"rate": rate, "values_ms": [bound_ms * 0.5], "margin": 0.5, "holds": true}));
        rate *= 2.0;
    }
    if knee.get("above").is_none() {
        points.push(serde_json::json!({"rate": rate, "values_ms": [bound_ms * 2.0], "margin": 2.0, "holds": false}));
    }
    serde_json::to_string_pretty(&serde_json::json!({
        "schema": "bench-report/4",
        "environment": {"os": "linux"},
        "runs": [],
        "sweep": {"bounds": [{"metric": "ttft_ms", "percentile": 90.0, "bound_ms": bound_ms}],
                  "points": points, "knee": knee, "ci95_knee": ci.map(|(lo, hi)| [lo, hi])}
    }))
    .unwrap()
}

/// Every file of a perfect submission by [`LEARNER`], relative to the exercises folder.
pub fn perfect_files() -> BTreeMap<String, String> {
    perfect_files_for(LEARNER)
}

/// Every file of a perfect submission by learner `id` (its learner.toml and its own variants).
pub fn perfect_files_for(id: &str) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let mut put = |k: &str, v: String| {
        f.insert(k.to_string(), v);
    };
    put(course_model::learner_id::LEARNER_FILE, learner_toml(id));
    put("exercise-1/answers.toml", PERFECT_EX1.into());
    put("exercise-2/answers.toml", PERFECT_EX2.into());
    put("exercise-2/results/bench.json", ex2_bench());
    put("exercise-3/answers.toml", perfect_ex3_cpu());
    put("exercise-3/results/report.json", cpu_profile());
    put("exercise-8/answers.toml", perfect_ex8());
    put("exercise-8/results/report.json", llama_profile());
    put("exercise-8/results/memory.json", llama_memory());
    put("exercise-4/answers.toml", perfect_ex4_for(id));
    put(
        "exercise-4/results/budget.json",
        budget_json(&cpu_profile()),
    );
    put("exercise-5/answers.toml", perfect_ex5());
    put(
        "exercise-5/results/fused_check.json",
        fused_check_json(true),
    );
    put(
        "exercise-5/results/unfused/report.json",
        cpu_unfused_profile(),
    );
    put(
        "exercise-5/results/stage1/report.json",
        cpu_stage1_profile(),
    );
    put(
        "exercise-5/results/stage2/report.json",
        cpu_stage2_profile(),
    );
    put(
        "exercise-5/results/bench.json",
        bench_json("faster", 0.9, (0.86, 0.93), 40.0),
    );
    put("exercise-6/answers.toml", PERFECT_EX6.into());
    put("exercise-7/answers.toml", PERFECT_EX7.into());
    put(
        "exercise-7/results/lone/bench.json",
        ex7_run_json_with_median(125.0, 160.0, (130.0, 190.0)),
    );
    put(
        "exercise-7/results/sweep/bench.json",
        ex7_sweep_json(500.0, 4.0, serde_json::json!({"at": 5.2}), Some((4.6, 5.9))),
    );
    put(
        "exercise-7/results/rate-1x/bench.json",
        ex7_run_json(4.0, 180.0, (150.0, 230.0)),
    );
    put(
        "exercise-7/results/rate-2x/bench.json",
        ex7_run_json(8.0, 900.0, (700.0, 1200.0)),
    );
    f
}

/// The learner's submission as a grader reads it, with exercise 3's report written at
/// [`report_written`] (the predictions of exercises 3 and 5 are graded against that time).
pub fn submission(files: BTreeMap<String, String>) -> grader::Submission {
    let mut s = grader::Submission::from_texts("exercises", files);
    s.set_modified("exercise-3/results/report.json", report_written());
    s.set_modified("exercise-8/results/report.json", report_written());
    s.set_modified("exercise-5/results/unfused/report.json", report_written());
    s
}

/// Exercise 4's results/budget.json for a report: its rows grouped by the budget line each
/// carries, as `bench::budget` groups them (the grader checks them against the report).
pub fn budget_json(report: &str) -> String {
    let report: serde_json::Value = serde_json::from_str(report).unwrap();
    let cuda = report["device"] == "cuda";
    let column = if cuda {
        "self_cuda_pct"
    } else {
        "self_cpu_pct"
    };
    let mut lines: BTreeMap<&str, (f64, Vec<String>)> = BTreeMap::new();
    for row in report["rows"].as_array().unwrap() {
        let name = row["name"].as_str().unwrap();
        let line: profiler::Line = serde_json::from_value(row["line"].clone()).unwrap();
        let line = line.name();
        let entry = lines.entry(line).or_default();
        entry.0 += row[column].as_f64().unwrap();
        entry.1.push(name.to_string());
    }
    let lines: Vec<serde_json::Value> = bench::budget::Line::ALL
        .iter()
        .map(|line| {
            let l = line.name();
            let (share, ops) = lines.get(l).cloned().unwrap_or_default();
            serde_json::json!({"line": l, "share_pct": share, "ops": ops})
        })
        .collect();
    serde_json::to_string_pretty(&serde_json::json!({"schema": "budget-lines/1", "profile": "../exercise-3/results/report.json", "lines": lines})).unwrap()
}

/// Write files under `dir/exercises/`.
pub fn write_tree(dir: &Path, files: &BTreeMap<String, String>) {
    for (rel, text) in files {
        let path = dir.join("exercises").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A zip at `path` (its folder made) of `files` under `prefix`, then whatever `extra` adds.
pub fn zip_files(
    path: &Path,
    files: &BTreeMap<String, String>,
    prefix: &str,
    extra: impl FnOnce(&mut zip::ZipWriter<std::fs::File>),
) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (rel, text) in files {
        zip.start_file(
            format!("{prefix}{rel}"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        zip.write_all(text.as_bytes()).unwrap();
    }
    extra(&mut zip);
    zip.finish().unwrap();
}

/// A tar.gz at `path` (its folder made) of `files` under `prefix`, then whatever `extra` adds.
pub fn tar_gz_files(
    path: &Path,
    files: &BTreeMap<String, String>,
    prefix: &str,
    extra: impl FnOnce(&mut tar::Builder<GzEncoder<std::fs::File>>),
) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let gz = GzEncoder::new(
        std::fs::File::create(path).unwrap(),
        flate2::Compression::default(),
    );
    let mut tar = tar::Builder::new(gz);
    for (rel, text) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(text.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        tar.append_data(&mut header, format!("{prefix}{rel}"), text.as_bytes())
            .unwrap();
    }
    extra(&mut tar);
    tar.into_inner().unwrap().finish().unwrap();
}
