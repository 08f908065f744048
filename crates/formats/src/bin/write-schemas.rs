//! Rewrites the committed JSON Schemas (crates/formats/schema/*.schema.json) from the types:
//! `cargo run -p formats --bin write-schemas`. Run it after changing a file's types; the
//! test `schemas_are_current` fails until you do.

use std::process::ExitCode;

fn main() -> ExitCode {
    if std::env::args().any(|a| a == "--help" || a == "-h") {
        println!(
            "write-schemas: rewrite crates/formats/schema/*.schema.json from the formats crate's types.\n\n\
             Usage: cargo run -p formats --bin write-schemas"
        );
        return ExitCode::SUCCESS;
    }
    let folder = formats::schemas::folder();
    for (name, text) in formats::schemas::generated() {
        let path = folder.join(name);
        if let Err(e) = std::fs::write(&path, text) {
            eprintln!(
                "cannot write {}: {e}. Check that the folder exists and is writable.",
                path.display()
            );
            return ExitCode::FAILURE;
        }
        println!("wrote {}", path.display());
    }
    ExitCode::SUCCESS
}
