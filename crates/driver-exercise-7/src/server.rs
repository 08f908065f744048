//! The server under load: what to do when none answers, and the model it serves.

use anyhow::{bail, Context, Result};
use std::time::Duration;

/// What to do when no server answers: every failure to reach it ends with this.
pub(crate) const START_SERVER: &str = "start it first, in another terminal: cargo run -p gpt2 -- serve --max-batch-size 8 --port 8000 (or pass --base-url)";

/// The first model the server lists at `GET /v1/models`.
pub(crate) async fn served_model(base_url: &str) -> Result<String> {
    let base = base_url.trim_end_matches('/');
    let base = base.strip_suffix("/v1").unwrap_or(base);
    let url = format!("{base}/v1/models");
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let response = client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("no server answers at {base}: {START_SERVER}"))?;
    if !response.status().is_success() {
        bail!("GET {url} answered {}: is this an OpenAI-compatible server? Pass --served-model to name the model yourself", response.status());
    }
    let body: serde_json::Value = response
        .json()
        .await
        .with_context(|| format!("GET {url} did not answer JSON"))?;
    body["data"][0]["id"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("GET {url} lists no model; pass --served-model to name it"))
}
