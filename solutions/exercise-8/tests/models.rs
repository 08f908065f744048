//! Exercise 8's program on every first-tier variant, and on what it must refuse: each tiny
//! seeded checkpoint of crates/llama/tests/fixtures profiles into a table and a report, and so
//! does a GGUF file written by llama.cpp's converter, its quantized matmuls in their own rows;
//! a model too large for the machine is refused from its config.json alone; a model type it
//! does not run and a GGUF of another architecture are refused with what was found; a checkpoint on a stand-in for the
//! Hugging Face Hub (hf-hub honours HF_ENDPOINT) is downloaded into the HF cache, then read from
//! there offline, and a truncated download is an error that names the file and the next step.
//! The reference solution passes `course check 8`'s grading on first-tier models (a
//! safetensors checkpoint, a GGUF file of llama.cpp's converter) and on second-tier ones (a
//! Phi-3 checkpoint, a GGUF file written by candle in a type the engine does not read).

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use formats::memory::{Measured, MemoryRecord};

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

const BIN: &str = env!("CARGO_BIN_EXE_solution-8");
const VARIANTS: [&str; 6] = ["llama", "llama3", "smollm2", "mistral", "qwen2", "qwen3"];

fn fixture(variant: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join(format!("../../crates/llama/tests/fixtures/tiny-{variant}"))
}

/// A folder holding exercise 8's answers.toml as a learner starts with it.
fn folder() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    common::copy_answers(dir.path());
    dir
}

fn run(model: &str, dir: &Path, env: &[(&str, &Path)], offline: bool) -> Output {
    let mut c = common::solution(model, dir);
    c.env_remove("HF_HUB_OFFLINE");
    for (k, v) in env {
        c.env(k, v);
    }
    if offline {
        c.env("HF_HUB_OFFLINE", "1");
    }
    c.output().unwrap()
}

use common::text;

#[test]
fn every_first_tier_variant_profiles_into_a_table_and_a_report() {
    let expected_type = ["llama", "llama", "llama", "mistral", "qwen2", "qwen3"];
    for (variant, model_type) in VARIANTS.iter().zip(expected_type) {
        let dir = folder();
        let o = run(fixture(variant).to_str().unwrap(), dir.path(), &[], true);
        let out = text(&o);
        assert!(o.status.success(), "{variant}: {out}");
        assert!(
            out.contains(&format!(": {model_type} (")),
            "{variant}: the model line names its type: {out}"
        );
        for row in [
            "matmul",
            "lm_head",
            "rms_norm",
            "rope",
            "silu_mul",
            "Roofline %",
        ] {
            assert!(out.contains(row), "{variant}: no {row} in the table: {out}");
        }
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("results/report.json")).unwrap(),
        )
        .unwrap();
        let rows = report["rows"].as_array().unwrap();
        assert!(
            rows.iter()
                .any(|r| r["name"] == "rope" && r["line"] == "attention"),
            "{variant}: {report}"
        );
        let answers: toml::Table = std::fs::read_to_string(dir.path().join("answers.toml"))
            .unwrap()
            .parse()
            .unwrap();
        assert!(
            answers["plan"]["attack"]
                .as_str()
                .is_some_and(|a| !a.is_empty()),
            "{variant}: the solution filled in its plan"
        );
    }
}

/// Llama 3.1 70B's shapes: 70.6 billion parameters, 282 GB in f32.
const SEVENTY_B: &str = r#"{"model_type":"llama","architectures":["LlamaForCausalLM"],"vocab_size":128256,"hidden_size":8192,
    "intermediate_size":28672,"num_hidden_layers":80,"num_attention_heads":64,"num_key_value_heads":8,
    "max_position_embeddings":131072,"rms_norm_eps":1e-5,"rope_theta":500000.0,"hidden_act":"silu","tie_word_embeddings":false}"#;

#[test]
fn a_model_larger_than_the_free_memory_is_refused_before_any_weight_is_read() {
    let ckpt = tempfile::tempdir().unwrap();
    std::fs::write(ckpt.path().join("config.json"), SEVENTY_B).unwrap();
    let o = run(ckpt.path().to_str().unwrap(), folder().path(), &[], true);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("70.55 billion parameters: 262.8 GiB in f32")
            && out.contains("free; pick a smaller model"),
        "{out}"
    );
    assert!(
        !out.contains("model.safetensors"),
        "refused before it looked for the weights: {out}"
    );
}

#[test]
fn another_architecture_and_a_gguf_file_are_refused_with_what_was_found() {
    let ckpt = tempfile::tempdir().unwrap();
    std::fs::write(
        ckpt.path().join("config.json"),
        SEVENTY_B.replace("\"model_type\":\"llama\"", "\"model_type\":\"mamba\""),
    )
    .unwrap();
    let o = run(ckpt.path().to_str().unwrap(), folder().path(), &[], true);
    let out = text(&o);
    assert!(!o.status.success() && out.contains("exercise 8 runs the Llama family (safetensors or GGUF) on the course's engine, and phi3 and gemma checkpoints"), "{out}");
    assert!(
        out.contains(
            "model_type \"mamba\" is not one this program runs through candle-transformers"
        ) && out.contains("config.json"),
        "names what it found: {out}"
    );
    let gguf = ckpt.path().join("tiny-gemma3.gguf");
    let gemma3 = traced_models::gguf::TinyShape {
        arch: "gemma3",
        ..traced_models::gguf::TINY_LLAMA
    };
    traced_models::gguf::write_tiny(&gguf, &gemma3, candle_core::quantized::GgmlDType::Q8_0)
        .unwrap();
    let o = run(gguf.to_str().unwrap(), folder().path(), &[], true);
    let out = text(&o);
    assert!(!o.status.success() && out.contains("general.architecture \"gemma3\" is not one this program runs from a GGUF file (llama, qwen2)"), "{out}");
    let o = run("model-Q8_0.gguf", folder().path(), &[], true);
    assert!(
        !o.status.success() && text(&o).contains("--model model-Q8_0.gguf: no such file"),
        "{}",
        text(&o)
    );
}

/// The stand-in's files: repository id → file name → bytes.
type Files = HashMap<String, HashMap<String, Vec<u8>>>;

/// What hf-hub asks of a file: `GET /{owner}/{name}/resolve/{revision}/{file}` with a `Range`;
/// it reads the size from `Content-Range`, the commit from `x-repo-commit` and the `etag`.
async fn resolve(
    State(files): State<std::sync::Arc<Files>>,
    UrlPath((owner, name, _revision, file)): UrlPath<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let Some(bytes) = files
        .get(&format!("{owner}/{name}"))
        .and_then(|repo| repo.get(&file))
    else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let start: usize = headers
        .get(header::RANGE)
        .and_then(|r| r.to_str().ok())
        .and_then(|r| r.strip_prefix("bytes="))
        .and_then(|r| r.split('-').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
        .min(bytes.len());
    let end = match headers.get(header::RANGE).and_then(|r| r.to_str().ok()) {
        Some("bytes=0-0") => 1.min(bytes.len()),
        _ => bytes.len(),
    };
    let etag = format!("\"{:x}-{}\"", bytes.len(), file.len());
    (
        StatusCode::PARTIAL_CONTENT,
        [
            (
                header::CONTENT_RANGE,
                format!("bytes {start}-{}/{}", end.max(1) - 1, bytes.len()),
            ),
            (header::ETAG, etag),
            (
                header::HeaderName::from_static("x-repo-commit"),
                "0123456789abcdef0123456789abcdef01234567".to_string(),
            ),
        ],
        bytes[start..end].to_vec(),
    )
        .into_response()
}

/// Serves `files` on a loopback port until the returned sender is dropped; returns the
/// endpoint's URL.
fn stand_in(files: Files) -> common::StandIn {
    common::serve(
        axum::Router::new()
            .route(
                "/{owner}/{name}/resolve/{revision}/{file}",
                axum::routing::get(resolve),
            )
            .with_state(std::sync::Arc::new(files)),
    )
}

fn repo_files(dir: &Path, truncate_weights: bool) -> HashMap<String, Vec<u8>> {
    let mut files = HashMap::new();
    for name in ["config.json", "model.safetensors"] {
        let mut bytes = std::fs::read(dir.join(name)).unwrap();
        if truncate_weights && name == "model.safetensors" {
            bytes.truncate(bytes.len() / 2);
        }
        files.insert(name.to_string(), bytes);
    }
    files
}

#[test]
fn a_hub_checkpoint_is_downloaded_once_then_read_offline_and_a_truncated_one_is_an_error() {
    let hf = tempfile::tempdir().unwrap();
    let files: Files = [
        (
            "course/tiny-qwen2".to_string(),
            repo_files(&fixture("qwen2"), false),
        ),
        (
            "course/broken".to_string(),
            repo_files(&fixture("llama"), true),
        ),
    ]
    .into();
    let (endpoint, stop, server) = stand_in(files);
    let endpoint = PathBuf::from(endpoint);
    let env = [("HF_HOME", hf.path()), ("HF_ENDPOINT", endpoint.as_path())];

    let o = run("course/tiny-qwen2", folder().path(), &env, false);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("course/tiny-qwen2: qwen2 ("),
        "{}",
        text(&o)
    );
    let cached = hf.path().join("hub/models--course--tiny-qwen2/snapshots/0123456789abcdef0123456789abcdef01234567/model.safetensors");
    assert!(cached.exists(), "the weights are in the HF cache");

    let o = run("course/broken", folder().path(), &env, false);
    let out = text(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("models--course--broken")
            && out.contains("model.safetensors")
            && out.contains("delete it and download it again"),
        "{out}"
    );

    // The stand-in is gone: the cached checkpoint is read offline, the uncached one is refused.
    drop(stop);
    server.join().unwrap();
    let o = run("course/tiny-qwen2", folder().path(), &env, true);
    assert!(o.status.success(), "offline, from the cache: {}", text(&o));
    let o = run("course/never-fetched", folder().path(), &env, true);
    assert!(
        !o.status.success()
            && text(&o).contains("HF_HUB_OFFLINE is set")
            && text(&o).contains("--model FOLDER"),
        "{}",
        text(&o)
    );
}

/// Exercise 8's grade of the answers and report the solution left in `dir`, by the course's
/// manifest and default key (what `course check 8` runs after its build).
fn grade(dir: &Path) -> grader::report::ExerciseReport {
    let grader =
        grader::Grader::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), None).unwrap();
    // results/memory.json is there after a first-tier run only.
    let files = ["answers.toml", "results/report.json", "results/memory.json"]
        .into_iter()
        .filter_map(|f| {
            let text = std::fs::read_to_string(dir.join(f)).ok()?;
            Some((format!("exercise-8/{f}"), text))
        });
    grader.grade_exercise(&grader::Submission::from_texts("exercises", files), 8)
}

#[test]
fn profile_memory_measures_a_generation_beside_the_memory_prediction() {
    let dir = folder();
    let o = Command::new(BIN)
        .args(["--model", fixture("smollm2").to_str().unwrap()])
        .args([
            "--device", "cpu", "--warmup", "0", "--active", "1", "--seq", "4",
        ])
        .args(["--profile-memory", "--memory-batch", "3", "--exercise-dir"])
        .arg(dir.path())
        .env("HF_HUB_OFFLINE", "1")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    // The table has the memory columns; the fixture's 64 positions bound the default context.
    assert!(
        out.contains("Self CPU Mem") && out.contains("Peak live memory"),
        "{out}"
    );
    assert!(out.contains("so the prediction is at 64"), "{out}");
    // Read as the grader reads it: the one type the program writes with.
    let path = dir.path().join("results/memory.json");
    let record = MemoryRecord::from_json(&std::fs::read_to_string(&path).unwrap(), &path)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((record.batch, record.context), (3, 64));
    let c = &record.config;
    let kv = 2 * c.layers * c.kv_heads * c.head_dim * c.kv_bytes * 64 * 3;
    let Some(Measured::Peak(measured)) = &record.measured else {
        panic!("a CPU run measures the generation: {record:#?}");
    };
    let held = &measured.at_highest_sample;
    // The measured cache is the arithmetic's, with each tensor's bookkeeping on top; the peak
    // holds at least the weights and the cache.
    let kv = kv as i64;
    let kv_measured = held.kv_cache_bytes;
    assert!(
        kv_measured >= kv && kv_measured < kv + kv / 4,
        "{kv_measured} against {kv}"
    );
    assert!(
        measured.peak_bytes >= held.weights_bytes + kv_measured,
        "{record:#?}"
    );
    assert!(dir
        .path()
        .join("results/memory-timeline-generate.svg")
        .is_file());
    let report: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("results/report.json")).unwrap(),
    )
    .unwrap();
    assert!(
        report["memory"]["peak_bytes"].as_i64().unwrap() > 0,
        "report.json's memory"
    );
    // The solution predicted from the config: every [memory] question is right.
    let r = grade(dir.path());
    for id in [
        "memory.weights_bytes",
        "memory.kv_cache_bytes",
        "memory.peak_bytes",
    ] {
        let q = r.questions.iter().find(|q| q.id == id).unwrap();
        assert_eq!(
            q.outcome,
            grader::report::Outcome::Right,
            "{id}: {}",
            q.reason
        );
    }
    assert!(
        r.notes
            .iter()
            .any(|n| n.starts_with("Measured by --profile-memory")),
        "{:?}",
        r.notes
    );
}

#[test]
fn a_gguf_file_runs_on_the_engine_with_its_quantized_matmuls_in_their_rows() {
    let gguf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/llama/tests/fixtures/gguf/tiny-llama-q8_0.gguf");
    let dir = folder();
    let o = run(gguf.to_str().unwrap(), dir.path(), &[], true);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        out.contains(": llama (") && out.contains("q8_0 weights as stored"),
        "the startup line names the stored type, not --dtype's: {out}"
    );
    assert!(
        out.contains("no memory prediction for a GGUF file"),
        "{out}"
    );
    // Every matrix of the file is q8_0: the layers' matmuls and the head are quantized rows,
    // each with the kernel for its type and its work counted, so a roofline.
    let report = common::quantized_report(dir.path(), gguf.to_str().unwrap(), "q8_0");
    let rows = report["rows"].as_array().unwrap();
    assert!(
        rows.iter()
            .any(|r| r["name"] == "rope" && r["line"] == "attention"),
        "the engine's own ops: {report}"
    );
    assert!(
        !dir.path().join("results/memory.json").exists(),
        "no memory record for a GGUF file"
    );
    // The grade leaves [memory] out with a note, and the solution's answers pass.
    let r = grade(dir.path());
    assert!(
        r.questions.iter().all(|q| !q.id.starts_with("memory.")),
        "{:#?}",
        r.questions
    );
    assert!(
        r.notes
            .iter()
            .any(|n| n.contains("asked of a safetensors checkpoint only")),
        "{:?}",
        r.notes
    );
    assert!(r.passed, "{:#?}", r.questions);
}

#[test]
fn the_solution_passes_on_a_first_tier_and_a_second_tier_model() {
    // A GGUF file of llama.cpp's converter runs on the engine; candle's tiny llama in q4_1, a
    // type the engine does not read (nor does its config say the MLP's width), runs through
    // candle-transformers' quantized_llama.
    let mixed = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/llama/tests/fixtures/gguf/tiny-qwen3-mixed.gguf");
    let gguf_dir = tempfile::tempdir().unwrap();
    let q4_1 = gguf_dir.path().join("tiny-llama-q4_1.gguf");
    traced_models::gguf::write_tiny(
        &q4_1,
        &traced_models::gguf::TINY_LLAMA,
        candle_core::quantized::GgmlDType::Q4_1,
    )
    .unwrap();
    let phi3 = gguf_dir.path().join("tiny-phi3");
    traced_models::tiny::write(&phi3, "phi3").unwrap();
    for (model, tier) in [
        (fixture("qwen3"), "engine"),
        (mixed, "engine"),
        (q4_1, "spans"),
        (phi3, "spans"),
    ] {
        let dir = folder();
        let o = run(model.to_str().unwrap(), dir.path(), &[], true);
        assert!(o.status.success(), "{}", text(&o));
        let report: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(dir.path().join("results/report.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(
            report["environment"]["tier"], tier,
            "the report says which tier ran"
        );
        assert!(
            text(&o).contains(&format!("Model: {}; rows: ", model.display())),
            "the table says what ran: {}",
            text(&o)
        );
        if tier == "spans" {
            assert!(
                text(&o).contains("second tier") && text(&o).contains("outside_any_span"),
                "{}",
                text(&o)
            );
            assert!(
                text(&o).contains("rows: the tracing spans the model opens, without work counts"),
                "{}",
                text(&o)
            );
            assert!(
                report["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .all(|r| r["roofline"].is_null()),
                "no roofline without a work count"
            );
        }
        let r = grade(dir.path());
        assert!(r.passed, "{tier}: {:#?}", r.questions);
    }
}
