# Shared by scripts/build-cuda.sh and scripts/check-cuda.sh (sourced, not run).
#
# Gives a CUDA 13.0 toolchain from PyPI in a virtual environment under target/, so the
# `cuda` feature builds on a machine with no GPU and no system CUDA. Every package is pinned
# to the same CUDA release: a newer nvidia-nvvm emits PTX the pinned ptxas rejects
# ("Unsupported .version 9.5"), and PTX newer than the GPU's driver will not load
# (CUDA 13.0 is the level of driver 580). See ../shared/notes/cuda-toolchain.md.

CUDA_REPO_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CUDA_VENV=${CUDA_VENV:-$CUDA_REPO_ROOT/target/cuda-venv}

# The compiler: nvcc, ptxas, NVVM, headers (cuda_fp16.h, cub/thrust via cccl) and cudart.
CUDA_COMPILER_PACKAGES=(
  nvidia-cuda-nvcc==13.0.88
  nvidia-nvvm==13.0.88
  nvidia-cuda-crt==13.0.88
  nvidia-cuda-runtime==13.0.96
  nvidia-cuda-cccl==13.0.85
)
# What a linked binary needs besides the driver (cudarc links them by name).
CUDA_LINK_PACKAGES=(
  nvidia-cuda-nvrtc==13.0.88
  nvidia-curand==10.4.0.35
  nvidia-cublas==13.0.2.14
)
# For `scripts/build-cuda.sh --nvtx`: cudarc's `nvtx` links NVTX 2's libnvToolsExt, which
# CUDA 13 no longer ships; its wheel has libnvtx3interop.so.1, which exports the same NVTX 2
# functions (nvtxRangePushA, nvtxRangePop, ...).
CUDA_NVTX_PACKAGES=(
  nvidia-nvtx==13.0.85
)

cuda_log() { printf '[cuda] %s\n' "$*" >&2; }

# cuda_add_exercises: appends every exercise and solution with a `cuda` feature to the arrays
# `packages` (package names) and `features` (NAME/cuda), as build-cuda.sh and check-cuda.sh
# both build them.
cuda_add_exercises() {
  local dir name
  for dir in "$CUDA_REPO_ROOT"/exercises/* "$CUDA_REPO_ROOT"/solutions/*; do
    [ -f "$dir/Cargo.toml" ] || continue
    grep -q '^cuda *=' "$dir/Cargo.toml" || continue
    name=$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$dir/Cargo.toml" | head -n 1)
    packages+=("$name")
    features+=("$name/cuda")
  done
}

# cuda_cargo_args: sets `args` (-p NAME for each of `packages`) and `feature_list` (`features`
# joined by commas) for a cargo command line.
cuda_cargo_args() {
  local p
  args=()
  for p in "${packages[@]}"; do args+=(-p "$p"); done
  feature_list=$(IFS=,; echo "${features[*]}")
}
cuda_die() { printf '[cuda] error: %s\n' "$*" >&2; exit 1; }

# cuda_venv_install PACKAGE==VERSION...: create the venv if needed and install the pins that
# are not already there (a second run does not touch the network).
cuda_venv_install() {
  if [ ! -x "$CUDA_VENV/bin/python" ]; then
    cuda_log "creating virtual environment $CUDA_VENV"
    python3 -m venv "$CUDA_VENV" ||
      cuda_die "python3 -m venv failed: install python3-venv (Debian: apt-get install python3-venv) and rerun"
  fi
  local installed missing=() pkg
  installed=$("$CUDA_VENV/bin/python" -m pip freeze --disable-pip-version-check 2>/dev/null || true)
  for pkg in "$@"; do
    grep -qixF "$pkg" <<<"$installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    cuda_log "pip install ${missing[*]}"
    "$CUDA_VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$@" ||
      cuda_die "pip could not install the pinned CUDA packages into $CUDA_VENV (is PyPI reachable?)"
  fi
  CUDA_TREE=$("$CUDA_VENV/bin/python" -c 'import nvidia, os; print(os.path.join(nvidia.__path__[0], "cu13"))') ||
    cuda_die "the nvidia packages in $CUDA_VENV have no cu13 folder; delete $CUDA_VENV and rerun"
  [ -x "$CUDA_TREE/bin/nvcc" ] || cuda_die "no nvcc at $CUDA_TREE/bin/nvcc; delete $CUDA_VENV and rerun"
}

# cuda_target [ARCH]: validate the target architecture and export it twice: CUDA_ARCH (read by
# exercise 5's build.rs) and CUDA_COMPUTE_CAP (read by candle-kernels through cudaforge), so
# candle's kernels and exercise 5's are built for the same GPU. ARCH is nvcc's form (sm_90a) or
# a compute capability (90); without it CUDA_ARCH, then CUDA_COMPUTE_CAP, then sm_90a. cudaforge
# adds the "a" (architecture-specific code) from 90 on, so 90 is always sm_90a: PTX that loads
# on Hopper (H100, H200) only, while sm_80 PTX is compiled by the driver for any GPU from Ampere on.
cuda_target() {
  local value=${1:-${CUDA_ARCH:-${CUDA_COMPUTE_CAP:-sm_90a}}} arch what
  case "${value#sm_}" in
    75) arch=sm_75 what="Turing: T4, RTX 20xx; also runs on every newer GPU" ;;
    80) arch=sm_80 what="Ampere: A100, A30; also runs on every newer GPU" ;;
    86) arch=sm_86 what="Ampere: A10, A40, RTX 30xx; also runs on every newer GPU" ;;
    89) arch=sm_89 what="Ada: L4, L40S, RTX 40xx; also runs on Hopper and newer" ;;
    90 | 90a) arch=sm_90a what="Hopper: H100, H200 only" ;;
    *) cuda_die "target architecture \"$value\" is not one this course builds for: use sm_90a (H100/H200, the default), sm_89 (L4, RTX 40xx), sm_86 (A10, RTX 30xx), sm_80 (A100; its PTX also runs on Hopper) or sm_75 (T4)" ;;
  esac
  cuda_log "target architecture $arch ($what)"
  export CUDA_ARCH=$arch
  arch=${arch#sm_}
  export CUDA_COMPUTE_CAP=${arch%a}
}

# cuda_export_toolchain: put the PyPI toolchain where candle-kernels (cudaforge) and
# cudarc's build scripts look for it.
cuda_export_toolchain() {
  export CUDA_ROOT=$CUDA_TREE CUDA_PATH=$CUDA_TREE CUDA_HOME=$CUDA_TREE
  export PATH=$CUDA_TREE/bin:$PATH
  # Compile kernels with as many threads as cargo may use (default: every core).
  export CUDAFORGE_THREADS=${CUDAFORGE_THREADS:-${CARGO_BUILD_JOBS:-$(nproc)}}
  cuda_log "nvcc: $(nvcc --version | tail -n 2 | head -n 1)"
}
