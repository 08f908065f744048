#!/usr/bin/env bash
# Builds the course's binaries with candle's CUDA backend on any Linux x86-64 machine, GPU or
# not, system CUDA or not.
#
#   scripts/build-cuda.sh                      # for Hopper (H100, H200): compute capability 90
#   scripts/build-cuda.sh --compute-cap 80     # A100; 89 for L4 / RTX 40xx, 86, 75 also accepted
#   CUDA_COMPUTE_CAP=89 scripts/build-cuda.sh  # the same, through the environment
#   scripts/build-cuda.sh --nvtx               # also NVTX ranges named like the profiler's rows,
#                                              # for Nsight Systems (`nsys profile --trace=cuda,nvtx`)
#
# What it does, each step skipped when already done (rerun it at will, or after a failure):
#   1. a virtual environment target/cuda-venv with the pinned CUDA 13.0 packages from PyPI
#      (nvcc, NVVM, headers, cudart, nvrtc, cuRAND, cuBLAS; about 1.2 GB);
#   2. the link folder: unversioned library names and a libcuda.so stand-in (no driver here);
#   3. `cargo build --release --features cuda` of gpt2, course and every exercise and solution
#      that has a `cuda` feature, into target/cuda (override: CUDA_TARGET_DIR), so the CPU
#      build in target/release is untouched.
# Then it prints each binary, its size and the libraries it needs.
#
# On the GPU machine the binaries need the NVIDIA driver (libcuda.so.1, driver 580 or newer
# for CUDA 13.0) and, on LD_LIBRARY_PATH, the folder holding libcublas.so.13, libcublasLt.so.13,
# libcurand.so.10, libnvrtc.so.13 and libcudart.so.13 (this venv's nvidia/cu13/lib, or the
# same files from a PyTorch install built for CUDA 13). With --nvtx every binary also needs
# libnvtx3interop.so.1 (pip's nvidia-nvtx for CUDA 13, in the same folder).
set -euo pipefail
source "$(dirname "$0")/cuda/env.sh"
source "$(dirname "$0")/cuda/link-stubs.sh"
cd "$CUDA_REPO_ROOT"

cap=${CUDA_COMPUTE_CAP:-90}
nvtx=false
while [ $# -gt 0 ]; do
  case "$1" in
    --compute-cap)
      [ $# -ge 2 ] || cuda_die "--compute-cap needs a value: 90, 89, 86, 80 or 75"
      cap=$2
      shift 2
      ;;
    --compute-cap=*)
      cap=${1#*=}
      shift
      ;;
    --nvtx)
      nvtx=true
      shift
      ;;
    -h | --help)
      sed -n '2,24p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) cuda_die "unknown argument \"$1\" (see scripts/build-cuda.sh --help)" ;;
  esac
done

cuda_compute_cap "$cap"
extra_packages=()
$nvtx && extra_packages=("${CUDA_NVTX_PACKAGES[@]}")
cuda_venv_install "${CUDA_COMPILER_PACKAGES[@]}" "${CUDA_LINK_PACKAGES[@]}" "${extra_packages[@]}"
cuda_export_toolchain
target_dir=${CUDA_TARGET_DIR:-$CUDA_REPO_ROOT/target/cuda}
cuda_link_stubs "$target_dir/stub"

# Every package with CUDA code or a `cuda` feature; course has neither but is built here too,
# so one folder holds a complete GPU set.
packages=(gpt2 course)
features=(gpt2/cuda)
# The profiler's NVTX ranges (gpt2's `nvtx` feature turns on profiler/nvtx for every binary
# built here, since Cargo unifies features across them).
$nvtx && features+=(gpt2/nvtx)
cuda_add_exercises
cuda_cargo_args

cuda_log "cargo build --release --locked ${args[*]} --features $feature_list (target folder $target_dir)"
started=$SECONDS
CARGO_TARGET_DIR=$target_dir cargo build --release --locked "${args[@]}" --features "$feature_list"
cuda_log "built in $((SECONDS - started)) s"

bin_dir=$target_dir/release
{
  echo "compute_cap=$CUDA_COMPUTE_CAP"
  echo "nvcc=$(nvcc --version | tail -n 2 | head -n 1)"
  echo "packages=${packages[*]}"
  echo "features=$feature_list"
} >"$bin_dir/cuda-build.txt"

echo
echo "CUDA binaries (compute capability $CUDA_COMPUTE_CAP) in $bin_dir:"
for p in "${packages[@]}"; do
  # Binary names: gpt2 and course are named after their package; so are the exercises.
  bin=$bin_dir/$p
  [ -x "$bin" ] || { echo "  $p: no binary at $bin"; continue; }
  printf '  %-12s %s MB\n' "$p" "$(($(stat -c %s "$bin") / 1024 / 1024))"
done
echo
echo "Libraries gpt2 needs (ldd, with this venv's CUDA libraries on LD_LIBRARY_PATH):"
LD_LIBRARY_PATH=$CUDA_TREE/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} ldd "$bin_dir/gpt2" | sed 's/^/  /'
if LD_LIBRARY_PATH=$CUDA_TREE/lib ldd "$bin_dir/gpt2" | grep -q 'libcuda.so.1 => not found'; then
  echo "  (libcuda.so.1 is the NVIDIA driver: not found on a machine without one, as expected here)"
fi
echo
echo "To run on a GPU machine:"
echo "  export LD_LIBRARY_PATH=$CUDA_TREE/lib:\$LD_LIBRARY_PATH   # or the same CUDA 13 libraries from PyTorch"
echo "  $bin_dir/gpt2 logits --device cuda"
