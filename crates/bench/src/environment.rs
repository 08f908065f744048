//! Where a result was measured: the profiler's [`Environment`], the one record report.json and
//! bench.json both carry, named here too so a program that benchmarks needs only this crate.

pub use profiler::{Environment, Target};
