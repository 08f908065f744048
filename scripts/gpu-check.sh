#!/usr/bin/env bash
# Checks the course's GPU figures in one command, on a machine with an NVIDIA GPU and the
# binaries scripts/build-cuda.sh built (it rebuilds nothing and needs no network):
#
#   scripts/gpu-check.sh                                  # binaries from target/cuda/release
#   scripts/gpu-check.sh --bin-dir DIR --out DIR          # or from DIR (gpt2, or gpt2.xz from --pack)
#   scripts/gpu-check.sh --device cpu --bin-dir target/debug     # the same steps on the CPU (CI)
#   scripts/gpu-check.sh --pack DIR                       # copy the CUDA binaries, xz-compressed, to DIR
#
# Steps, each under its own `timeout`, all within a budget of 285 s (GPU_CHECK_BUDGET_S):
#   1. preflight: nvidia-smi answers; the driver is 580 or newer (CUDA 13.0's PTX needs it) and
#      the GPU's compute capability runs the build's architecture (cuda-build.txt; sm_90a, the
#      default, loads on Hopper only); libcuda.so.1 and the CUDA 13 libraries load; gpt2 starts.
#      On a failure it writes ldd of each binary, the library search path and nvidia-smi's
#      output to logs/preflight-diagnostics.log, then stops;
#   2. parity: `gpt2 logits --json` on CUDA (f32, f16, bf16) against the CPU (f32) on the same
#      weights and ids, for the committed tiny fixture and the synthetic GPT-2 small. Bounds:
#      f32 max |error| <= 1e-3; f16 <= 2e-2 and bf16 <= 1e-1 of max(1, max |CPU logit|); and
#      the tiny fixture's q8_0 and q4_0 GGUF files (candle's quantized matmul on CUDA, the
#      engine's kernels on the CPU): <= 5e-2 of it (gpu_check.py BOUNDS says why);
#   3. profile: `gpt2 profile` (synthetic GPT-2 small, B=1 T=8) with --cuda-timing events and
#      with --cuda-timing sync: both tables, and their total wall times. A step fails unless its
#      report.json is a CUDA report whose self CUDA total (stream time) is positive and at most
#      1.1x its wall time; the report's warnings are shown;
#   4. exercise 5's tests: solution-5's `--features cuda` test binary (its kernel against
#      candle's unfused ops, f32 and half precision); a test that finds no GPU fails the step;
#   5. bench: `gpt2 bench` (forward, prefill, decode at B=1, 8, 16) in each --bench-dtypes;
#   6. serving: `gpt2 serve` through HTTP, six prompts each alone and then all at once
#      (continuous batching); greedy decoding must give every request its alone completion
#      (scripts/gpu-check/serve_check.py; the synthetic GPT-2 tiny on the CPU);
#   7. exercise 3 on the GPU, graded: solution-3 --device cuda fills a submission, `course grade`
#      grades it (it must pass, ranked by self CUDA time);
#   8. Nsight Compute, when `ncu` is on PATH: one launch of exercise 5's fused kernel (64x3072
#      f32), its memory throughput as % of peak and its achieved occupancy (ncu.json);
#   9. PyTorch, when `torch.cuda.is_available()`: scripts/torch-reference.py and
#      scripts/torch-profile.py on the same GPU, and the bench ratios gpt2 / torch (the same
#      quantity on both sides: host-clock latency to a finished result). The profiles' self
#      CUDA totals are shown side by side, never divided: gpt2's is stream time, PyTorch's is
#      CUPTI's kernel time.
# Everything goes under --out, and the run ends with two files there: gpu-check.json (every
# result, the step list, the printed tables) and gpu-check-files.tar.xz (the logs, reports and
# records it was assembled from), so a machine that returns only a few files from one folder
# brings all of it back. A summary is printed at the end. Exit status: 0 passed, 1 a check
# failed, 2 cannot run.
#
# Options:
#   --bin-dir DIR        folder holding gpt2 (or gpt2.xz) [target/cuda/release]
#   --out DIR            the run's folder: gpu-check.json and gpu-check-files.tar.xz [target/gpu-check]
#   --device cuda|cpu    cpu: the same pipeline on the CPU (f32 only, one timed run per case),
#                        which proves the script's logic in CI [cuda]
#   --model NAME|DIR     model for profile and bench: synthetic (GPT-2 small's shapes, seeded
#                        weights: no download), gpt2 (the hub checkpoint, if cached) or a folder [synthetic]
#   --bench-dtypes LIST  comma-separated dtypes for gpt2 bench and torch-reference [f32,bf16]
#   --cuda-lib-dir DIR   folder with libcublas.so.13, libcurand.so.10, libnvrtc.so.13,
#                        libcudart.so.13 (else found in target/cuda-venv or Python's nvidia wheels)
#   --python PYTHON      Python for the PyTorch step [python3]
#   --no-torch           skip the PyTorch step
#   --pack DIR           instead of checking: xz-compress gpt2, solution-3, solution-5, its CUDA
#                        test binary (solution-5-tests), course (the CPU build's when there is
#                        one: it needs no CUDA library) and exercise-3 from --bin-dir into DIR, to
#                        carry to a GPU machine; DIR/bundle.json lists them with their sizes. It
#                        refuses a bundle that, with the repository's files, exceeds the 64 MiB
#                        a device run carries
set -uo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
helper=$repo/scripts/gpu-check/gpu_check.py
export PYTHONDONTWRITEBYTECODE=1

die() { printf 'gpu-check: error: %s\n' "$*" >&2; exit 2; }
log() { printf '[gpu-check] %s\n' "$*" >&2; }

bin_dir=$repo/target/cuda/release
out=$repo/target/gpu-check
device=cuda
model=synthetic
bench_dtypes=f32,bf16
cuda_lib_dir=
python=python3
torch=true
pack=
while [ $# -gt 0 ]; do
  case "$1" in
    --bin-dir | --out | --device | --model | --bench-dtypes | --cuda-lib-dir | --python | --pack)
      [ $# -ge 2 ] || die "$1 needs a value (see scripts/gpu-check.sh --help)"
      case "$1" in
        --bin-dir) bin_dir=$2 ;;
        --out) out=$2 ;;
        --device) device=$2 ;;
        --model) model=$2 ;;
        --bench-dtypes) bench_dtypes=$2 ;;
        --cuda-lib-dir) cuda_lib_dir=$2 ;;
        --python) python=$2 ;;
        --pack) pack=$2 ;;
      esac
      shift 2
      ;;
    --no-torch) torch=false; shift ;;
    -h | --help) awk 'NR > 1 && !/^#/ {exit} NR > 1 {sub(/^# ?/, ""); print}' "$0"; exit 0 ;;
    *) die "unknown argument \"$1\" (see scripts/gpu-check.sh --help)" ;;
  esac
done
case "$device" in cuda | cpu) ;; *) die "--device must be cuda or cpu, not \"$device\"" ;; esac
IFS=, read -r -a dtypes <<<"$bench_dtypes"
for d in "${dtypes[@]}"; do
  case "$d" in f32 | f16 | bf16) ;; *) die "--bench-dtypes: unknown dtype \"$d\" (use f32, f16, bf16)" ;; esac
done
command -v python3 >/dev/null || die "python3 is needed (standard library only) to compare logits and write the JSON"

if [ -n "$pack" ]; then
  mkdir -p "$pack" || die "cannot create $pack"
  [ -x "$bin_dir/gpt2" ] || die "no gpt2 binary in $bin_dir: build it with scripts/build-cuda.sh, or give --bin-dir"
  # gpt2 is what the check runs; solution-3 profiles on CUDA and course grades its results;
  # solution-5-tests runs exercise 5's kernel against candle's ops (and under ncu) and
  # solution-5 is the whole exercise; exercise-3 is what a learner would run there (optional).
  cpu_build=${GPU_CHECK_CPU_BUILD:-$repo/target/debug}
  for b in gpt2 solution-3 course solution-5 solution-5-tests exercise-3; do
    src=$bin_dir/$b
    # course has no CUDA code: the CPU build is smaller and needs no CUDA library.
    [ "$b" = course ] && [ -x "$cpu_build/course" ] && src=$cpu_build/course
    if [ ! -x "$src" ]; then
      [ "$b" = exercise-3 ] && continue
      die "no $b in $bin_dir: scripts/build-cuda.sh builds it (solution-5-tests is solution-5's --features cuda test binary)"
    fi
    xz -T0 -6 -c "$src" >"$pack/$b.xz" || die "xz failed on $src"
  done
  [ -f "$bin_dir/cuda-build.txt" ] && cp "$bin_dir/cuda-build.txt" "$pack/"
  # The device machine carries the repository's files (tracked, and untracked but not
  # ignored) together with the bundle.
  tree_bytes=0
  if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
    tree_bytes=$(cd "$repo" && git ls-files -z --cached --others --exclude-standard |
      xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  fi
  python3 "$helper" bundle --dir "$pack" --tree-bytes "$tree_bytes" || exit 2
  log "on the GPU machine: scripts/gpu-check.sh --bin-dir $pack --out DIR"
  exit 0
fi

# The run's folder. One run per folder at a time (the lock is on the folder itself, so nothing
# is written beside it). It starts empty, since stale files would be read as this run's: only
# an earlier check's folder (its gpu-check.json, or an interrupted run's steps/) or an empty
# one is cleared.
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
exec 9<"$out" || die "cannot open $out"
if command -v flock >/dev/null; then
  flock -n 9 || die "another gpu-check is writing to $out right now: wait for it, or give another --out"
fi
if [ -n "$(ls -A "$out")" ] && [ ! -e "$out/gpu-check.json" ] && [ ! -d "$out/steps" ]; then
  die "--out $out is not empty and holds no earlier gpu-check run: give a new or empty folder"
fi
find "$out" -mindepth 1 -maxdepth 1 -exec rm -rf {} + && mkdir -p "$out/steps" "$out/parity" "$out/logs" ||
  die "cannot clear $out"
# Binaries unpacked from --pack's .xz files are inputs, not results: they stay out of --out.
bin_tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check-bin.XXXXXX") || die "cannot create a temporary folder"
trap 'rm -rf "$bin_tmp"' EXIT
started=$SECONDS
# Seconds for all steps together (the issue's bound is 5 minutes).
budget=${GPU_CHECK_BUDGET_S:-285}

# ---- steps -----------------------------------------------------------------------------------
order=0
failed_required=false
# first_error LOG: the program's `error: ...` line (a backtrace may follow it), else the last line.
first_error() {
  { grep -m 1 -E '^(error|gpu-check: error|Traceback)' "$1" || grep -v '^\s*$' "$1" | tail -n 1; } | cut -c1-240
}

# required GROUP: whether a failure in GROUP fails the check (Nsight Compute and PyTorch are extras).
required() { case "$1" in preflight | parity | profile | bench | serve | exercise) return 0 ;; *) return 1 ;; esac; }

# run_step NAME GROUP TIMEOUT_S COMMAND...: runs COMMAND with stdout+stderr to logs/NAME.log,
# records steps/NN-NAME.json, prints one line. Returns the command's status.
run_step() {
  local name=$1 group=$2 limit=$3 status rc message start
  shift 3
  # The whole check stays inside its budget: a step gets at most what is left of it.
  local left=$((budget - (SECONDS - started)))
  if [ $left -lt 10 ]; then
    order=$((order + 1))
    record_step "$name" "$group" timeout 124 0 "not run: the ${budget} s budget is spent"
    log "timeout $name: not run, the ${budget} s budget is spent"
    required "$group" && failed_required=true
    return 1
  fi
  [ "$limit" -le $left ] || limit=$left
  order=$((order + 1))
  start=$(date +%s.%N)
  timeout --kill-after=10 "$limit" "$@" >"$out/logs/$name.log" 2>&1
  rc=$?
  local seconds
  seconds=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 2))")
  if [ $rc -eq 0 ]; then
    status=ok message=
  elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    status=timeout message="stopped after ${limit} s"
  else
    status=failed
    message="exit $rc: $(first_error "$out/logs/$name.log")"
  fi
  record_step "$name" "$group" "$status" "$rc" "$seconds" "$message"
  if [ "$status" = ok ]; then
    log "ok      $name (${seconds} s)"
  else
    log "$status  $name: $message (log: logs/$name.log)"
    required "$group" && failed_required=true
  fi
  return $rc
}

# record_step NAME GROUP STATUS RC SECONDS MESSAGE
record_step() {
  python3 - "$out/steps/$(printf '%02d' "$order")-$1.json" "$order" "$@" <<'EOF'
import json, sys
path, order, name, group, status, rc, seconds, message = sys.argv[1:9]
json.dump({"order": int(order), "name": name, "group": group, "status": status, "rc": int(rc),
           "seconds": float(seconds), "message": message, "log": f"logs/{name}.log"}, open(path, "w"), indent=2)
EOF
}

skip_step() {
  order=$((order + 1))
  record_step "$1" "$2" skipped 0 0 "$3"
  log "skipped $1: $3"
}

# ---- the binaries ----------------------------------------------------------------------------
# find_bin NAME: the path of NAME in --bin-dir, unpacked from NAME.xz (--pack) if need be; empty
# when there is neither.
find_bin() {
  if [ -x "$bin_dir/$1" ]; then
    echo "$bin_dir/$1"
  elif [ -f "$bin_dir/$1.xz" ]; then
    # xz if installed, else Python's lzma module (a bare GPU image may lack xz-utils).
    { if command -v xz >/dev/null; then xz -dc "$bin_dir/$1.xz"; else
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), sys.stdout.buffer)' "$bin_dir/$1.xz"; fi
    } >"$bin_tmp/$1" && chmod +x "$bin_tmp/$1" || die "cannot unpack $bin_dir/$1.xz"
    echo "$bin_tmp/$1"
  fi
}
gpt2=$(find_bin gpt2) || exit 2
[ -n "$gpt2" ] || die "no gpt2 binary in $bin_dir: build it with scripts/build-cuda.sh (CUDA) or cargo build -p gpt2 (CPU, into target/debug), or give --bin-dir"
solution3=$(find_bin solution-3) || exit 2
course_bin=$(find_bin course) || exit 2
[ -n "$course_bin" ] || { [ -x "$repo/target/debug/course" ] && course_bin=$repo/target/debug/course; }
solution5_tests=$(find_bin solution-5-tests) || exit 2
binaries=("$gpt2")
for b in "$solution3" "$course_bin" "$solution5_tests"; do [ -n "$b" ] && binaries+=("$b"); done

# ---- the end: one JSON, one archive ----------------------------------------------------------
# finish STATUS: writes gpu-check.json (and prints the summary), packs everything else into
# gpu-check-files.tar.xz, and exits with STATUS, or with the checks' own status when STATUS is 0.
finish() {
  local status=$1 rc
  log "finished the steps in $((SECONDS - started)) s"
  python3 "$helper" assemble --work "$out" --out "$out/gpu-check.json"
  rc=$?
  [ $rc -eq 0 ] && $failed_required && rc=1
  [ "$status" -ne 0 ] && rc=$status
  python3 "$helper" archive --work "$out" >&2 ||
    log "could not pack the logs into one archive: they stay in $out as they are"
  log "results: $out/gpu-check.json and $out/gpu-check-files.tar.xz"
  exit $rc
}

# write_meta: the run's description (written again once nvidia-smi has named the GPU).
write_meta() {
  python3 - "$out/meta.json" "$device" "$gpu_line" "$gpt2" "$bin_dir" "$model" "$bench_dtypes" <<'EOF'
import json, os, platform, sys, time
path, device, gpu, gpt2, bin_dir, model, dtypes = sys.argv[1:8]
build, bundle = os.path.join(bin_dir, "cuda-build.txt"), os.path.join(bin_dir, "bundle.json")
meta = {"device_mode": device, "gpu": gpu or None, "host": platform.node(), "cpus": os.cpu_count(),
        "started_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpt2": gpt2, "model": model,
        "bench_dtypes": dtypes.split(","),
        "cuda_build": open(build).read().split("\n") if os.path.isfile(build) else None,
        "bundle": json.load(open(bundle)) if os.path.isfile(bundle) else None}
json.dump(meta, open(path, "w"), indent=2)
EOF
}

# preflight_failed MESSAGE: what the binaries need and what this machine has, into
# logs/preflight-diagnostics.log; then the run ends (status 2) with its two files.
preflight_failed() {
  printf 'gpu-check: error: %s\n' "$1" >&2
  {
    echo "# gpu-check's preflight failed: $1"
    for b in "${binaries[@]}"; do
      echo
      echo "## ldd $b"
      ldd "$b" 2>&1
    done
    echo
    echo "## the library search path"
    echo "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}"
    echo "the loader cache's CUDA libraries (ldconfig -p):"
    ldconfig -p 2>/dev/null | grep -E 'libcuda\.|libcublas|libcurand|libnvrtc|libcudart|libnvtx|libnvToolsExt' || echo "(none)"
    echo
    echo "## nvidia-smi"
    if command -v nvidia-smi >/dev/null; then timeout 30 nvidia-smi 2>&1; else echo "nvidia-smi: not found on PATH ($PATH)"; fi
  } >"$out/logs/preflight-diagnostics.log" 2>&1
  log "ldd, the library path and nvidia-smi's output: logs/preflight-diagnostics.log (in the archive)"
  failed_required=true
  finish 2
}

# fail_preflight_step NAME MESSAGE: a preflight check that is no command of its own failed.
fail_preflight_step() {
  order=$((order + 1))
  record_step "$1" preflight failed 2 0 "$2"
  preflight_failed "$2"
}

# build_arch: what the kernels are built for, from build-cuda.sh's cuda-build.txt.
build_arch() {
  local file=$bin_dir/cuda-build.txt arch cap
  arch=$(sed -n 's/^arch=//p' "$file" 2>/dev/null | head -n 1)
  cap=$(sed -n 's/^compute_cap=//p' "$file" 2>/dev/null | head -n 1)
  if [ -n "$arch" ]; then
    echo "$arch"
  elif [ -n "$cap" ]; then
    # A build that recorded only its compute capability: cudaforge adds "a" from 90 on.
    if [ "$cap" -ge 90 ]; then echo "sm_${cap}a"; else echo "sm_$cap"; fi
  else
    log "no cuda-build.txt in $bin_dir: assuming the default architecture, sm_90a"
    echo sm_90a
  fi
}

# ---- preflight -------------------------------------------------------------------------------
gpu_line=
write_meta
if [ "$device" = cuda ]; then
  command -v nvidia-smi >/dev/null ||
    fail_preflight_step preflight-gpu "nvidia-smi not found: this machine has no NVIDIA driver (or it is not on PATH). The CUDA check needs an NVIDIA GPU; on a CPU machine run scripts/gpu-check.sh --device cpu --bin-dir target/debug"
  gpu_line=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>&1 | head -n 1) ||
    fail_preflight_step preflight-gpu "nvidia-smi failed: $gpu_line (is a GPU visible to this machine or container?)"
  write_meta
  log "GPU: $gpu_line"
  arch=$(build_arch)
  run_step preflight-gpu preflight 30 python3 "$helper" preflight --gpu "$gpu_line" --arch "$arch" --out "$out/preflight.json" ||
    preflight_failed "this GPU cannot run these binaries: $(first_error "$out/logs/preflight-gpu.log")"
  if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1' &&
    ! python3 -c 'import ctypes; ctypes.CDLL("libcuda.so.1")' 2>/dev/null; then
    fail_preflight_step preflight-libcuda "libcuda.so.1 (the NVIDIA driver library) cannot be loaded: the driver is not installed or not mounted into this container; add its folder to LD_LIBRARY_PATH"
  fi
  # The CUDA 13 libraries cudarc links against: from --cuda-lib-dir, this checkout's
  # target/cuda-venv, or the nvidia wheels of a Python install (PyTorch for CUDA 13 has them).
  # Libraries only: NVIDIA's libnvtx3interop.so.1 (an --nvtx build) carries an auxiliary
  # entry "visibility=hidden" that ldd lists as not found and the loader ignores.
  missing_libs() { ldd "$gpt2" 2>/dev/null | awk '/not found/ && $1 ~ /^lib.*\.so/ {print $1}' | tr '\n' ' '; }
  if [ -n "$(missing_libs)" ]; then
    candidates=()
    [ -n "$cuda_lib_dir" ] && candidates+=("$cuda_lib_dir")
    for d in "$repo"/target/cuda-venv/lib/python3*/site-packages/nvidia/cu13/lib; do [ -d "$d" ] && candidates+=("$d"); done
    for py in "$python" python3; do
      while IFS= read -r d; do [ -n "$d" ] && candidates+=("$d"); done < <("$py" - 2>/dev/null <<'EOF'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
for root in nvidia.__path__:
    for d in sorted(glob.glob(os.path.join(root, "*", "lib"))):
        print(d)
EOF
      )
    done
    for d in "${candidates[@]}"; do
      [ -n "$(missing_libs)" ] || break
      for lib in $(missing_libs); do
        if [ -e "$d/$lib" ]; then
          export LD_LIBRARY_PATH=$d${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
          log "CUDA libraries from $d"
          break
        fi
      done
    done
    [ -z "$(missing_libs)" ] ||
      fail_preflight_step preflight-libraries "$gpt2 needs $(missing_libs)but they are not on LD_LIBRARY_PATH: give --cuda-lib-dir with the CUDA 13.0 libraries (scripts/build-cuda.sh's target/cuda-venv/lib/python3*/site-packages/nvidia/cu13/lib, or pip's nvidia-cublas nvidia-curand nvidia-cuda-nvrtc nvidia-cuda-runtime for CUDA 13)"
  fi
fi
if ! run_step preflight preflight 60 "$gpt2" logits --model synthetic-tiny --device "$device" --ids 1,2,3; then
  grep -q 'libcuda.so.1: cannot open' "$out/logs/preflight.log" &&
    preflight_failed "$gpt2 is a CUDA build: it links the NVIDIA driver library (libcuda.so.1) and cannot start without it, even for --device cpu (candle 0.11 links cudarc's libraries at load time). Run it on the GPU machine, or give --bin-dir target/debug (a CPU build)"
  preflight_failed "gpt2 cannot run on $device: $(first_error "$out/logs/preflight.log") (whole output: logs/preflight.log in the archive)"
fi

# ---- parity ----------------------------------------------------------------------------------
# "The quick brown fox jumps over the lazy" in GPT-2's vocabulary; for the tiny fixture
# (vocabulary 512) the same ids modulo 512.
small_ids=464,2068,7586,21831,18045,625,262,16931
tiny_ids=464,20,418,327,125,113,262,35
parity_dtypes=(f32 f16 bf16)
[ "$device" = cpu ] && parity_dtypes=(f32)
parity() { # LABEL MODEL IDS
  local label=$1 m=$2 ids=$3 dtype
  run_step "logits-$label-cpu" parity 120 sh -c "\"\$0\" logits --model \"\$1\" --device cpu --ids \"\$2\" --json >\"\$3\"" \
    "$gpt2" "$m" "$ids" "$out/parity/$label-cpu.logits" || return
  for dtype in "${parity_dtypes[@]}"; do
    run_step "logits-$label-$device-$dtype" parity 120 sh -c "\"\$0\" logits --model \"\$1\" --device \"\$2\" --dtype \"\$3\" --ids \"\$4\" --json >\"\$5\"" \
      "$gpt2" "$m" "$device" "$dtype" "$ids" "$out/parity/$label-$device-$dtype.logits" || continue
    run_step "parity-$label-$dtype" parity 60 python3 "$helper" compare --model "$label" --dtype "$dtype" \
      --ref "$out/parity/$label-cpu.logits" --got "$out/parity/$label-$device-$dtype.logits" --out "$out/parity/$label-$dtype.json"
  done
}
parity tiny-fixture "$repo/crates/gpt2/tests/fixtures/tiny-gpt2" "$tiny_ids"
# The same fixture as llama.cpp's converter and llama-quantize wrote it: on CUDA its q8_0 and
# q4_0 matrices run on candle's quantized matmul, on the CPU on the engine's kernels.
for q in q8_0 q4_0; do
  gguf="$repo/crates/gpt2/tests/fixtures/gguf/tiny-gpt2-$q.gguf"
  run_step "logits-gguf-$q-cpu" parity 120 sh -c "\"\$0\" logits --model \"\$1\" --device cpu --ids \"\$2\" --json >\"\$3\"" \
    "$gpt2" "$gguf" "$tiny_ids" "$out/parity/gguf-$q-cpu.logits" || continue
  run_step "logits-gguf-$q-on-$device" parity 120 sh -c "\"\$0\" logits --model \"\$1\" --device \"\$2\" --ids \"\$3\" --json >\"\$4\"" \
    "$gpt2" "$gguf" "$device" "$tiny_ids" "$out/parity/gguf-$q-$device.logits" || continue
  run_step "parity-gguf-$q" parity 60 python3 "$helper" compare --model "tiny-gguf" --dtype "$q" \
    --ref "$out/parity/gguf-$q-cpu.logits" --got "$out/parity/gguf-$q-$device.logits" --out "$out/parity/gguf-$q.json"
done
if [ "$device" = cuda ]; then
  parity synthetic-small synthetic "$small_ids"
else
  skip_step parity-synthetic-small parity "GPT-2 small parity on CPU against itself proves nothing; the tiny fixture checks the pipeline"
fi

# ---- profile: events and sync ----------------------------------------------------------------
# On the CPU (CI) the fewest steps that still exercise the pipeline; timing modes are CUDA's.
# Whether each report's device times are usable is judged when the JSON is assembled
# (gpu_check.py device_timing_problems): that fails the step.
profile_steps=(--warmup 3 --active 10)
[ "$device" = cpu ] && profile_steps=(--warmup 1 --active 2)
for mode in events sync; do
  run_step "profile-$mode" profile 180 "$gpt2" profile --model "$model" --device "$device" --cuda-timing "$mode" \
    --batch 1 --seq 8 "${profile_steps[@]}" --out "$out/profile-$mode"
  sed -n '1,/^wrote /p' "$out/logs/profile-$mode.log" | sed "s/^/  [$mode] /" >&2
done

# ---- exercise 5's kernel on the device ----------------------------------------------------------
# solution-5's unit tests, built with --features cuda: the fused kernel against candle's unfused
# ops on the GPU (f32, f16, bf16): the fused module's tests only (others may read files by
# the build machine's paths). One thread, so the output of each test stays next to it;
# --nocapture, so a test that found no GPU is seen saying so (gpu_check.py rust-tests).
if [ "$device" != cuda ]; then
  skip_step exercise-5-tests exercise "solution-5's CUDA tests need the GPU (its CPU tests run in scripts/test.sh's \`course-dev check\`)"
elif [ -z "$solution5_tests" ]; then
  order=$((order + 1))
  record_step exercise-5-tests exercise failed 2 0 "no solution-5-tests in $bin_dir: rebuild with scripts/build-cuda.sh and pack again"
  failed_required=true
  log "failed  exercise-5-tests: no solution-5-tests in $bin_dir"
else
  run_step exercise-5-tests exercise 120 "$solution5_tests" fused:: --test-threads 1 --nocapture
  run_step exercise-5-tests-read exercise 30 python3 "$helper" rust-tests --log "$out/logs/exercise-5-tests.log" --out "$out/exercise-5-tests.json"
fi

# ---- bench -----------------------------------------------------------------------------------
bench_args=()
[ "$device" = cpu ] && bench_args=(--warmup 0 --repeats 1)
for dtype in "${dtypes[@]}"; do
  if [ "$device" = cpu ] && [ "$dtype" != f32 ]; then
    skip_step "bench-$dtype" bench "$dtype runs on CUDA only"
    continue
  fi
  run_step "bench-$dtype" bench 180 "$gpt2" bench --model "$model" --device "$device" --dtype "$dtype" "${bench_args[@]}" --json "$out/bench-$dtype.json" &&
    grep -v '^\s*$' "$out/logs/bench-$dtype.log" | sed "s/^/  [bench $dtype] /" >&2
done

# ---- serving: each prompt alone, then all together ----------------------------------------------
# The Rust serving tests run on the CPU only; this is the same property through the server on the
# device. On the CPU (CI) the tiny synthetic model keeps it to seconds.
serve_args=(--model "$model" --max-tokens 16)
[ "$device" = cpu ] && serve_args=(--model synthetic-tiny --max-tokens 8)
run_step serve serve 120 python3 "$repo/scripts/gpu-check/serve_check.py" --gpt2 "$gpt2" --device "$device" \
  "${serve_args[@]}" --out "$out/serve.json" &&
  sed "s/^/  [serve] /" "$out/logs/serve.log" >&2

# ---- exercise 3 on the device, graded ----------------------------------------------------------
# The solution profiles like a learner's run and fills answers.toml from its report; `course grade`
# reads the results as an instructor's grading would (it never runs code), so a pass proves the
# grader accepts this device's report.json, ranked by its self time column.
if [ -z "$solution3" ] || [ -z "$course_bin" ]; then
  skip_step exercise-3 exercise "no solution-3 or course binary in $bin_dir (scripts/build-cuda.sh builds both; --pack packs them)"
else
  submission=$out/cohort/gpu-check/exercises/exercise-3
  mkdir -p "$submission" && cp "$repo/exercises/exercise-3/answers.toml" "$submission/"
  exercise_steps=(--warmup 2 --active 5)
  [ "$device" = cpu ] && exercise_steps=(--warmup 1 --active 1)
  run_step exercise-3-run exercise 180 "$solution3" --model "$model" --device "$device" "${exercise_steps[@]}" --exercise-dir "$submission" &&
    run_step exercise-3-grade exercise 60 "$course_bin" --root "$repo" grade "$out/cohort" --out "$out/grades"
fi

# ---- Nsight Compute: one launch of exercise 5's fused kernel ------------------------------------
# The tier-3 view, where the tool exists. The CUDA test launches the fused kernel twice per
# shape (the op against candle's, then against the CPU) over 1x3072, 8x3072, 64x3072, ...:
# skipping four launches profiles the first 64x3072 f32 one (a 64-token prompt through GPT-2
# small's MLP width). ncu.json records the launch's grid, so the summary says which it was.
if [ "$device" != cuda ]; then
  skip_step ncu ncu "Nsight Compute profiles GPU kernels"
elif ! command -v ncu >/dev/null; then
  skip_step ncu ncu "no ncu (Nsight Compute) on PATH"
elif [ -z "$solution5_tests" ]; then
  skip_step ncu ncu "no solution-5-tests to profile"
else
  # --clock-control none: the GPU keeps its own clocks. ncu's default locks them to base,
  # which changes a shared card's settings and makes its duration disagree with every other
  # step's.
  run_step ncu-fused-kernel ncu 120 ncu --csv --clock-control none --kernel-name regex:fused_bias_gelu --launch-skip 4 --launch-count 1 \
    --metrics "$(python3 "$helper" ncu-metrics)" \
    "$solution5_tests" --exact fused::tests::matches_the_unfused_ops_within_1e_5_on_cuda --test-threads 1 &&
    run_step ncu-read ncu 30 python3 "$helper" ncu --log "$out/logs/ncu-fused-kernel.log" --out "$out/ncu.json"
fi

# ---- PyTorch on the same GPU -----------------------------------------------------------------
torch_reason=
if ! $torch; then
  torch_reason="--no-torch"
elif [ "$device" != cuda ]; then
  torch_reason="--device cpu: the PyTorch comparison is for the GPU"
elif ! torch_version=$(timeout 60 "$python" -c 'import torch, transformers, sys; print(torch.__version__); sys.exit(0 if torch.cuda.is_available() else 3)' 2>&1); then
  torch_reason="$python: no PyTorch with CUDA and transformers here ($(tail -n 1 <<<"$torch_version"))"
elif [ $((budget - (SECONDS - started))) -lt 90 ]; then
  torch_reason="the ${budget} s budget: $((SECONDS - started)) s already spent, PyTorch needs about 90"
fi
if [ -n "$torch_reason" ]; then
  python3 -c 'import json, sys; json.dump({"available": False, "reason": sys.argv[2]}, open(sys.argv[1], "w"))' "$out/torch-status.json" "$torch_reason"
  skip_step torch torch "$torch_reason"
else
  python3 -c 'import json, sys; json.dump({"available": True, "version": sys.argv[2]}, open(sys.argv[1], "w"))' "$out/torch-status.json" "$(tail -n 1 <<<"$torch_version")"
  for dtype in "${dtypes[@]}"; do
    run_step "torch-reference-$dtype" torch 150 "$python" "$repo/scripts/torch-reference.py" --device cuda --dtype "$dtype" \
      --json "$out/torch-reference-$dtype.json"
  done
  run_step torch-profile torch 150 "$python" "$repo/scripts/torch-profile.py" --device cuda --batch 1 --seq 8 --warmup 3 --active 10 \
    --json "$out/torch-profile.json"
fi

finish 0
