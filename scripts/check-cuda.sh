#!/usr/bin/env bash
# CI guard: proves the `cuda` feature still compiles, on a machine with no GPU and no CUDA.
#
#   scripts/check-cuda.sh            # target architecture sm_90a (Hopper), as build-cuda.sh
#   CUDA_ARCH=sm_80 scripts/check-cuda.sh
#   scripts/check-cuda.sh --full     # also compile candle's static GGUF/MoE kernel library
#
# `cargo check` (no code generation, no link) of the packages that hold CUDA-only code: gpt2
# (device opening, the profiler hook-up) and profiler (CUDA event and sync timing, NVTX
# ranges), plus the exercises and solutions whose `cuda` feature is part of their build
# record. The compiler is the pinned CUDA 13.0 nvcc from PyPI (scripts/cuda/env.sh), the
# same one scripts/build-cuda.sh uses. candle-kernels' build script compiles its PTX kernels
# with it; the static library of quantized GGUF/MoE kernels, which only a link would read, is
# stood in for by scripts/cuda/nvcc-check-mode (empty objects) unless --full is given: it is
# most of a cold run. In the dev profile and target/debug, as the test command's one build: the
# clippy step has already checked every dependency, so only what the `cuda` feature changes
# (candle, cudarc and the crates above them) is checked again: 21 units, 58 s in a fresh clone's
# test command, against about 350 units and 120 s in a folder of its own. --full keeps its own
# folder, target/cuda-check-full.
# Then the logic of scripts/gpu-check.sh, which only a GPU machine runs for real: its unit
# tests (scripts/gpu-check/test_gpu_check.py) and its CPU mode on target/debug/gpt2 (parity,
# profile in both timing modes, bench, exercise 3 graded, the one JSON and the archive: about
# 20 s of CPU), when target/debug/gpt2 exists (the test command's one build).
set -euo pipefail
source "$(dirname "$0")/cuda/env.sh"
cd "$CUDA_REPO_ROOT"

full=false
case "${1:-}" in
  -h | --help)
    sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  --full) full=true ;;
  "") ;;
  *) cuda_die "unknown argument \"$1\" (see scripts/check-cuda.sh --help)" ;;
esac

cuda_venv_install "${CUDA_COMPILER_PACKAGES[@]}"
cuda_target
cuda_export_toolchain
target_dir=$CUDA_REPO_ROOT/target
if $full; then
  target_dir=$CUDA_REPO_ROOT/target/cuda-check-full
  unset NVCC
else
  export CUDA_CHECK_REAL_NVCC=$CUDA_TREE/bin/nvcc
  export NVCC=$CUDA_REPO_ROOT/scripts/cuda/nvcc-check-mode
  cuda_log "candle's GGUF/MoE static kernel library is not compiled (never linked by a check; --full compiles it)"
fi

packages=(gpt2 engine llama traced-models profiler)
features=(gpt2/cuda gpt2/nvtx engine/cuda llama/cuda traced-models/cuda profiler/cuda profiler/nvtx)
cuda_add_exercises

cuda_cargo_args
cuda_log "cargo check --locked --all-targets ${args[*]} --features $feature_list (target folder $target_dir)"
started=$SECONDS
CARGO_TARGET_DIR=$target_dir cargo check --locked --all-targets "${args[@]}" --features "$feature_list"
cuda_log "the CUDA code compiles ($((SECONDS - started)) s)"

cuda_log "scripts/gpu-check.sh's logic: unit tests, then its CPU mode"
python3 -B -m unittest discover -s scripts/gpu-check
cpu_bin=target/debug
if [ -x $cpu_bin/gpt2 ]; then
  # The summary goes to the terminal; the step logs (tables) to a file.
  scripts/gpu-check.sh --device cpu --bin-dir $cpu_bin --out target/gpu-check-cpu 2>target/gpu-check-cpu.log ||
    cuda_die "scripts/gpu-check.sh --device cpu failed: see target/gpu-check-cpu.log, and the step logs in target/gpu-check-cpu/gpu-check-files.tar.xz"
  # What a device run returns: the one JSON and the archive, nothing else.
  [ "$(ls target/gpu-check-cpu)" = "$(printf 'gpu-check-files.tar.xz\ngpu-check.json')" ] ||
    cuda_die "target/gpu-check-cpu holds $(ls target/gpu-check-cpu | tr '\n' ' ')instead of gpu-check.json and gpu-check-files.tar.xz alone"
  cuda_log "gpu-check's CPU mode passed (target/gpu-check-cpu/gpu-check.json, target/gpu-check-cpu/gpu-check-files.tar.xz)"
else
  cuda_log "no $cpu_bin/gpt2 (cargo build -p gpt2): gpu-check's CPU mode not run"
fi
