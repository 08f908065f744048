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
    let out = gpt2(
        &[
            "logits",
            "--model",
            dir.to_str().unwrap(),
            "--device",
            "cpu",
            "--ids",
            &ids.join(","),
            "--json",
        ],
        &[],
    );
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
        &[
            "generate",
            "--model",
            "synthetic-tiny",
            "--device",
            "cpu",
            "--prompt",
            "Benchmark first",
            "--max-tokens",
            "8",
            "--seed",
            "3",
            "--temperature",
            "0.8",
        ],
        &[("COURSE_CACHE", cache.path())],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.starts_with("Benchmark first") && stdout.len() > "Benchmark first\n".len(),
        "{stdout}"
    );
    // The checkpoint was written as a real directory the same loader reads.
    let written: Vec<_> = std::fs::read_dir(cache.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");
    for f in ["config.json", "model.safetensors", "tokenizer.json"] {
        assert!(
            written[0].join(f).is_file(),
            "{f} missing in {}",
            written[0].display()
        );
    }
}

#[test]
fn the_hub_checkpoint_falls_back_to_synthetic_when_offline() {
    let cache = tempfile::tempdir().unwrap();
    let hf = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args([
            "generate",
            "--model",
            "gpt2",
            "--device",
            "cpu",
            "--prompt",
            "Hello",
            "--max-tokens",
            "2",
        ])
        .env("COURSE_CACHE", cache.path())
        .env("HF_HOME", hf.path())
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert_eq!(
        stderr
            .lines()
            .filter(|l| l.contains("synthetic GPT-2 small"))
            .count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("HF_HUB_OFFLINE"), "{stderr}");
    assert!(text(&out.stdout).starts_with("Hello"));
}

#[test]
fn an_unknown_device_is_a_usage_error() {
    let out = gpt2(
        &[
            "logits",
            "--model",
            fixture_dir().to_str().unwrap(),
            "--device",
            "tpu",
            "--ids",
            "1",
        ],
        &[],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown device \"tpu\": use cpu, cuda or auto"),
        "{}",
        text(&out.stderr)
    );
}

#[cfg(not(feature = "cuda"))]
#[test]
fn cuda_in_a_cpu_build_says_how_to_get_it() {
    let out = gpt2(
        &[
            "logits",
            "--model",
            fixture_dir().to_str().unwrap(),
            "--device",
            "cuda",
            "--ids",
            "1",
        ],
        &[],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no CUDA support") && stderr.contains("--features cuda"),
        "{stderr}"
    );
}

#[cfg(not(feature = "cuda"))]
#[test]
fn auto_in_a_cpu_build_says_why_it_runs_on_the_cpu_in_one_line() {
    let out = gpt2(
        &[
            "logits",
            "--model",
            fixture_dir().to_str().unwrap(),
            "--device",
            "auto",
            "--ids",
            "1",
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    let notes: Vec<&str> = stderr.lines().filter(|l| l.starts_with("cuda: ")).collect();
    assert_eq!(
        notes,
        ["cuda: this build has no CUDA support (built without --features cuda); using the CPU"],
        "{stderr}"
    );
}

#[test]
fn generate_without_a_tokenizer_explains_why() {
    let out = gpt2(
        &[
            "generate",
            "--model",
            fixture_dir().to_str().unwrap(),
            "--device",
            "cpu",
            "--prompt",
            "hi",
        ],
        &[],
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("has no tokenizer.json"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn a_weight_type_the_engine_cannot_run_is_refused_by_every_command_with_what_it_can() {
    // `serve` where this build has the server (the aarch64 run builds gpt2 without it).
    let subs: &[&str] = if cfg!(feature = "serve") {
        &["generate", "bench", "profile", "serve"]
    } else {
        &["generate", "bench", "profile"]
    };
    for &sub in subs {
        let out = gpt2(
            &[
                sub,
                "--model",
                "synthetic-tiny",
                "--device",
                "cpu",
                "--dtype",
                "q4_k",
            ],
            &[],
        );
        assert!(!out.status.success(), "{sub}");
        let err = text(&out.stderr);
        for part in [
            "\"q4_k\" is not a weight type this engine runs",
            "f32, f16 or bf16",
            "q8_0 or q4_0",
            "--dtype bf16",
            "--model FILE.gguf",
        ] {
            assert!(err.contains(part), "{sub}: {part}: {err}");
        }
    }
}

/// `--dtype q8_0` on a dense checkpoint: the profile's products are quantized rows, its report
/// names the type, and `--compare` against the f32 report reads the pair.
#[test]
fn profile_quantizes_the_matrices_at_load_and_the_report_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let env = [("COURSE_CACHE", cache.path())];
    let mut reports = Vec::new();
    for dtype in ["f32", "q8_0"] {
        let out_dir = dir.path().join(dtype);
        let out = gpt2(
            &[
                "profile",
                "--model",
                "synthetic-tiny",
                "--device",
                "cpu",
                "--mlp",
                "stock",
                "--seq",
                "4",
                "--dtype",
                dtype,
                "--out",
                out_dir.to_str().unwrap(),
            ],
            &env,
        );
        assert!(out.status.success(), "{dtype}: {}", text(&out.stderr));
        reports.push(out_dir.join("report.json"));
    }
    let report = profiler::Report::read_json(&reports[1]).unwrap();
    assert_eq!(report.environment.dtype, "q8_0");
    for op in ["matmul", "lm_head"] {
        let row = report.rows.iter().find(|r| r.name == op).unwrap();
        let kernel = row.kernel.clone().unwrap_or_default();
        assert!(
            kernel.starts_with("quant-") && kernel.ends_with("-q8_0"),
            "{op}: {kernel}"
        );
    }
    let out = gpt2(
        &[
            "profile",
            "--compare",
            reports[0].to_str().unwrap(),
            reports[1].to_str().unwrap(),
        ],
        &[],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("matmul"),
        "{}",
        text(&out.stdout)
    );
}

/// Built with the `serve` feature (the default), `gpt2 serve` is the server and its help lists the
/// model's and the server's flags; built without it, every `gpt2 serve` command line, `--help`
/// included, says that this build has none and which commands have one, with status 2.
#[test]
fn serve_is_the_server_or_says_this_build_has_none_and_where_one_is() {
    let listing = text(&gpt2(&["--help"], &[]).stdout);
    let serve_line = listing
        .lines()
        .find(|l| l.trim_start().starts_with("serve "))
        .unwrap_or_else(|| panic!("gpt2 --help lists serve: {listing}"));
    if cfg!(feature = "serve") {
        assert!(serve_line.contains("OpenAI-compatible"), "{serve_line}");
        let out = gpt2(&["serve", "--help"], &[]);
        let help = text(&out.stdout);
        assert!(out.status.success(), "{}", text(&out.stderr));
        for flag in ["--model", "--port", "--max-batch-size"] {
            assert!(help.contains(flag), "{flag}: {help}");
        }
        return;
    }
    assert!(serve_line.contains("Not in this build"), "{serve_line}");
    for args in [
        &["serve"][..],
        &["serve", "--model", "synthetic-tiny", "--port", "0"],
        &["serve", "--help"],
    ] {
        let out = gpt2(args, &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", text(&out.stdout));
        for part in [
            "built without its HTTP server",
            "`cargo run -p gpt2 -- serve ...` (default features)",
            "`cargo run -p serve -- --model gpt2 ...`",
        ] {
            assert!(err.contains(part), "{args:?}: {part}: {err}");
        }
    }
}

#[test]
fn every_subcommand_has_help() {
    for sub in ["generate", "logits", "bench"] {
        let out = gpt2(&[sub, "--help"], &[]);
        assert!(out.status.success(), "{sub}");
        assert!(
            text(&out.stdout).contains("--model"),
            "{sub}: {}",
            text(&out.stdout)
        );
    }
}

/// `gpt2 serve` on a free port: the child and the address and model name it announced.
fn serve(args: &[&str], cache: &std::path::Path) -> (std::process::Child, String, String) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["serve", "--port", "0"])
        .args(args)
        .env("COURSE_CACHE", cache)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("gpt2 serve starts");
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
    while let Some(Ok(line)) = stderr.next() {
        if let Some(rest) = line.strip_prefix("gpt2 serve: listening on http://") {
            let addr = rest.split_whitespace().next().unwrap().to_string();
            let model = rest.split('"').nth(1).unwrap().to_string();
            // Keep reading what the server prints after this line: a closed pipe would make
            // its next `eprintln!` (the "try: curl" line) fail, and the server would die
            // mid-request (CI saw "connection reset by peer" when the read end closed first).
            std::thread::spawn(move || stderr.for_each(drop));
            return (child, addr, model);
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("gpt2 serve {args:?} exited before listening");
}

/// One HTTP/1.1 request with the body `json`, the whole response as text.
fn post_json(addr: &str, path: &str, json: &str) -> String {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{json}", json.len()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

#[test]
fn half_type_weights_run_in_all_four_commands_on_every_cpu_path() {
    let cache = tempfile::tempdir().unwrap();
    let env = [("COURSE_CACHE", cache.path())];
    common::on_each_path(|path| {
        for dtype in ["bf16", "f16"] {
            let model = [
                "--model",
                "synthetic-tiny",
                "--device",
                "cpu",
                "--dtype",
                dtype,
                "--kernels",
                path.name(),
            ];
            let with = |first: &[&str], rest: &[&str]| -> Vec<String> {
                first
                    .iter()
                    .chain(&model)
                    .chain(rest)
                    .map(|s| s.to_string())
                    .collect()
            };
            let run = |args: Vec<String>| {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let out = gpt2(&args, &env);
                assert!(
                    out.status.success(),
                    "{path} {dtype}: gpt2 {args:?}: {}",
                    text(&out.stderr)
                );
                out
            };

            let out = run(with(
                &["generate"],
                &["--prompt", "Benchmark first", "--max-tokens", "4"],
            ));
            assert!(
                text(&out.stdout).starts_with("Benchmark first"),
                "{path} {dtype}: {}",
                text(&out.stdout)
            );

            let dir = tempfile::tempdir().unwrap();
            // `gpt2 bench`'s cases need GPT-2 small's context: its synthetic weights, written
            // once into this test's own cache. x86-64 runs it on every path, portable included;
            // the aarch64 run, emulated, leaves it out (one such bench takes minutes there).
            if cfg!(target_arch = "x86_64") {
                let json = dir.path().join("bench.json");
                let args = [
                    "bench",
                    "--model",
                    "synthetic",
                    "--device",
                    "cpu",
                    "--dtype",
                    dtype,
                    "--kernels",
                    path.name(),
                    "--warmup",
                    "0",
                    "--repeats",
                    "1",
                    "--json",
                    json.to_str().unwrap(),
                ];
                let out = gpt2(&args, &env);
                assert!(
                    out.status.success(),
                    "{path} {dtype}: gpt2 {args:?}: {}",
                    text(&out.stderr)
                );
                let bench: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
                assert_eq!(
                    (&bench["dtype"], &bench["kernels"]),
                    (&dtype.into(), &path.name().into())
                );
                // The floor counts GPT-2 small's 124M parameters at their stored widths: the
                // matrices at 2 bytes, the LayerNorm gains and biases beside f32 activations at 4.
                let (gbps, floor_ms) = (
                    bench["memory_read_gb_per_s"].as_f64().unwrap(),
                    bench["decode_floor_ms"].as_f64().unwrap(),
                );
                let activations = if path == engine::cpu::KernelPath::Portable {
                    2
                } else {
                    4
                };
                let bytes = 2 * 123_532_032 + activations * 121_344;
                assert!(
                    (floor_ms - bytes as f64 / (gbps * 1e9) * 1e3).abs() < 1e-6 * floor_ms,
                    "{path} {dtype}: floor {floor_ms} ms at {gbps} GB/s"
                );
            }

            run(with(
                &["profile"],
                &["--seq", "4", "--out", dir.path().to_str().unwrap()],
            ));
            let report = profiler::Report::read_json(dir.path().join("report.json")).unwrap();
            assert_eq!(report.environment.dtype, dtype, "{path}");
            let matmul = report
                .rows
                .iter()
                .find(|r| r.name == "matmul")
                .and_then(|r| r.kernel.clone())
                .unwrap_or_default();
            let want = if path == engine::cpu::KernelPath::Portable {
                "candle-gemm".to_string()
            } else {
                format!("packed-{path}-{dtype}")
            };
            assert_eq!(
                matmul, want,
                "{path} {dtype}: the matmul row names the kernel and the weights' type"
            );

            // The server, where this build has it (the aarch64 run builds gpt2 without it).
            if cfg!(feature = "serve") {
                let args = with(&[], &[]);
                let (mut child, addr, served) = serve(
                    &args.iter().map(String::as_str).collect::<Vec<_>>(),
                    cache.path(),
                );
                let response = post_json(
                    &addr,
                    "/v1/completions",
                    &format!(
                        "{{\"model\": \"{served}\", \"prompt\": \"Hello\", \"max_tokens\": 3}}"
                    ),
                );
                let _ = child.kill();
                let _ = child.wait();
                assert!(
                    response.starts_with("HTTP/1.1 200") && response.contains("\"choices\""),
                    "{path} {dtype}: {response}"
                );
            }
        }
    });
}

/// `gpt2 bench | head`: the reader leaves before the table is printed. gpt2 ends quietly, with
/// status 0 (the course's rule), instead of panicking on the broken pipe (status 101).
#[cfg(unix)]
#[test]
#[cfg_attr(
    target_arch = "aarch64",
    ignore = "gpt2 bench on GPT-2 small's shapes takes minutes under qemu; the x86-64 run covers the pipe"
)]
fn bench_into_a_closed_pipe_ends_quietly() {
    let cache = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_gpt2"))
        .args(["bench", "--model", "synthetic", "--device", "cpu"])
        .args(["--warmup", "0", "--repeats", "1"])
        .env("COURSE_CACHE", cache.path())
        .env("COURSE_CEILINGS_BUFFER_MIB", "16")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The read end closes before gpt2 prints anything, as `head -0` or a `head` that has its
    // lines already.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = text(&out.stderr);
    assert!(
        !err.contains("panicked") && !err.to_lowercase().contains("broken pipe"),
        "{err}"
    );
    assert_eq!(out.status.code(), Some(0), "{err}");
}
