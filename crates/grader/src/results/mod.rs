//! Measured results the learner's own runs wrote under `results/`: the profiler's `report.json`
//! (read by `course_model::results::profile_report`, which the reference solutions read their
//! own reports with too), the benchmark's `bench.json` and exercise 5's `fused_check.json`.
//!
//! Each file is parsed into only the fields the grader needs (extra fields are ignored), and
//! checked for consistency: a results file that contradicts itself is reported as tampered.

pub mod bench_report;
pub mod budget_lines;
pub mod fused_check;

// The grader's checks name the report's reader by its place among the results files; it is
// defined once, in course-model, below the grader.
pub(crate) use course_model::results::profile_report;
use course_model::results::{parse_json, tampered, ResultsFile};
