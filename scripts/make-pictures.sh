#!/usr/bin/env bash
# Regenerates the book's pictures with the project's own commands, so that they match what a
# learner sees when running the same commands:
#   flamegraph-gpt2-forward.svg   gpt2 profile (one GPT-2 small forward, synthetic weights, CPU)
#   budget.svg                    course bench budget (the illustrative step and that profile)
#   latency-batch-8-vs-16.svg     exercise 2's measurement (solution-2: gpt2 serve at batch 8 vs 16)
#   exercise-3-table.txt          exercise 3's table with its roofline columns and ceilings footer
# Timings are real and come from the machine that runs this script.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: scripts/make-pictures.sh [--quick] [--out DIR] [--build]

Regenerates the book's three pictures and exercise 3's table with the project's own
binaries (the dev profile's, target/debug) and prints what it wrote:
  flamegraph-gpt2-forward.svg  `gpt2 profile --model synthetic --device cpu --mlp stock
                               --remeasure-ceilings` (one GPT-2 small forward, B=1 T=8, as in
                               exercise 3; the machine's ceilings are measured again first, so
                               they come from the same quiet machine as the timings, and cached)
  budget.svg                   `course bench budget --report <that profile's report.json>`
                               (the book's illustrative 40 ms step beside the measured one)
  latency-batch-8-vs-16.svg    `solution-2 --model synthetic` (exercise 2: `gpt2 serve` at
                               --max-batch-size 8 and 16, the same open-loop traffic; TTFT
                               and E2EL CDFs)
  exercise-3-table.txt         `exercise-3 --model synthetic --device cpu`: what a learner's
                               `cargo run -p exercise-3` prints (the table with its roofline
                               columns and the ceilings footer); the budget chapter includes it

Options:
  --out DIR   where to write the pictures [default: book/src/images; with --quick:
              target/pictures-quick]
  --quick     a check that every command still works, in seconds: the tiny synthetic model
              and few repeats (the pictures are not for the book)
  --build     rebuild gpt2, course, solution-2 and exercise-3 first (`cargo build
              -p gpt2 -p course -p solution-2 -p exercise-3`) even when they exist, so the
              pictures match the code as it is now [default: build them only when one is
              missing]
  -h, --help  this help

A full run takes about a minute on a 2-core machine. The timings in the pictures are the
machine's own: before committing the pictures, build the current code (--build, or the
test suite's build) and run this on an otherwise idle machine.
EOF
}

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"

quick=0
build=0
out=""
while (($# > 0)); do
  case "$1" in
    --quick) quick=1 ;;
    --build) build=1 ;;
    --out)
      if (($# < 2)) || [[ -z "$2" ]]; then
        echo "make-pictures: --out needs a folder, e.g. --out book/src/images" >&2
        exit 2
      fi
      out="$2"
      shift
      ;;
    --out=*) out="${1#--out=}" ;;
    -h | --help)
      usage
      exit 0
      ;;
    *)
      echo "make-pictures: unknown argument '$1' (see scripts/make-pictures.sh --help)" >&2
      exit 2
      ;;
  esac
  shift
done
if [[ -z "$out" ]]; then
  if ((quick)); then out=target/pictures-quick; else out=book/src/images; fi
fi
mkdir -p "$out" || {
  echo "make-pictures: cannot create the output folder $out" >&2
  exit 1
}

# --- binaries ---------------------------------------------------------------------------------
bin=target/debug
binaries=(gpt2 course solution-2 exercise-3 solution-7)
missing=()
for b in "${binaries[@]}"; do
  [[ -x "$bin/$b" ]] || missing+=("$b")
done
if ((build)) || ((${#missing[@]} > 0)); then
  if ((${#missing[@]} > 0)); then echo "make-pictures: not built yet: ${missing[*]}"; fi
  echo "make-pictures: cargo build -p gpt2 -p course -p solution-2 -p exercise-3 -p solution-7"
  if ! cargo build -p gpt2 -p course -p solution-2 -p exercise-3 -p solution-7; then
    echo "make-pictures: the build failed (cargo's error is above): fix it and rerun" >&2
    exit 1
  fi
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/make-pictures.XXXXXX")"
server_pid=""
trap '[[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null; rm -rf "$work"' EXIT

# A command as one would type it: arguments with spaces in double quotes.
shown() {
  local a words=()
  for a in "$@"; do
    if [[ "$a" == *" "* ]]; then words+=("\"$a\""); else words+=("$a"); fi
  done
  echo "${words[*]}"
}

# Runs one step's command; on failure prints its output and names the step.
step() {
  local name="$1"
  shift
  echo "make-pictures: $name: $(shown "$@")"
  if ! "$@" >"$work/step.log" 2>&1; then
    cat "$work/step.log" >&2
    echo "make-pictures: the $name step failed (its output is above); the command was: $(shown "$@")" >&2
    exit 1
  fi
}

if ((quick)); then
  model=synthetic-tiny
  model_name="tiny GPT-2"
  profile_steps=(--warmup 1 --active 2)
  bench_sizes=(--requests 8 --max-tokens 4 --prompt-words 8)
  # The tiny model answers in about a millisecond, so a target of 4 × its lone TTFT is within
  # the scheduler's jitter, and 8 requests in one batch never queue: the sweep found no knee, or
  # one below its first rate. Here a fixed 5 ms target, rates from idle to a burst, and one
  # sequence at a time give a knee on any machine: on the development machine a lone request's
  # TTFT was 1.3 ms, 2.6 ms at 80 req/s and 6.5 ms at 320, and a burst of 16 queued for 18 ms
  # (a 20 ms target held at every rate once generation ran on the compute pool).
  sweep_sizes=(--sweep-requests 16 --sweep-rates 5,20,80,320,1280,5120 --target-ms 5 --requests 12 --max-tokens 8 --prompt-words 8)
  serve_batch=1
  ceilings=()
else
  model=synthetic
  model_name="GPT-2 small"
  profile_steps=(--warmup 2 --active 5)
  bench_sizes=()
  sweep_sizes=()
  serve_batch=8
  ceilings=(--remeasure-ceilings)
fi

# --- 1. flame graph of one forward: exercise 3's settings (B=1, T=8, the stock MLP) -----------
step "flame graph" "$bin/gpt2" profile --model "$model" --device cpu --mlp stock --batch 1 --seq 8 \
  "${profile_steps[@]}" "${ceilings[@]}" --out "$work/profile"
cp "$work/profile/flamegraph.svg" "$out/flamegraph-gpt2-forward.svg"

# --- 2. the budget: the illustrative step beside that profile ------------------------------------
step "budget chart" "$bin/course" bench budget --report "$work/profile/report.json" \
  --label "$model_name forward (B=1, T=8, CPU)" --svg "$out/budget.svg"

# --- 3. batch 8 versus 16: exercise 2's measurement, done by its solution -----------------------
# The solution fills in answers.toml next to its results, so it gets a copy of the template.
mkdir -p "$work/exercise-2"
cp exercises/exercise-2/answers.toml "$work/exercise-2/"
step "latency CDF" "$bin/solution-2" --model "$model" --device cpu "${bench_sizes[@]}" \
  --gpt2 "$bin/gpt2" --no-progress --exercise-dir "$work/exercise-2"
cp "$work/exercise-2/results/latency.svg" "$out/latency-batch-8-vs-16.svg"

# --- 4. exercise 3's table: what `cargo run -p exercise-3` prints, with the ceilings just measured -
# Its standard output only (notes such as a first measurement of the ceilings go to standard
# error). Its results go to a scratch copy of the exercise folder; the printed paths are shown
# as a learner's checkout has them (exercises/exercise-3/...), not as this machine's scratch folder.
mkdir -p "$work/exercise-3"
table_cmd=("$bin/exercise-3" --model "$model" --device cpu "${profile_steps[@]}" --exercise-dir "$work/exercise-3")
echo "make-pictures: exercise 3 table: $(shown "${table_cmd[@]}")"
if ! "${table_cmd[@]}" >"$work/exercise-3.out" 2>"$work/step.log"; then
  cat "$work/exercise-3.out" "$work/step.log" >&2
  echo "make-pictures: the exercise 3 table step failed (its output is above); the command was: $(shown "${table_cmd[@]}")" >&2
  exit 1
fi
sed "s|$work/exercise-3|exercises/exercise-3|g" "$work/exercise-3.out" >"$out/exercise-3-table.txt"
if ! grep -q 'Roofline %' "$out/exercise-3-table.txt"; then
  echo "make-pictures: exercise 3 printed no roofline columns (its output: $out/exercise-3-table.txt)" >&2
  exit 1
fi

# --- 5. the SLO sweep and its knee: exercise 7's calibration, done by its solution -----------------
# Against `gpt2 serve` on a free port (port 0: the address it prints), as a learner runs it.
"$bin/gpt2" serve --model "$model" --port 0 --max-batch-size "$serve_batch" >"$work/serve.log" 2>&1 &
server_pid=$!
base_url=""
for _ in $(seq 1 240); do
  base_url="$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$work/serve.log" | head -n 1 || true)"
  [[ -n "$base_url" ]] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.5
done
if [[ -z "$base_url" ]]; then
  cat "$work/serve.log" >&2
  echo "make-pictures: gpt2 serve did not start (its output is above)" >&2
  exit 1
fi
mkdir -p "$work/exercise-7"
cp exercises/exercise-7/answers.toml "$work/exercise-7/"
step "SLO sweep" "$bin/solution-7" --base-url "$base_url" "${sweep_sizes[@]}" --no-progress --exercise-dir "$work/exercise-7"
kill "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null || true
server_pid=""
cp "$work/exercise-7/results/sweep/sweep.svg" "$out/exercise-7-sweep.svg"
grep -E '^(target:|Sweep against| +[0-9.]+ req/s:|knee:|R = |P90 TTFT at R)' "$work/step.log" >"$out/exercise-7-sweep.txt" || true

# Every picture must be a drawing, not an empty file.
for f in flamegraph-gpt2-forward.svg budget.svg latency-batch-8-vs-16.svg exercise-7-sweep.svg; do
  if ! grep -q '<svg' "$out/$f"; then
    echo "make-pictures: $out/$f is not an SVG drawing; rerun and read the step's output" >&2
    exit 1
  fi
done

echo "make-pictures: wrote"
for f in flamegraph-gpt2-forward.svg budget.svg latency-batch-8-vs-16.svg exercise-3-table.txt exercise-7-sweep.svg exercise-7-sweep.txt; do
  printf '  %s (%s bytes)\n' "$out/$f" "$(wc -c <"$out/$f" | tr -d ' ')"
done
cpu="$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//' || true)"
echo "make-pictures: timings from this machine (${cpu:-unknown CPU}, $(nproc) cores, model $model)"
