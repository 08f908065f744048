//! `bench.json`, the load client's file (documented in crates/bench/README.md): its schema
//! and the versions it replaced. The bench crate writes it, the grader reads it.
//!
//! Its run, summary and comparison types are still the bench crate's own (`bench::report`);
//! the identifier, the refused versions and the migration message are here, in one place.
//! A bump changes [`SCHEMA`], adds the old identifier to [`OLD_SCHEMAS`] with what it lacks,
//! and regenerates the fixtures.

use crate::version::FileSchema;

/// The schema identifier written in every bench.json.
pub const SCHEMA: &str = "bench-report/3";

/// Earlier identifiers, oldest first, each refused with what it lacks.
pub const OLD_SCHEMAS: &[(&str, &str)] = &[
    (
        "bench-report/1",
        "from before the environment record bench.json and report.json share",
    ),
    (
        "bench-report/2",
        "from before intervals over replicate runs and the four verdicts (faster, slower, same, \
         inconclusive): its per-request bootstrap intervals are too narrow under load",
    ),
];

/// bench.json's schema, for [`FileSchema::check`].
pub const FILE: FileSchema = FileSchema {
    file: "bench.json",
    current: SCHEMA,
    old: OLD_SCHEMAS,
    rerun: "To write a current file, re-run the benchmark that wrote it (`course bench ... --out \
            DIR`, or `course run N` for an exercise).",
};
