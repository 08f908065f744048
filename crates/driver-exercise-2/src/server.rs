//! Starting the `serve` program at a batch size, for each side of the comparison.

use crate::args::Args;
use anyhow::{bail, Result};
use bench::server::LocalServer;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Start `serve` at `batch`, its output logged beside the results.
pub(crate) fn start(
    args: &Args,
    program: &Path,
    batch: u16,
    results: &Path,
) -> Result<LocalServer> {
    let serve: Vec<String> = [
        "--model",
        &args.model,
        "--device",
        &args.device,
        "--port",
        "0",
        "--max-batch-size",
        &batch.to_string(),
    ]
    .map(String::from)
    .to_vec();
    let log = results.join(format!("serve-batch-{batch}.log"));
    println!(
        "\nbatch-{batch}: starting {} {} (its output: {})",
        program.display(),
        serve.join(" "),
        log.display()
    );
    LocalServer::start(program, &serve, Some(&log), Duration::from_secs(600))
}

/// The `serve` program: `--server`, or the one cargo built beside this program.
pub(crate) fn server_program(given: Option<&Path>) -> Result<PathBuf> {
    let path = match given {
        Some(path) => path.to_path_buf(),
        None => bench::server::sibling_program("serve")?,
    };
    if !path.is_file() {
        // Cargo puts release builds in target/release and dev builds in target/debug.
        let profile = match path
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
        {
            Some("release") => " --release",
            _ => "",
        };
        bail!("{} does not exist: build the server first with `cargo build{profile} -p serve`, or pass --server PATH", path.display());
    }
    Ok(path)
}
