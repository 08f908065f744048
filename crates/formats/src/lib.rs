//! The files the course's tools exchange, typed once: the writer and every reader use these
//! types, so a schema bump is a change here plus fixtures and the readers' migration message.
//!
//! - [`report`]: the profiler's `report.json` (written by `profiler`, read by the grader and
//!   `course bench budget`). A new field goes on [`report::Report`] (file-wide) or
//!   [`report::ReportRow`] (per row), with `#[serde(default)]` when older writers may lack it;
//!   an incompatible change bumps [`report::SCHEMA`] and adds the old one to
//!   [`report::OLD_SCHEMAS`] with what it lacks.
//! - [`bench`]: the load client's `bench.json` (written by `bench`, read by the grader);
//!   the same rule with [`bench::SCHEMA`] and [`bench::OLD_SCHEMAS`].
//! - [`line`]: the budget lines every row of a report is on, and the illustrative step.
//! - [`environment`]: where a measurement was taken, the record both files carry.
//! - [`memory`]: exercise 8's `results/memory.json` (written by `driver-exercise-8`, read by
//!   the grader), with [`memory::SCHEMA`] and [`memory::OLD_SCHEMAS`] as for the others.
//! - [`version`]: the one schema check and its migration error, naming the file and the
//!   command that writes a current one.
//! - [`schemas`]: the JSON Schemas the types generate (committed under `schema/`, read by
//!   scripts/gpu-check; `cargo run -p formats --bin write-schemas` rewrites them).
//!
//! The verdict of an A/B comparison is the `verdict` crate's `Verdict`, written into
//! bench.json as is.

pub mod bench;
pub mod environment;
pub mod line;
pub mod memory;
pub mod report;
pub mod schemas;
pub mod version;
