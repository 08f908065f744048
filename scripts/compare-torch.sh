#!/usr/bin/env bash
# The engine against PyTorch eager on one CPU: `gpt2 bench` on every kernel path this CPU
# supports and scripts/torch-reference.py at its default and AVX2-limited ISA, back to back
# with the same thread count, then one table of median-time ratios (ours / PyTorch) per case.
set -euo pipefail

# The one place this script names the binary (the build profile may move).
GPT2=${GPT2:-target/debug/gpt2}
PYTHON=${PYTHON:-target/venv-torch/bin/python}

usage() {
  cat <<'EOF'
Usage: scripts/compare-torch.sh [--no-build] [--threads N] [--repeats N] [--warmup N]
                                [--paths "avx512 avx2 portable"] [--isas "auto avx2"]
                                [--model synthetic|gpt2|DIR] [--out DIR]

Runs, one after the other with the same thread count:
  gpt2 bench --json --kernels P    for each kernel path P this CPU supports (of --paths)
  torch-reference.py --isa I       for each PyTorch ISA I (of --isas: `auto` is PyTorch's
                                   default, `avx2` limits ATen, MKL and oneDNN to AVX2)
then prints each run's median ms per case and the ratios ours / PyTorch (above 1.0: the engine
is slower) for: avx512 ÷ auto, avx2 ÷ avx2, avx2 ÷ auto, portable ÷ auto, portable ÷ avx2, and
the same ratios of each run's fastest repeat. The load average (`uptime`) is recorded before
each run and after the last: on a busy machine the ratios are noise.

Options:
  --no-build   use $GPT2 as it is [default: `cargo build -p gpt2 --bin gpt2` first]
  --threads N  threads for both engines (RAYON_NUM_THREADS, torch.set_num_threads)
               [default: nproc]
  --repeats N, --warmup N   passed to both [default: 10 and 3, their defaults]
  --paths      kernel paths to try; one this CPU lacks is skipped [default: avx512 avx2 portable]
  --isas       PyTorch ISAs [default: auto avx2]
  --model      gpt2 bench's --model [default: synthetic: GPT-2 small's shapes, random weights,
               as PyTorch's side uses; speed does not depend on the values]
  --out DIR    where the JSON reports, uptime.txt and ratios.json go
               [default: target/compare-torch]
Environment: GPT2 (the binary) [default: target/debug/gpt2], PYTHON (with torch and
transformers) [default: target/venv-torch/bin/python].
EOF
}

build=1
threads=$(nproc)
repeats=10
warmup=3
paths="avx512 avx2 portable"
isas="auto avx2"
model=synthetic
out=target/compare-torch
while [ $# -gt 0 ]; do
  case "$1" in
    --no-build) build=0 ;;
    --threads) threads=$2; shift ;;
    --repeats) repeats=$2; shift ;;
    --warmup) warmup=$2; shift ;;
    --paths) paths=$2; shift ;;
    --isas) isas=$2; shift ;;
    --model) model=$2; shift ;;
    --out) out=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "compare-torch.sh: unknown argument \`$1\` (see --help)" >&2; exit 2 ;;
  esac
  shift
done

cd "$(dirname "$0")/.."
if [ "$build" = 1 ]; then
  cargo build -p gpt2 --bin gpt2
fi
if [ ! -x "$GPT2" ]; then
  echo "compare-torch.sh: $GPT2 is not built: run without --no-build, or set GPT2 to the binary" >&2
  exit 1
fi
if ! "$PYTHON" -c 'import torch, transformers' 2>/dev/null; then
  cat >&2 <<EOF
compare-torch.sh: $PYTHON cannot import torch and transformers. Install them once, e.g.:
  python3 -m venv target/venv-torch && target/venv-torch/bin/pip install torch transformers
or set PYTHON to an interpreter that has them.
EOF
  exit 1
fi

mkdir -p "$out"
rm -f "$out"/bench-*.json "$out"/torch-*.json "$out"/ratios.json
: > "$out/uptime.txt"
export RAYON_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
# Unset for this script alone: they slow current numpy and MKL builds on some processors
# (see the machine notes); neither engine's result depends on them.
unset OPENBLAS_CORETYPE OPENBLAS_L2_SIZE

note_load() { echo "$1: $(uptime)" | tee -a "$out/uptime.txt"; }

for path in $paths; do
  note_load "gpt2 bench --kernels $path"
  log="$out/bench-$path.log"
  if "$GPT2" bench --model "$model" --device cpu --kernels "$path" --warmup "$warmup" --repeats "$repeats" --json "$out/bench-$path.json" > "$log" 2>&1; then
    cat "$log"
  elif grep -q "lacks" "$log"; then
    echo "  skipped: $(grep -m1 lacks "$log")"
  else
    cat "$log" >&2
    echo "compare-torch.sh: gpt2 bench --kernels $path failed (log: $log)" >&2
    exit 1
  fi
done
for isa in $isas; do
  note_load "torch-reference.py --isa $isa"
  "$PYTHON" scripts/torch-reference.py --threads "$threads" --isa "$isa" --warmup "$warmup" --repeats "$repeats" --json "$out/torch-$isa.json"
done

note_load "done"

# The ratio is gpu-check's (one definition of "ours / theirs per case").
"$PYTHON" - "$out" <<'EOF'
import json, os, sys
sys.path.insert(0, os.path.join("scripts", "gpu-check"))
from gpu_check import bench_cases, ratios

out = sys.argv[1]
def load(name):
    path = os.path.join(out, name)
    if not os.path.isfile(path):
        return None
    with open(path) as f:
        return bench_cases(json.load(f), path)

ours = {p: load(f"bench-{p}.json") for p in ("avx512", "avx2", "portable")}
theirs = {i: load(f"torch-{i}.json") for i in ("auto", "avx512", "avx2", "sse4")}
ours = {k: v for k, v in ours.items() if v}
theirs = {k: v for k, v in theirs.items() if v}
cases = list(next(iter(ours.values()), {}) or next(iter(theirs.values()), {}))

runs = [(f"gpt2 {p}", v) for p, v in ours.items()] + [(f"torch {i}", v) for i, v in theirs.items()]
print("\nmedian ms per case")
print(f"{'case':<18}" + "".join(f"{name:>15}" for name, _ in runs))
for c in cases:
    print(f"{c:<18}" + "".join(f"{v.get(c, float('nan')):>15.2f}" for _, v in runs))

pairs = [(p, i) for p, i in (("avx512", "auto"), ("avx2", "avx2"), ("avx2", "auto"), ("portable", "auto"), ("portable", "avx2"))
         if p in ours and i in theirs]
table = {f"{p}/torch-{i}": ratios(ours[p], theirs[i]) for p, i in pairs}
print("\nratio ours / torch (median; above 1.0 the engine is slower)")
print(f"{'case':<18}" + "".join(f"{name:>22}" for name in table))
for c in cases:
    print(f"{c:<18}" + "".join(f"{r.get(c, float('nan')):>21.2f}x" for r in table.values()))

# The same ratios of each run's fastest repeat: on a busy machine the least-disturbed figure
# (the median above is the one the target is stated in).
def fastest(name):
    with open(os.path.join(out, name)) as f:
        return {r["name"]: r["min_ms"] for r in json.load(f)["results"]}
fast = {f"{p}/torch-{i}": ratios(fastest(f"bench-{p}.json"), fastest(f"torch-{i}.json")) for p, i in pairs}
print("\nratio of fastest runs ours / torch (min; the least disturbed on a busy machine)")
print(f"{'case':<18}" + "".join(f"{name:>22}" for name in fast))
for c in cases:
    print(f"{c:<18}" + "".join(f"{r.get(c, float('nan')):>21.2f}x" for r in fast.values()))
with open(os.path.join(out, "ratios.json"), "w") as f:
    json.dump({"median": table, "min": fast}, f, indent=2)
EOF
echo "reports, uptime.txt and ratios.json in $out"
