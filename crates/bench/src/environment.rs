//! Where a result was measured: the one record report.json and bench.json both carry, defined
//! with the files in the `formats` crate and named here too so a program that benchmarks needs
//! only this crate.

pub use formats::environment::{Environment, Target};
