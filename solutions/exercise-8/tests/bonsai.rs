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

mod common;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

use axum::extract::{Path as UrlPath, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};

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
fn hub() -> common::StandIn {
    common::serve(
        axum::Router::new()
            .route(
                "/api/models/{owner}/{name}/revision/{revision}",
                axum::routing::get(info),
            )
            .route(
                "/{owner}/{name}/resolve/{revision}/{file}",
                axum::routing::get(resolve),
            )
            .with_state(Arc::new(files())),
    )
}

/// Exercise 8's reference program on `--model prism-ml/Bonsai-8B-gguf`, in a folder of its own.
fn run(dir: &Path, hf_home: &Path, cache: &Path, endpoint: Option<&str>) -> Output {
    common::copy_answers(dir);
    let mut c = common::solution(REPO, dir);
    c.env("HF_HOME", hf_home).env("COURSE_CACHE", cache);
    match endpoint {
        Some(url) => c.env("HF_ENDPOINT", url).env_remove("HF_HUB_OFFLINE"),
        None => c.env("HF_HUB_OFFLINE", "1"),
    };
    c.output().unwrap()
}

use common::text;

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
    // The layers' matmuls and the head are Q1_0 rows, with its kernel and roofline.
    common::quantized_report(dir.path(), &format!("{REPO}/{FILE}"), "q1_0");

    // The Hub gone: the cached file, by the same rule, and nothing synthetic written.
    drop(stop);
    server.join().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let o = run(dir.path(), hf.path(), cache.path(), None);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(!out.contains("synthetic-bonsai"), "{out}");
    // The layers' matmuls and the head are Q1_0 rows, with its kernel and roofline.
    common::quantized_report(dir.path(), &format!("{REPO}/{FILE}"), "q1_0");
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
