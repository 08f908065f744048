#!/usr/bin/env bash
# The learner's cold start, measured in a fresh clone (issue 14, "Speed"): how long
# `cargo run -p exercise-3` takes to print its table, then `course check 3` right after, and
# which crates each later build compiles. Prints each figure with the machine's load beside it
# (`uptime`): on a shared machine the figures are only as good as that load.
#
#   git clone /path/to/course /tmp/fresh && scripts/measure-cold-start.sh /tmp/fresh [--bench]
#
# The clone must have no target/ folder yet (a cold build); the crates must be downloaded
# (CARGO_HOME shared with a checkout that has built once), as for a learner after `cargo fetch`.
# Steps, all in the dev profile the learner gets:
#   1. cargo run -p exercise-3 (--timings: the per-crate report lands in target/cargo-timings/)
#   2. cargo run -p course -- check 3: builds the `course` command (its own crates: the grader,
#      the load client's HTTP stack), then checks; exercise 3 has no tests, so nothing of the
#      exercise is built again
#   3. target/debug/course check 3: the same check once `course` is built (or installed)
#   4. cargo build -p exercise-5, then cargo build -v -p exercise-3: what each compiles
#      (exercise 5 adds only its own crates; exercise 3 then compiles nothing)
#   5. with --bench: is the dev build as fast as release? `gpt2 bench --model synthetic` of the
#      dev build against a build with release's flags (CARGO_PROFILE_DEV_DEBUG=0: the only
#      setting where the two profiles differ, for gpt2, profiler and bench; the dependencies'
#      settings are the same), alternated twice. Needs an idle machine to say anything.
set -euo pipefail
case "${1:-}" in
-h|--help|"") sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; [ -n "${1:-}" ]; exit ;;
esac
clone="$(cd "$1" && pwd)"
bench=false
[ "${2:-}" = --bench ] && bench=true
cd "$clone"
[ -e target ] && { echo "measure-cold-start.sh: $clone/target exists: measure in a fresh clone (git clone ... && $0 DIR)" >&2; exit 2; }
export CARGO_TERM_COLOR=never
# `course check` asks for a learner id once; there is no terminal here to answer it.
export COURSE_LEARNER_ID=${COURSE_LEARNER_ID:-cold-start}
log="$(mktemp -d)"

load() { uptime | sed 's/.*load average: /load average /'; }
# timed LABEL COMMAND...: runs it, its output in $log/LABEL.log; prints the wall time, the CPU
# time of it and its children (user + system: less sensitive to other load than the wall time),
# the load before and after, and how many crates it compiled.
timed() {
  local label="$1" before
  shift
  before="$(load)"
  if ! /usr/bin/time -f '%e %U %S' -o "$log/$label.time" "$@" >"$log/$label.log" 2>&1; then
    tail -n 30 "$log/$label.log"
    echo "FAIL $label: $*" >&2
  fi
  # (GNU time puts "Command exited with non-zero status N" first when it fails.)
  read -r wall user sys < <(tail -n 1 "$log/$label.time")
  printf '%-42s %7.1f s wall %7.1f s CPU   (%s; after: %s; %s crates compiled)\n' "$*" "$wall" "$(echo "$user + $sys" | bc)" \
    "$before" "$(load)" "$(grep -c '^ *Compiling ' "$log/$label.log" || true)"
}

echo "clone: $clone at $(git rev-parse --short HEAD); $(nproc) CPUs; $(rustc --version)"
timed run3 cargo run --timings -p exercise-3
grep -E '^ *Finished' "$log/run3.log" | sed 's/^ */    cargo: /'
grep -qE 'self' "$log/run3.log" && echo "    the table was printed" || echo "    no table in the output: see $log/run3.log"
timed check3-cargo cargo run -p course -- check 3
echo "    compiled by it: $(grep '^ *Compiling ' "$log/check3-cargo.log" | awk '{print $2}' | tr '\n' ' ')"
grep -E 'gpt2|profiler|candle|exercise-3' <(grep '^ *Compiling ' "$log/check3-cargo.log") && echo "    (exercise 3's crates were compiled again)" || echo "    none of exercise 3's crates (candle, gpt2, profiler, exercise-3) compiled again"
timed check3 target/debug/course check 3
grep -E '^==> \[1/3\]' "$log/check3.log" | sed 's/^/    /'
timed build5 cargo build -p exercise-5
echo "    compiled by it: $(grep '^ *Compiling ' "$log/build5.log" | awk '{print $2}' | tr '\n' ' ')"
timed build3-again cargo build -v -p exercise-3
echo "    fresh: $(grep -c '^ *Fresh ' "$log/build3-again.log" || true) crates; compiled: $(grep '^ *Compiling ' "$log/build3-again.log" | awk '{print $2}' | tr '\n' ' ')"
if $bench; then
  timed gpt2-dev cargo build -p gpt2
  cp target/debug/gpt2 "$log/gpt2-dev"
  timed gpt2-release-flags env CARGO_PROFILE_DEV_DEBUG=0 cargo build -p gpt2
  cp target/debug/gpt2 "$log/gpt2-release-flags"
  for round in 1 2; do
    for build in dev release-flags; do
      echo "gpt2 bench ($build build, round $round; $(load)):"
      "$log/gpt2-$build" bench --model synthetic --device cpu | sed -n '/^case/,/^decode_b16/p' | sed 's/^/    /'
    done
  done
fi
echo "logs: $log; timings: $(ls "$clone"/target/cargo-timings/cargo-timing-*.html 2>/dev/null | head -n 1)"
