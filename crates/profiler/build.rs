// Records the optimisation level the profiler is built with, so a table from an unoptimised
// build can say so above its numbers.
fn main() {
    let level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=PROFILER_OPT_LEVEL={level}");
    println!("cargo:rerun-if-env-changed=OPT_LEVEL");
}
