//! The `gpt2` binary, run as a user runs it.

mod common;

use std::process::{Command, Output};

use common::{fixture_dir, max_abs_diff, reference};

fn gpt2(args: &[&str], env: &[(&str, &std::path::Path)]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_gpt2"));
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the gpt2 binary runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn logits_of_a_save_pretrained_directory_match_transformers() {
    let r = reference();
    let ids: Vec<String> = r.ids.iter().map(u32::to_string).collect();
    let dir = fixture_dir();
    let out = gpt2(&["logits", "--model", dir.to_str().unwrap(), "--device", "cpu", "--ids", &ids.join(","), "--json"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Vec<f32>> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.len(), r.ids.len());
    for (t, (ours, theirs)) in rows.iter().zip(&r.logits).enumerate() {
        assert!(max_abs_diff(ours, theirs) <= 1e-4, "position {t}");
    }
}

#[test]
fn generate_runs_offline_on_the_synthetic_model() {
    let cache = tempfile::tempdir().unwrap();
    let out = gpt2(
        &["generate", "--model", "synthetic-tiny", "--device", "cpu", "--prompt", "Benchmark first", "--max-tokens", "8", "--seed", "3", "--temperature", "0.8"],
        &[("GPT2_COURSE_CACHE", cache.path())],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with("Benchmark first") && stdout.len() > "Benchmark first\n".len(), "{stdout}");
    // The checkpoint was written as a real directory the same loader reads.
    let written: Vec<_> = std::fs::read_dir(cache.path()).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(written.len(), 1, "{written:?}");
    for f in ["config.json", "model.safetensors", "tokenizer.json"] {
        assert!(written[0].join(f).is_file(), "{f} missing in {}", written[0].display());
    }
}

#[test]
fn the_hub_checkpoint_falls_back_to_synthetic_when_offline() {
    let cache = tempfile::tempdir().unwrap();
    let hf = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["generate", "--model", "gpt2", "--device", "cpu", "--prompt", "Hello", "--max-tokens", "2"])
        .env("GPT2_COURSE_CACHE", cache.path())
        .env("HF_HOME", hf.path())
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(stderr.lines().filter(|l| l.contains("synthetic GPT-2 small")).count(), 1, "{stderr}");
    assert!(stderr.contains("HF_HUB_OFFLINE"), "{stderr}");
    assert!(text(&out.stdout).starts_with("Hello"));
}

#[test]
fn an_unknown_device_is_a_usage_error() {
    let out = gpt2(&["logits", "--model", fixture_dir().to_str().unwrap(), "--device", "tpu", "--ids", "1"], &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("unknown device \"tpu\": use cpu, cuda or auto"), "{}", text(&out.stderr));
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_in_a_cpu_build_says_how_to_get_it() {
    let out = gpt2(&["logits", "--model", fixture_dir().to_str().unwrap(), "--device", "cuda", "--ids", "1"], &[]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no CUDA support") && stderr.contains("--features cuda"), "{stderr}");
}

#[cfg(not(feature = "cuda"))]
#[test]
fn auto_in_a_cpu_build_says_why_it_runs_on_the_cpu_in_one_line() {
    let out = gpt2(&["logits", "--model", fixture_dir().to_str().unwrap(), "--device", "auto", "--ids", "1"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("cuda: ")).collect();
    assert_eq!(notes, ["cuda: this build has no CUDA support (built without --features cuda); using the CPU"], "{stderr}");
}

#[test]
fn generate_without_a_tokenizer_explains_why() {
    let out = gpt2(&["generate", "--model", fixture_dir().to_str().unwrap(), "--device", "cpu", "--prompt", "hi"], &[]);
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("has no tokenizer.json"), "{}", text(&out.stderr));
}

#[test]
fn every_subcommand_has_help() {
    for sub in ["generate", "logits", "bench"] {
        let out = gpt2(&[sub, "--help"], &[]);
        assert!(out.status.success(), "{sub}");
        assert!(text(&out.stdout).contains("--model"), "{sub}: {}", text(&out.stdout));
    }
}
