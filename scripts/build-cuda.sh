#!/usr/bin/env bash
# Builds the course's binaries with candle's CUDA backend on any Linux x86-64 machine, GPU or
# not, system CUDA or not.
#
#   scripts/build-cuda.sh                      # for Hopper (H100, H200): sm_90a, the default
#   scripts/build-cuda.sh --arch sm_80         # A100 (its PTX also runs on Hopper and newer);
#                                              # sm_89 for L4 / RTX 40xx, sm_86, sm_75 also accepted
#   CUDA_ARCH=sm_89 scripts/build-cuda.sh      # the same, through the environment
#   scripts/build-cuda.sh --compute-cap 80     # the same as --arch sm_80 (90 is sm_90a)
#   scripts/build-cuda.sh --nvtx               # also NVTX ranges named like the profiler's rows,
#                                              # for Nsight Systems (`nsys profile --trace=cuda,nvtx`)
#
# The target architecture is what nvcc compiles every kernel for: candle's (CUDA_COMPUTE_CAP)
# and exercise 5's (CUDA_ARCH, read by its build.rs), both set from --arch. sm_90a code loads on
# Hopper only; scripts/gpu-check.sh reads it back from cuda-build.txt and refuses another GPU.
#
# What it does, each step skipped when already done (rerun it at will, or after a failure):
#   1. a virtual environment target/cuda-venv with the pinned CUDA 13.0 packages from PyPI
#      (nvcc, NVVM, headers, cudart, nvrtc, cuRAND, cuBLAS; about 1.2 GB);
#   2. the link folder: unversioned library names and a libcuda.so stand-in (no driver here);
#   3. `cargo build --release --features cuda` of gpt2, course and every exercise and solution
#      that has a `cuda` feature, into target/cuda (override: CUDA_TARGET_DIR), so the CPU
#      build in target/release is untouched;
#   4. solution-5's unit tests with the same features (`cargo test --no-run`), copied to
#      solution-5-tests next to the binaries: gpu-check runs them on the GPU.
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

arch=
nvtx=false
while [ $# -gt 0 ]; do
  case "$1" in
    --arch | --compute-cap)
      [ $# -ge 2 ] || cuda_die "$1 needs a value: sm_90a, sm_89, sm_86, sm_80 or sm_75 (or 90, 89, 86, 80, 75)"
      arch=$2
      shift 2
      ;;
    --arch=* | --compute-cap=*)
      arch=${1#*=}
      shift
      ;;
    --nvtx)
      nvtx=true
      shift
      ;;
    -h | --help)
      sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) cuda_die "unknown argument \"$1\" (see scripts/build-cuda.sh --help)" ;;
  esac
done

cuda_target "$arch"
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

# solution-5's unit tests compare exercise 5's kernel with candle's unfused ops on the GPU. The
# same packages and features as above, so Cargo reuses what it built (a different set would
# resolve other features and rebuild candle); --bin limits it to solution-5's test harness.
cuda_log "cargo test --no-run --bin solution-5 (solution-5's CUDA tests, same features)"
tests_json=$(CARGO_TARGET_DIR=$target_dir cargo test --release --locked --no-run "${args[@]}" --features "$feature_list" \
  --bin solution-5 --message-format json-render-diagnostics) || cuda_die "solution-5's tests did not build (the errors are above)"
tests_exe=$(python3 -c '
import json, sys
messages = [json.loads(line) for line in sys.stdin if line.startswith("{")]
exes = [m["executable"] for m in messages
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "solution-5" and m["profile"]["test"] and m.get("executable")]
print(exes[-1] if exes else "")' <<<"$tests_json")
[ -n "$tests_exe" ] || cuda_die "cargo built no test executable for solution-5"
cp "$tests_exe" "$bin_dir/solution-5-tests"

{
  echo "arch=$CUDA_ARCH"
  echo "compute_cap=$CUDA_COMPUTE_CAP"
  echo "nvcc=$(nvcc --version | tail -n 2 | head -n 1)"
  echo "packages=${packages[*]}"
  echo "features=$feature_list"
} >"$bin_dir/cuda-build.txt"

echo
echo "CUDA binaries ($CUDA_ARCH) in $bin_dir:"
for p in "${packages[@]}" solution-5-tests; do
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
echo "or carry them: scripts/gpu-check.sh --pack target/gpu-bundle, then there"
echo "  scripts/gpu-check.sh --bin-dir target/gpu-bundle --out DIR"
