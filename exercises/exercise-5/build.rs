//! With `--features cuda`, compiles src/fused_bias_gelu.cu to PTX (nvcc, through cudaforge, the
//! crate candle's own kernels are built with) and writes `$OUT_DIR/ptx.rs`, which defines
//! `FUSED_BIAS_GELU: &str` for src/fused.rs to hand to the launch (`driver_exercise_5::kernel!`,
//! crates/driver-exercise-5/src/cuda.rs). Without the feature it does nothing,
//! so a CPU build never needs nvcc.
//!
//! The target architecture: `CUDA_ARCH` (nvcc's form: sm_90a, the default, for H100/H200;
//! sm_89 for L4 / RTX 40xx; sm_80 for A100, whose PTX also runs on any newer GPU), else what
//! candle's kernels are built for (`CUDA_COMPUTE_CAP`, else the GPU nvidia-smi reports), else
//! sm_90a. scripts/build-cuda.sh --arch sets both variables, so the two sets of kernels always
//! load on the same GPUs.

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CUDA_ARCH");
    println!("cargo::rerun-if-env-changed=CUDA_COMPUTE_CAP");
    // A build script sees the package's features both as CARGO_FEATURE_CUDA and as
    // cfg(feature = "cuda"); the cfg is the one that lets it name the optional build
    // dependency cudaforge.
    #[cfg(feature = "cuda")]
    if let Err(e) = compile_kernel() {
        eprintln!(
            "error: cannot compile src/fused_bias_gelu.cu to PTX: {e}\n\
             A `--features cuda` build needs nvcc: put the CUDA toolkit's bin/ on PATH (or set NVCC) and set \
             CUDA_ARCH (sm_90a for H100/H200, sm_89 for L4/RTX 40xx, sm_80 for A100); scripts/build-cuda.sh \
             installs a pinned toolkit and sets it. Without a GPU, build without `--features cuda`."
        );
        std::process::exit(1);
    }
}

/// What the kernel is compiled for (see the file's comment).
#[cfg(feature = "cuda")]
fn target_arch() -> Result<cudaforge::GpuArch, String> {
    let Ok(value) = std::env::var("CUDA_ARCH") else {
        // candle-kernels' own rule (cudaforge's), so both sets of kernels agree.
        return Ok(cudaforge::detect_compute_cap()
            .unwrap_or_else(|_| cudaforge::GpuArch::with_suffix(90, "a")));
    };
    let arch = cudaforge::GpuArch::parse(&value)
        .map_err(|e| format!("CUDA_ARCH={value:?} is not a GPU architecture ({e}): use sm_90a, sm_89, sm_86, sm_80 or sm_75"))?;
    // candle's kernels follow CUDA_COMPUTE_CAP: a different value would build code for two GPUs.
    if let Ok(cap) = std::env::var("CUDA_COMPUTE_CAP") {
        if cudaforge::GpuArch::parse(&cap).ok().as_ref() != Some(&arch) {
            return Err(format!(
                "CUDA_ARCH={value} and CUDA_COMPUTE_CAP={cap} name different GPUs: candle's kernels follow \
                 CUDA_COMPUTE_CAP and this one CUDA_ARCH, so one set would not load; set them alike \
                 (scripts/build-cuda.sh --arch does)"
            ));
        }
    }
    Ok(arch)
}

#[cfg(feature = "cuda")]
fn compile_kernel() -> Result<(), String> {
    let out = std::path::PathBuf::from(
        std::env::var("OUT_DIR").expect("cargo sets OUT_DIR for build scripts"),
    );
    let arch = target_arch()?;
    // The same nvcc flags candle-kernels uses for its PTX, so this module loads wherever
    // candle's own kernels do (same architecture, same PTX version).
    let ptx = cudaforge::KernelBuilder::new()
        .compute_cap_arch(&arch.to_string())
        .source_files(["src/fused_bias_gelu.cu"])
        .arg("-std=c++17")
        .arg("-O3")
        .build_ptx()
        .map_err(|e| e.to_string())?;
    ptx.write(out.join("ptx.rs")).map_err(|e| e.to_string())
}
