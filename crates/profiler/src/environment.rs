//! Where a measurement was taken: the one record both reports carry (report.json's and
//! bench.json's `environment`), defined with the files in the `formats` crate; here, what the
//! profiler states about its own build.

pub use formats::environment::{cpu_model, unoptimised_build, Environment, Target};

/// The features of this crate that were on, for the profiler's own reports.
pub(crate) fn profiler_features() -> Vec<String> {
    let on = [
        ("cuda", cfg!(feature = "cuda")),
        ("nvtx", cfg!(feature = "nvtx")),
    ];
    on.iter()
        .filter(|(_, on)| *on)
        .map(|(name, _)| name.to_string())
        .collect()
}
