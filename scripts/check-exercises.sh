#!/usr/bin/env bash
# Lints the course's exercises, as rustlings' `dev check` does for its own:
#   - every untouched exercise builds, answers `--help`, and `course check N` FAILS on it with a
#     message that says what to do next;
#   - every solution, run for real (synthetic GPT-2, small sizes), writes its results and
#     answers, and `course check N` PASSES on them;
#   - exercise 1's terminal quiz (under a pseudo-terminal) writes answers that pass.
#   - exercise 3's prediction, asked by `course run 3` under a pseudo-terminal, is recorded.
# Ends with "N passed, M failed" and exits non-zero on any failure.
#
# `--only 3,4,5` checks those exercises only (their solutions still run in order, so 4 reads
# 3's results: give 3 with 4). The build is the whole workspace either way.
#
# How `course check` runs on a copy: each check gets a temporary course root holding
# exercises/info.toml and copies of the exercise folders (the untouched exercises' tracked files,
# or the solutions' files and their fresh results), with book/ and crates/ linked from this
# checkout. `course check` builds and tests the exercise's package with `cargo` in the course
# root; the temporary root is not a cargo workspace, so CARGO points `course` at a small wrapper
# that runs the same cargo command here, on the real package (exercise-N, or solution-N when the
# copy holds the solution). The grading itself is `course`'s own, on the copy's files.
#
# Uses only the dev profile's builds, the one build test.sh makes (target/debug/course,
# exercise-N, solution-N, gpt2).
set -uo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root" || exit 1
# The learner id every copy's `course run`/`check` and the exercises draw their variants from
# (without a terminal, `course` takes it from here and stores it in the copy's learner.toml).
export COURSE_LEARNER_ID="${COURSE_LEARNER_ID:-check-exercises}"

passed=0
failed=0
server_pid=""
tmp="$(mktemp -d)"

pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }

finish() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  rm -rf "$tmp"
  echo "$passed passed, $failed failed"
  if ((failed > 0)); then exit 1; fi
  exit 0
}
trap finish EXIT

abort() { fail "$*"; exit 1; }

# Prints a log when a step fails, so the reason is in the test output.
show_log() { sed 's/^/     | /' "$1" | tail -n "${2:-40}"; }

numbers=(1 2 3 4 5 6 7)
if [[ "${1:-}" == "--only" && -n "${2:-}" ]]; then
  IFS=',' read -r -a numbers <<<"$2"
elif [[ "${1:-}" == "--help" || "${1:-}" == "-h" ]]; then
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
elif [[ -n "${1:-}" ]]; then
  echo "usage: scripts/check-exercises.sh [--only 3,4,5]" >&2
  exit 2
fi
wants() { [[ " ${numbers[*]} " == *" $1 "* ]]; }
bin="$repo_root/target/debug"

# --- build -----------------------------------------------------------------------------------
# The whole workspace, as test.sh builds it: naming packages one by one would resolve
# dependency features differently and compile them again.
if cargo build --workspace --all-targets >"$tmp/build.log" 2>&1; then
  pass "build: the workspace, course, gpt2, exercise-1..7 and solution-1..7 included (dev profile)"
else
  show_log "$tmp/build.log"
  abort "build: cargo build --workspace --all-targets"
fi

# --- the cargo wrapper `course` calls --------------------------------------------------------
# `course check N` runs `cargo build|test -p exercise-N` in the course root (for an exercise with
# tests); this runs it here instead, with exercise-N renamed to $CHECK_PACKAGE_PREFIX-N.
# `course run N` runs `cargo run -p exercise-N -- ARGS`: this runs the built binary on the
# copy's folder ($CHECK_EXERCISE_DIR).
#
# The wrapper builds and tests as the whole workspace, which test.sh has already compiled, and
# runs only the package's own tests (nextest's filter): `-p exercise-N` would compile the same
# dependencies (crates/workspace-hack aligns their features) but gpt2 and the exercise again,
# gpt2 without its `serve` feature.
cat >"$tmp/cargo-in-checkout" <<EOF
#!/usr/bin/env bash
sub="\$1"; shift
package=""
while [ \$# -gt 0 ]; do
  case "\$1" in
    -p) package="\$2"; shift ;;
    --release) ;; # only a cuda build passes it; this wrapper builds for the CPU
    --) shift; break ;;
    *) echo "cargo-in-checkout: unexpected argument \$1" >&2; exit 2 ;;
  esac
  shift
done
case "\$package" in
  exercise-[0-9]*) package="\${CHECK_PACKAGE_PREFIX:-exercise}-\${package#exercise-}" ;;
esac
cd "$repo_root" || exit 2
case "\$sub" in
  build) exec cargo build --workspace --all-targets ;;
  test) exec cargo nextest run --workspace --no-fail-fast -E "package(\$package)" ;;
  run) exec "$bin/\$package" --exercise-dir "\$CHECK_EXERCISE_DIR" "\$@" ;;
  *) echo "cargo-in-checkout: unexpected subcommand \$sub" >&2; exit 2 ;;
esac
EOF
chmod +x "$tmp/cargo-in-checkout"

# make_root DIR KIND: a course root whose exercise folders are copies of the untouched exercises'
# tracked files (KIND=exercises) or of the solutions' tracked files (KIND=solutions).
make_root() {
  local dir="$1" kind="$2" n file
  mkdir -p "$dir/exercises"
  cp exercises/info.toml "$dir/exercises/"
  ln -s "$repo_root/book" "$dir/book"
  ln -s "$repo_root/crates" "$dir/crates"
  for n in "${numbers[@]}"; do
    while IFS= read -r file; do
      mkdir -p "$dir/exercises/exercise-$n/$(dirname "${file#"$kind/exercise-$n/"}")"
      cp "$file" "$dir/exercises/exercise-$n/${file#"$kind/exercise-$n/"}"
    done < <(git ls-files "$kind/exercise-$n")
  done
}

# course_check ROOT PREFIX N LOG: runs `course --root ROOT check N`; returns its exit code.
course_check() {
  CARGO="$tmp/cargo-in-checkout" CHECK_PACKAGE_PREFIX="$2" NO_COLOR=1 \
    "$bin/course" --root "$1" check "$3" >"$4" 2>&1
}

# expect_text LOG TEXT...: every TEXT occurs in LOG.
expect_text() {
  local log="$1" text
  shift
  for text in "$@"; do
    grep -qF -- "$text" "$log" || { echo "     missing from the output: $text"; return 1; }
  done
}

# --- the exercises' own files ----------------------------------------------------------------
for n in "${numbers[@]}"; do
  if grep -rqs "TODO" "exercises/exercise-$n/src" "exercises/exercise-$n/README.md"; then
    pass "exercise-$n has TODOs"
  else
    fail "exercise-$n has no TODO in src/ or README.md"
  fi
done
# (That each answers.toml is info.toml's answers_template is a cargo test:
# crates/grader/tests/templates.rs.)

# --- untouched exercises: build, --help, and a check that fails helpfully --------------------
untouched="$tmp/untouched"
make_root "$untouched" exercises
declare -A expected_failure=(
  [1]="unanswered|Not passed yet|course hint 1"
  [2]="tests fail|percentile: write it in exercises/exercise-2/src/stats.rs"
  [3]="this results file is missing|course run 3|Not passed yet"
  [4]="tests fail|share_pct: write it in exercises/exercise-4/src/budget.rs"
  [5]="tests fail|fused_bias_gelu is not written yet"
  [6]="unanswered|Not passed yet|course hint 6"
  [7]="this results file is missing|course run 7|Not passed yet"
)
for n in "${numbers[@]}"; do
  if "$bin/exercise-$n" --help >"$tmp/help.log" 2>&1 && expect_text "$tmp/help.log" "Usage:" "Exercise $n"; then
    pass "exercise-$n --help"
  else
    show_log "$tmp/help.log"
    fail "exercise-$n --help"
  fi
  log="$tmp/untouched-$n.log"
  course_check "$untouched" exercise "$n" "$log"
  rc=$?
  IFS='|' read -r -a texts <<<"${expected_failure[$n]}"
  if ((rc != 0)) && expect_text "$log" "${texts[@]}"; then
    pass "untouched exercise $n: course check $n fails and says what to do (${expected_failure[$n]})"
  else
    show_log "$log"
    fail "untouched exercise $n: course check $n should fail (exit $rc) with: ${expected_failure[$n]}"
  fi
done

# Exercise 1 without a terminal explains how to fill answers.toml by hand.
if ! wants 1; then
  :
elif "$bin/exercise-1" --exercise-dir "$untouched/exercises/exercise-1" </dev/null >"$tmp/notty.log" 2>&1 &&
  expect_text "$tmp/notty.log" "not a TTY" "route-why =" "answers.toml"; then
  pass "exercise-1 without a terminal explains how to answer by hand"
else
  show_log "$tmp/notty.log"
  fail "exercise-1 without a terminal"
fi

# --- solutions: run them for real, then check them ------------------------------------------
solved="$tmp/solved"
make_root "$solved" solutions
dir_of() { echo "$solved/exercises/exercise-$1"; }

run_solution() { # N LABEL COMMAND...
  local n="$1" label="$2"
  shift 2
  if "$@" >"$tmp/solution-$n.log" 2>&1; then
    pass "solution-$n runs: $label"
  else
    show_log "$tmp/solution-$n.log"
    fail "solution-$n runs: $label"
  fi
}

# Solution 2 starts `gpt2 serve` itself ($bin/gpt2, beside it) at batch 8, calibrates its
# saturation, then loads batch 8 and 16 below and above it.
wants 2 && run_solution 2 "gpt2 serve at batch 8 vs 16, below and above batch 8's saturation, 3 × 8 requests of 8 tokens" \
  "$bin/solution-2" --model synthetic --calibration-requests 16 --replicates 3 --requests 8 --max-tokens 8 --prompt-words 8 --no-progress --exercise-dir "$(dir_of 2)"
wants 3 && run_solution 3 "profile a forward pass, synthetic GPT-2" \
  "$bin/solution-3" --model synthetic --exercise-dir "$(dir_of 3)"
wants 4 && run_solution 4 "budget of the illustrative table and of solution 3's profile" \
  "$bin/solution-4" --exercise-dir "$(dir_of 4)"
wants 5 && run_solution 5 "fused op checked, profiled both ways, benchmarked" \
  "$bin/solution-5" --model synthetic --prompt-len 8 --output-len 4 --warmup 1 --repeats 3 --exercise-dir "$(dir_of 5)"

# Exercise 7 needs `gpt2 serve`: start it on a free port and wait until it answers.
if wants 7; then
"$bin/gpt2" serve --model synthetic --port 0 --max-batch-size 8 >"$tmp/serve.log" 2>&1 &
server_pid=$!
base_url=""
for _ in $(seq 1 120); do
  base_url="$(grep -oE 'http://127\.0\.0\.1:[0-9]+' "$tmp/serve.log" | head -n 1)"
  # The server prints its address once it listens; /health confirms it where curl exists.
  if [[ -n "$base_url" ]] && { ! command -v curl >/dev/null 2>&1 || curl -sf "$base_url/health" >/dev/null 2>&1; }; then break; fi
  base_url=""
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.5
done
if [[ -n "$base_url" ]]; then
  pass "gpt2 serve --model synthetic answers at $base_url"
  run_solution 7 "a lone request, a sweep to the knee, then R below it and 2R, against gpt2 serve" \
    "$bin/solution-7" --base-url "$base_url" --sweep-requests 8 --requests 12 --max-tokens 4 --prompt-words 8 --no-progress --exercise-dir "$(dir_of 7)"
else
  show_log "$tmp/serve.log"
  fail "gpt2 serve did not start, so solution 7 cannot be run"
fi
kill "$server_pid" 2>/dev/null
wait "$server_pid" 2>/dev/null
server_pid=""
fi

for n in "${numbers[@]}"; do
  log="$tmp/solved-$n.log"
  if course_check "$solved" solution "$n" "$log" && expect_text "$log" "Exercise $n passes"; then
    pass "solution $n: course check $n passes"
  else
    show_log "$log" 60
    fail "solution $n: course check $n should pass"
  fi
done

# --- exercise 3's prediction in a terminal ---------------------------------------------------
# `course run 3` asks before the profile runs; the answers go into [prediction] with the time and
# whether a report existed (none did), and the run ends with the guess beside the measurement.
if ! wants 3; then
  :
elif ! command -v script >/dev/null 2>&1; then
  echo "skip exercise-3's prediction in a terminal: \`script\` (util-linux) is not installed"
else
  predict="$tmp/predict"
  make_root "$predict" exercises
  printf 'matmul\n60\n' |
    CARGO="$tmp/cargo-in-checkout" CHECK_EXERCISE_DIR="$predict/exercises/exercise-3" NO_COLOR=1 \
      script -qec "'$bin/course' --root '$predict' run 3 -- --model synthetic" /dev/null >"$tmp/predict.log" 2>&1
  if expect_text "$predict/exercises/exercise-3/answers.toml" 'op = "matmul"' 'share_pct = 60' 'report_existed = false' 'made_at = "' &&
    expect_text "$tmp/predict.log" 'You predicted `matmul` at 60.0%'; then
    pass "exercise-3: course run 3 in a terminal records the prediction before the profile and shows it beside the measurement"
  else
    show_log "$tmp/predict.log"
    fail "exercise-3: course run 3's prediction in a terminal"
  fi
fi

# --- exercise 1 in a terminal: the answers it writes are graded ------------------------------
# A pseudo-terminal (Python's pty) runs the program for learner `tty-learner`; the driver reads
# each question's id and numbered options as shown (in that learner's order) and types the
# number of the option the bank (crates/grader/bank/routing.toml) marks right.
if ! wants 1; then
  :
elif python3 -c 'import pty' 2>/dev/null; then
  quiz="$tmp/quiz"
  make_root "$quiz" exercises
  printf 'id = "tty-learner"\n' >"$quiz/exercises/learner.toml"
  python3 - "$bin/exercise-1" "$quiz/exercises/exercise-1" crates/grader/bank/routing.toml >"$tmp/tty.log" 2>&1 <<'PY'
import os, pty, re, sys, tomllib
program, folder, bank = sys.argv[1:4]
right = {q["id"]: q["answer"]["answer"] for q in tomllib.load(open(bank, "rb"))["questions"]}
pid, fd = pty.fork()
if pid == 0:
    os.execv(program, [program, "--exercise-dir", folder])
shown = ""
while True:
    try:
        chunk = os.read(fd, 4096).decode(errors="replace")
    except OSError:
        break
    if not chunk:
        break
    shown += chunk
    sys.stdout.write(chunk)
    if shown.rstrip().endswith(":"):
        qid = re.findall(r"Question \d+ of \d+ \(([^)]+)\)", shown)[-1]
        block = shown[shown.rindex(f"({qid})"):]
        options = dict((text.strip(), n) for n, text in re.findall(r"^\s+(\d+)\) (.*)$", block, re.M))
        reply = options.get(right[qid], "The first wants a whole-system figure under load; the second a breakdown of my own code.")
        os.write(fd, (reply + "\n").encode())
        shown = ""
os.waitpid(pid, 0)
PY
  if expect_text "$quiz/exercises/exercise-1/answers.toml" 'route-why = "The first' "# Your six scenarios" &&
    (($(grep -cE '^route-[0-9]+ = "(Benchmark|Profile)"' "$quiz/exercises/exercise-1/answers.toml") == 6)) &&
    course_check "$quiz" exercise 1 "$tmp/tty-check.log"; then
    pass "exercise-1 in a terminal asks the learner's own six scenarios, writes answers.toml (comments kept), and the right answers pass"
  else
    show_log "$tmp/tty.log"
    show_log "$tmp/tty-check.log"
    fail "exercise-1 in a terminal"
  fi
else
  echo "skip exercise-1 in a terminal: python3 has no pty module here"
fi
