//! Bonsai 8B's path through exercise 8, at toy size: `--model prism-ml/Bonsai-8B-gguf` on a
//! stand-in for the Hugging Face Hub (hf-hub honours `HF_ENDPOINT`) whose repository holds a
//! tiny Qwen3 with every matrix 1-bit `Q1_0` (crates/llama/tests/fixtures/gguf, written by
//! scripts/make-gguf-fixtures.py): the file list is asked for, the one GGUF file is picked and
//! downloaded into the HF cache, and it runs on the first tier, its Q1_0 matmuls in their own
//! rows with their kernel and roofline. Then, the stand-in gone and `HF_HUB_OFFLINE=1`, the same
//! command runs the cached file again, with no synthetic stand-in said.
//!
//! (The stand-in Hub here answers the two requests hf-hub makes: the repository's file list and
//! a file's bytes; tests/models.rs has one answering the second only.)

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

const BIN: &str = env!("CARGO_BIN_EXE_solution-8");
const REPO: &str = "prism-ml/Bonsai-8B-gguf";
const FILE: &str = "Bonsai-tiny-Q1_0.gguf";
const COMMIT: &str = "41414141414141414141414141414141414141a1";

/// The repository's files: name → bytes.
type Files = HashMap<String, Vec<u8>>;

fn files() -> Files {
    let gguf = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../crates/llama/tests/fixtures/gguf/tiny-qwen3-q1_0.gguf");
    [
        (FILE.to_string(), std::fs::read(gguf).unwrap()),
        ("README.md".to_string(), b"# a tiny Bonsai\n".to_vec()),
    ]
    .into()
}

/// `GET /api/models/{owner}/{name}/revision/{revision}`: the file list hf-hub's `info` reads.
async fn info(
    State(files): State<Arc<Files>>,
    UrlPath((owner, name, _revision)): UrlPath<(String, String, String)>,
) -> Response {
    if format!("{owner}/{name}") != REPO {
        return StatusCode::NOT_FOUND.into_response();
    }
    let siblings: Vec<serde_json::Value> = files
        .keys()
        .map(|f| serde_json::json!({ "rfilename": f }))
        .collect();
    axum::Json(serde_json::json!({ "siblings": siblings, "sha": COMMIT })).into_response()
}

/// `GET /{owner}/{name}/resolve/{revision}/{file}` with a `Range`: hf-hub reads the size from
/// `Content-Range`, the commit from `x-repo-commit`, and the `etag`.
async fn resolve(
    State(files): State<Arc<Files>>,
    UrlPath((owner, name, _revision, file)): UrlPath<(String, String, String, String)>,
    headers: HeaderMap,
) -> Response {
    let bytes = match files.get(&file) {
        Some(b) if format!("{owner}/{name}") == REPO => b,
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let range = headers.get(header::RANGE).and_then(|r| r.to_str().ok());
    let (start, end) = match range.and_then(|r| r.strip_prefix("bytes=")) {
        Some(r) => {
            let (a, b) = r.split_once('-').unwrap_or((r, ""));
            let a: usize = a.parse().unwrap_or(0);
            let b: usize = b.parse().map(|b: usize| b + 1).unwrap_or(bytes.len());
            (a.min(bytes.len()), b.min(bytes.len()))
        }
        None => (0, bytes.len()),
    };
    (
        StatusCode::PARTIAL_CONTENT,
        [
            (
                header::CONTENT_RANGE,
                format!("bytes {start}-{}/{}", end.max(1) - 1, bytes.len()),
            ),
            (header::ETAG, format!("\"{:x}\"", bytes.len())),
            (
                header::HeaderName::from_static("x-repo-commit"),
                COMMIT.to_string(),
            ),
        ],
        bytes[start..end].to_vec(),
    )
        .into_response()
}

/// Serves the repository on a loopback port until the sender is dropped.
fn hub() -> (
    String,
    tokio::sync::oneshot::Sender<()>,
    std::thread::JoinHandle<()>,
) {
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    let server = std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async move {
                let app = axum::Router::new()
                    .route(
                        "/api/models/{owner}/{name}/revision/{revision}",
                        axum::routing::get(info),
                    )
                    .route(
                        "/{owner}/{name}/resolve/{revision}/{file}",
                        axum::routing::get(resolve),
                    )
                    .with_state(Arc::new(files()));
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

/// Exercise 8's reference program on `--model prism-ml/Bonsai-8B-gguf`, in a folder of its own.
fn run(dir: &Path, hf_home: &Path, cache: &Path, endpoint: Option<&str>) -> Output {
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../exercises/exercise-8/answers.toml"),
        dir.join("answers.toml"),
    )
    .unwrap();
    let mut c = Command::new(BIN);
    c.args([
        "--model",
        REPO,
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
    .env("HF_HOME", hf_home)
    .env("COURSE_CACHE", cache);
    match endpoint {
        Some(url) => c.env("HF_ENDPOINT", url).env_remove("HF_HUB_OFFLINE"),
        None => c.env("HF_HUB_OFFLINE", "1"),
    };
    c.stdin(std::process::Stdio::null()).output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The report's Q1_0 rows: the layers' matmuls and the head, each with the Q1_0 kernel, its
/// work at 1.125 bits a weight, and a roofline.
fn assert_q1_0_rows(dir: &Path) {
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("results/report.json")).unwrap())
            .unwrap();
    let env = &report["environment"];
    assert_eq!(
        (&env["tier"], &env["dtype"], &env["model"]),
        (
            &serde_json::json!("engine"),
            &serde_json::json!("q1_0"),
            &serde_json::json!(format!("{REPO}/{FILE}"))
        ),
        "{env}"
    );
    let rows = report["rows"].as_array().unwrap();
    for name in ["matmul", "lm_head"] {
        let row = rows
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("no {name} row: {report}"));
        assert_eq!(row["dtype"], "q1_0", "{row}");
        assert!(
            row["kernel"].as_str().is_some_and(|k| k.ends_with("-q1_0")),
            "{row}"
        );
        assert!(
            row["bytes"].as_u64().is_some_and(|b| b > 0) && !row["roofline"].is_null(),
            "{row}"
        );
    }
}

#[test]
fn bonsai_is_picked_downloaded_and_profiled_then_read_from_the_cache_offline() {
    let hf = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (endpoint, stop, server) = hub();

    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), hf.path(), cache.path(), Some(&endpoint));
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(
        !out.contains("synthetic-bonsai"),
        "no stand-in online: {out}"
    );
    let cached: PathBuf = hf
        .path()
        .join("hub/models--prism-ml--Bonsai-8B-gguf/snapshots")
        .join(COMMIT)
        .join(FILE);
    assert!(cached.is_file(), "the file is in the HF cache");
    assert_q1_0_rows(dir.path());

    // The Hub gone: the cached file, by the same rule, and nothing synthetic written.
    drop(stop);
    server.join().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), hf.path(), cache.path(), None);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("synthetic-bonsai"), "{out}");
    assert_q1_0_rows(dir.path());
    assert_eq!(
        std::fs::read_dir(cache.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains("bonsai")
                || e.file_name().to_string_lossy().contains("q1_0"))
            .count(),
        0,
        "no stand-in in the course cache"
    );
}
