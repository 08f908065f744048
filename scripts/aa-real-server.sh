#!/usr/bin/env bash
# The A/A check on the real server: `gpt2 serve` (synthetic weights, --max-batch-size 8) compared
# against itself. For each rate it makes PAIRS pairs of identical load runs (each the bench's
# default 3 replicates of REQUESTS requests, fresh arrival seeds every run), compares each pair
# with `course bench --compare` on P90 TTFT (and output tokens/s), and counts how many pairs were
# called faster or slower and how many intervals left out 1. Illustrative only: 10 pairs cannot
# tell a 5% error rate from 20%; tests/aa_simulation.rs in crates/bench is the calibration.
#
#   scripts/aa-real-server.sh [RATE ...]      # default rates: 1.5 and 3.5 requests/s
#
# Environment: PAIRS (10), REQUESTS (30 a replicate), OUT (target/aa-real-server), BIN
# (target/debug, with gpt2 and course built: cargo build -p gpt2 -p course).
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
rates=("$@")
[ ${#rates[@]} -gt 0 ] || rates=(1.5 3.5)
pairs=${PAIRS:-10}
requests=${REQUESTS:-30}
out=${OUT:-target/aa-real-server}
bin=${BIN:-target/debug}
for program in gpt2 course; do
  [ -x "$bin/$program" ] || { echo "aa-real-server: $bin/$program is missing: cargo build -p gpt2 -p course" >&2; exit 1; }
done
mkdir -p "$out"
"$bin/gpt2" serve --model synthetic --max-batch-size 8 --port 0 >"$out/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null' EXIT
url=""
for _ in $(seq 1 240); do
  url=$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$out/serve.log" | head -n 1 || true)
  [ -n "$url" ] && break
  kill -0 "$server" 2>/dev/null || { cat "$out/serve.log" >&2; exit 1; }
  sleep 0.5
done
[ -n "$url" ] || { echo "aa-real-server: gpt2 serve did not start; see $out/serve.log" >&2; exit 1; }
echo "gpt2 serve at $url; $pairs A/A pairs per rate, 3 replicates of $requests requests a run"
seed=100
for rate in "${rates[@]}"; do
  differ=0; excludes=0; tput_differ=0; arrivals=0
  for pair in $(seq 1 "$pairs"); do
    for side in a b; do
      seed=$((seed + 10))
      "$bin/course" bench --base-url "$url" --model synthetic --rate "$rate" --requests "$requests" --max-tokens 16 \
        --prompt-words 16 --ignore-eos --seed "$seed" --no-progress --label "$side" --out "$out/$rate/$pair$side" >/dev/null 2>&1
    done
    text=$("$bin/course" bench --compare "$out/$rate/${pair}a/bench.json" "$out/$rate/${pair}b/bench.json" --metric ttft_ms.p90)
    line=$(grep -E "B/A|verdict" <<<"$text" | tr -s ' ' | tr '\n' ' ')
    echo "  $rate req/s, pair $pair: $line"
    grep -qE "verdict: (FASTER|SLOWER)" <<<"$text" && differ=$((differ + 1))
    tput=$("$bin/course" bench --compare "$out/$rate/${pair}a/bench.json" "$out/$rate/${pair}b/bench.json" --metric output_tokens_per_s)
    grep -qE "verdict: (FASTER|SLOWER)" <<<"$tput" && tput_differ=$((tput_differ + 1))
    grep -q "no verdict about the servers" <<<"$tput" && arrivals=$((arrivals + 1))
    # The interval leaves out 1: a verdict of faster or slower, or inconclusive with a direction.
    grep -qE "verdict: (FASTER|SLOWER)|verdict: INCONCLUSIVE: .* is (better|worse) by" <<<"$text" && excludes=$((excludes + 1))
  done
    echo "$rate req/s: P90 TTFT faster/slower in $differ of $pairs pairs, interval leaving out 1 in $excludes; output tokens/s faster/slower in $tput_differ, set by the arrivals in $arrivals"
done
