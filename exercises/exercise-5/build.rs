//! With `--features cuda`, compiles src/fused_bias_gelu.cu to PTX (nvcc, through cudaforge, the
//! crate candle's own kernels are built with) and writes `$OUT_DIR/ptx.rs`, which defines
//! `FUSED_BIAS_GELU: &str` for src/fused/cuda.rs to load. Without the feature it does nothing,
//! so a CPU build never needs nvcc.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    // A build script sees the package's features both as CARGO_FEATURE_CUDA and as
    // cfg(feature = "cuda"); the cfg is the one that lets it name the optional build
    // dependency cudaforge.
    #[cfg(feature = "cuda")]
    if let Err(e) = compile_kernel() {
        eprintln!(
            "error: cannot compile src/fused_bias_gelu.cu to PTX: {e}\n\
             A `--features cuda` build needs nvcc: put the CUDA toolkit's bin/ on PATH (or set NVCC) and set \
             CUDA_COMPUTE_CAP (90 for H100/H200, 89 for L4/RTX 40xx, 80 for A100); scripts/build-cuda.sh \
             installs a pinned toolkit. Without a GPU, build without `--features cuda`."
        );
        std::process::exit(1);
    }
}

#[cfg(feature = "cuda")]
fn compile_kernel() -> cudaforge::Result<()> {
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR for build scripts"));
    // The same nvcc flags candle-kernels uses for its PTX, so this module loads wherever
    // candle's own kernels do (same CUDA_COMPUTE_CAP, same PTX version).
    let ptx = cudaforge::KernelBuilder::new()
        .source_files(["src/fused_bias_gelu.cu"])
        .arg("-std=c++17")
        .arg("-O3")
        .build_ptx()?;
    ptx.write(out.join("ptx.rs"))
}
