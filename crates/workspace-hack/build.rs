// Empty: with a build script, Cargo counts this crate's [build-dependencies], which align the
// features of the crates that build scripts and proc-macros use (syn).
fn main() {}
