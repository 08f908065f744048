//! The JSON Schemas the types generate, for readers outside Rust (scripts/gpu-check reads
//! `schema/report.schema.json`). Committed next to this crate; a test fails when they differ
//! from what the types generate, and `cargo run -p formats --bin write-schemas` rewrites them.

use std::path::{Path, PathBuf};

/// Each committed schema: its file name under `schema/` and the text the types generate.
pub fn generated() -> Vec<(&'static str, String)> {
    let report = schemars::schema_for!(crate::report::Report);
    vec![("report.schema.json", pretty(report.as_value()))]
}

/// Where the committed schemas are: `crates/formats/schema`.
pub fn folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("schema")
}

fn pretty(value: &serde_json::Value) -> String {
    // A schema is plain JSON: serialising cannot fail.
    serde_json::to_string_pretty(value).unwrap_or_default() + "\n"
}
