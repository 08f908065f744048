// Records the optimisation level the crates are built with (one cargo build gives every crate
// the same profile), so the environment record can say whether its numbers came from an
// optimised build.
fn main() {
    let level = std::env::var("OPT_LEVEL").unwrap_or_else(|_| "unknown".to_string());
    println!("cargo:rustc-env=FORMATS_OPT_LEVEL={level}");
    println!("cargo:rerun-if-env-changed=OPT_LEVEL");
}
