//! What the exercise's tests share: a stand-in for the Hugging Face Hub, served on a loopback
//! port (hf-hub honours `HF_ENDPOINT`), so that a download runs without the network; the reference program as the tests run it.

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// A running stand-in: the endpoint's URL, the sender whose drop stops it, and its thread to
/// join after that.
pub type StandIn = (
    String,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
);

/// Serves `app` on a loopback port, on a thread of its own, until the returned sender is
/// dropped.
pub fn serve(app: axum::Router) -> StandIn {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                addr_tx.send(listener.local_addr().unwrap()).unwrap();
                axum::serve(listener, app)
                    .with_graceful_shutdown(async move { drop(stopped.await) })
                    .await
                    .unwrap();
            })
    });
    (format!("http://{}", addr_rx.recv().unwrap()), stop, server)
}

/// The reference program on `model` at the tests' small sizes (one recorded forward of 4
/// tokens, every row printed), on the CPU, answering in the exercise folder `dir`; without a
/// terminal, so it asks nothing.
pub fn solution(model: &str, dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_solution-8"));
    c.args([
        "--model",
        model,
        "--device",
        "cpu",
        "--warmup",
        "0",
        "--active",
        "1",
        "--seq",
        "4",
        "--row-limit",
        "30",
        "--exercise-dir",
    ])
    .arg(dir)
    .env_remove("COURSE_PREDICTION_ASKED")
    .stdin(Stdio::null());
    c
}

/// Exercise 8's answers.toml as a learner starts with it, copied into `dir`.
pub fn copy_answers(dir: &Path) {
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises/exercise-8/answers.toml"),
        dir.join("answers.toml"),
    )
    .unwrap();
}

/// What a run printed: its stdout, then its stderr.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// `dir`'s results/report.json from a GGUF file's run on the engine, checked: its environment
/// names the engine, `model` and the stored type `dtype`, and the layers' matmuls and the head
/// are quantized rows, each with the CPU's kernel for that type (the tests run on the CPU) and
/// its work counted, so a roofline. Returns the report, for what else a test reads in it.
pub fn quantized_report(dir: &Path, model: &str, dtype: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(dir.join("results/report.json")).unwrap();
    let report: serde_json::Value = serde_json::from_str(&text).unwrap();
    let env = &report["environment"];
    assert_eq!(
        (&env["tier"], &env["dtype"], &env["model"]),
        (
            &serde_json::json!("engine"),
            &serde_json::json!(dtype),
            &serde_json::json!(model)
        ),
        "{env}"
    );
    let rows = report["rows"].as_array().unwrap();
    for name in ["matmul", "lm_head"] {
        let row = rows
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {name} row: {report}"));
        assert_eq!(row["dtype"], dtype, "{row}");
        let kernel = row["kernel"].as_str().unwrap_or_default();
        assert!(
            kernel.starts_with("quant-") && kernel.ends_with(&format!("-{dtype}")),
            "{row}"
        );
        assert!(
            row["bytes"].as_u64().is_some_and(|b| b > 0) && !row["roofline"].is_null(),
            "{row}"
        );
    }
    report
}
