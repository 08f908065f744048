//! The committed fixtures the tests read: small results written by the programs themselves on
//! the tiny synthetic models (`book-measure --quick`), copied into tests/fixtures.

use std::path::PathBuf;

pub fn dir(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// tests/fixtures/NAME.report.json, a profiler report.
pub fn profile(name: &str) -> profiler::Report {
    let path = dir(&format!("{name}.report.json"));
    profiler::Report::read_json(&path).unwrap_or_else(|e| panic!("{e}"))
}

/// The tiny GPT-2's profile (exercise 3's program, stock MLP).
pub fn profile_tiny() -> profiler::Report {
    profile("exercise-3")
}

/// tests/fixtures/NAME.bench.json, a bench report.
pub fn bench(name: &str) -> bench::report::Report {
    let path = dir(&format!("{name}.bench.json"));
    bench::report::Report::read(&path).unwrap_or_else(|e| panic!("{e:#}"))
}
