//! Broken checkpoints and bad input get clear errors that name the file and what to do.

mod common;

use std::path::Path;

use candle_core::{DType, Device, Tensor};
use common::{default_path, fixture_dir, tiny_model};
use gpt2::weights::{self, Checkpoint};
use gpt2::CausalLm;
use gpt2::{Config, Logits, Segment};

/// A copy of the fixture in a temp dir, for breaking.
fn copy_fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for f in ["config.json", "model.safetensors"] {
        std::fs::copy(fixture_dir().join(f), dir.path().join(f)).unwrap();
    }
    dir
}

fn load_err(dir: &Path) -> String {
    let ckpt = Checkpoint::folder(dir.to_path_buf(), false);
    match weights::load(&ckpt, &Device::Cpu, DType::F32, default_path()) {
        Ok(_) => panic!("{} loaded, but it is broken", dir.display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn missing_weights_are_named() {
    let dir = copy_fixture();
    std::fs::remove_file(dir.path().join("model.safetensors")).unwrap();
    let err = load_err(dir.path());
    assert!(
        err.contains("model.safetensors") && err.contains("missing"),
        "{err}"
    );
}

#[test]
fn truncated_weights_are_named() {
    let dir = copy_fixture();
    let path = dir.path().join("model.safetensors");
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = load_err(dir.path());
    assert!(err.contains(&path.display().to_string()), "{err}");
    assert!(err.contains("truncated"), "{err}");
}

#[test]
fn a_tensor_of_the_wrong_shape_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = Config::tiny();
    weights::write_synthetic(&dir.path().join("ckpt"), &cfg).unwrap();
    let ckpt_dir = dir.path().join("ckpt");
    let path = ckpt_dir.join("model.safetensors");
    let mut tensors = candle_core::safetensors::load(&path, &Device::Cpu).unwrap();
    tensors.insert(
        "h.1.mlp.c_fc.weight".into(),
        Tensor::zeros((64, 100), DType::F32, &Device::Cpu).unwrap(),
    );
    candle_core::safetensors::save(&tensors, &path).unwrap();
    let err = load_err(&ckpt_dir);
    assert!(err.contains("h.1.mlp.c_fc.weight"), "{err}");
    assert!(
        err.contains("does config.json describe these weights?"),
        "{err}"
    );
}

#[test]
fn a_config_that_disagrees_with_the_weights_is_caught() {
    let dir = copy_fixture();
    let path = dir.path().join("config.json");
    let mut cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    cfg["n_embd"] = 32.into();
    std::fs::write(&path, cfg.to_string()).unwrap();
    let err = load_err(dir.path());
    assert!(
        err.contains("shape mismatch") || err.contains("unexpected shape"),
        "{err}"
    );
    assert!(err.contains("config.json"), "{err}");
}

#[test]
fn a_malformed_config_names_file_and_line() {
    let dir = copy_fixture();
    std::fs::write(
        dir.path().join("config.json"),
        "{\n  \"n_embd\": 64,\n  oops\n}",
    )
    .unwrap();
    let err = load_err(dir.path());
    assert!(
        err.contains("config.json") && err.contains("line 3"),
        "{err}"
    );
}

#[test]
fn ids_outside_the_vocabulary_are_refused() {
    let model = tiny_model(default_path());
    let err = model
        .forward_one(&[1, 2, 512], &mut model.new_cache(3), Logits::AllPositions)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("token id 512") && err.contains("512 ids"),
        "{err}"
    );
}

#[test]
fn sequences_past_the_context_are_refused() {
    let model = tiny_model(default_path());
    let err = model
        .forward_one(&[1; 65], &mut model.new_cache(65), Logits::LastPosition)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("65 positions") && err.contains("context of 64"),
        "{err}"
    );
    // The limit counts the cache too.
    let mut cache = model.new_cache(70);
    model
        .forward_one(&[1; 60], &mut cache, Logits::LastPosition)
        .unwrap();
    let err = model
        .forward_one(&[1; 5], &mut cache, Logits::LastPosition)
        .unwrap_err()
        .to_string();
    assert!(err.contains("60 cached + 5 new"), "{err}");
}

#[test]
fn a_batch_needs_a_cache_per_row() {
    let model = tiny_model(default_path());
    let ids = [vec![1, 2, 3], vec![1, 2]];
    let err = Segment::rows(&ids, &mut model.new_caches(1, 3), Logits::LastPosition)
        .err()
        .expect("two rows, one cache")
        .to_string();
    assert!(err.contains("2 rows but 1 caches"), "{err}");
    // Rows of different lengths are sequences of their own: each gets its last position's logits.
    let logits = model
        .forward(
            &mut Segment::rows(&ids, &mut model.new_caches(2, 3), Logits::LastPosition).unwrap(),
        )
        .unwrap();
    assert_eq!(logits.dims(), &[2, 512]);
}

/// `gpt2 logits` on the tiny fixture with `COURSE_CPU_KERNELS` and extra flags.
fn logits_with_kernels(env: &str, extra: &[&str]) -> std::process::Output {
    logits_with_variable("COURSE_CPU_KERNELS", env, extra)
}

fn logits_with_variable(name: &str, env: &str, extra: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["logits", "--ids", "1,2", "--device", "cpu", "--model"])
        .arg(fixture_dir())
        .args(extra)
        .env_remove("COURSE_CPU_KERNELS")
        .env_remove("GPT2_CPU_KERNELS")
        .env(name, env)
        .output()
        .unwrap()
}

#[test]
fn the_old_name_gpt2_cpu_kernels_is_still_read_with_a_note_naming_its_successor() {
    let run = logits_with_variable("GPT2_CPU_KERNELS", "sse9", &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success(), "the old name was not read: {err}");
    assert!(err.contains("sse9"), "{err}");
    assert_eq!(
        err.matches("GPT2_CPU_KERNELS is now COURSE_CPU_KERNELS")
            .count(),
        1,
        "one note: {err}"
    );
    let run = logits_with_variable("GPT2_CPU_KERNELS", "portable", &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(
        run.status.success() && err.contains("is now COURSE_CPU_KERNELS"),
        "{err}"
    );
    // The course-wide name says nothing more.
    let run = logits_with_kernels("portable", &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success() && !err.contains("note:"), "{err}");
}

#[test]
fn a_kernel_path_that_is_not_one_is_named_with_the_choices() {
    let run = logits_with_kernels("sse9", &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        err.contains("COURSE_CPU_KERNELS")
            && err.contains("sse9")
            && err.contains("avx2")
            && err.contains("portable"),
        "{err}"
    );
    // A path that every CPU has, in any case, runs.
    let run = logits_with_kernels("Portable", &[]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
}

#[test]
fn a_kernel_path_the_cpu_lacks_is_refused_with_what_it_has() {
    let Some(missing) = engine::cpu::KernelPath::ALL
        .into_iter()
        .find(|p| !p.is_supported())
    else {
        // Every path runs here; the message itself is checked in `engine::cpu`'s tests.
        let run = logits_with_kernels("avx512", &[]);
        assert!(
            run.status.success(),
            "{}",
            String::from_utf8_lossy(&run.stderr)
        );
        return;
    };
    let run = logits_with_kernels(missing.name(), &[]);
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        err.contains(&format!("COURSE_CPU_KERNELS={}", missing.name()))
            && err.contains("it supports"),
        "{err}"
    );
}

#[test]
fn a_bad_kernels_flag_is_refused_before_anything_loads() {
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["bench", "--kernels", "sse9", "--model", "synthetic"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success());
    assert!(
        err.contains("--kernels") && err.contains("sse9") && err.contains("portable"),
        "{err}"
    );
}
