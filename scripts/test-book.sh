#!/usr/bin/env bash
# Tests the course book end to end:
#   1. builds it with mdBook + mdbook-quiz (which validates every quiz file),
#   2. checks every internal link and anchor in the built HTML,
#   3. checks the practice quizzes (ids, choices, one quiz per chapter, no id shared with the
#      grader's bank) and that no graded question of crates/grader/bank appears in any built page,
#      and that every reason given for the activation line (chapters, quizzes, graded bank, key,
#      hints) names one of the three cases of book/src/includes/activation-line.md
#      (scripts/check-activation-reasons.py, with its self-test),
#   4. checks the book's measured figures and pictures: `book-measure --check` (every
#      {{#measured}} key a page uses is in book/measured and every {{#claim}} holds on that
#      committed reference run), every file in book/src/images is a well-formed SVG that a
#      chapter shows, and every experiment of book-measure still runs (its --quick mode, into a
#      temporary folder: the tiny models, seconds once built),
#   5. serves the built book on a loopback port and opens it in headless Chromium, answers a
#      quiz question right and one wrong, and asserts what the quiz shows; saves a screenshot
#      to target/book-quiz.png.
# Ends with "N passed, M failed" and exits non-zero on any failure.
#
#   scripts/test-book.sh           # everything above
#   scripts/test-book.sh --quick   # steps 1-4 without running book-measure --quick, and no browser
#   scripts/test-book.sh --no-experiments   # all but book-measure --quick (the test command's
#                                           # page walk runs it: README's book-measure step)
#
# Installs what it needs when missing: the book tools (scripts/install-book-tools.sh, into
# target/tools), Debian's chromium (apt-get), and the test's npm packages (book/tests); --quick
# needs only the book tools and python3.
set -uo pipefail

quick=0
experiments=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-experiments) experiments=0 ;;
    -h | --help)
      cat <<'EOF'
Usage: scripts/test-book.sh [--quick | --no-experiments]

Builds the course book and tests it: the build log, every include, every internal link and
anchor, the practice quizzes, that no graded question is printed in a page, that every reason
given for the activation line names its case, the PyTorch recipe, the measured figures and
claims against book/measured (book-measure --check), the pictures, and (without --quick) every
experiment behind the figures and pictures (book-measure --quick) and a quiz answered in
headless Chromium.

Options:
  --quick     skip the slow steps: book-measure --quick (it builds and runs every program
              behind the book's figures and pictures) and the browser test (it installs chromium
              and npm packages). For checking a prose or quiz edit in seconds; run the full mode
              before a release.
  --no-experiments
              everything but book-measure --quick: for the test command, whose page walk
              runs the same experiments (README.md's `cargo run -p book-measure -- --quick`),
              so they are not run twice.
  -h, --help  this help
EOF
      exit 0
      ;;
    *)
      echo "test-book: unknown argument '$arg' (try --help)" >&2
      exit 2
      ;;
  esac
done

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root" || exit 1

passed=0
failed=0
server_pid=""

pass() { passed=$((passed + 1)); echo "ok   $*"; }
fail() { failed=$((failed + 1)); echo "FAIL $*"; }

finish() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null
    wait "$server_pid" 2>/dev/null
  fi
  echo "$passed passed, $failed failed"
  if ((failed > 0)); then exit 1; fi
  exit 0
}
trap finish EXIT

# A fatal failure: later steps cannot run without this one.
abort() { fail "$*"; exit 1; }

# Runs a step's command quietly; prints its output only when it fails.
run_quiet() {
  local log
  log="$(mktemp)"
  if "$@" >"$log" 2>&1; then
    rm -f "$log"
    return 0
  fi
  cat "$log"
  rm -f "$log"
  return 1
}

# --- tools -----------------------------------------------------------------------------------
run_quiet scripts/install-book-tools.sh ||
  abort "book tools installed (run scripts/install-book-tools.sh and read its error)"
export PATH="$repo_root/target/tools/bin:$PATH"

# The browser and its npm packages are needed only by the last step, which --quick skips.
chromium_path=""
if ((!quick)); then
  if ! command -v chromium >/dev/null 2>&1; then
    echo "test-book: chromium not found; installing Debian's chromium package"
    sudo_cmd=()
    if [[ "$(id -u)" != 0 ]]; then sudo_cmd=(sudo); fi
    run_quiet "${sudo_cmd[@]}" apt-get update &&
      run_quiet env DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y --no-install-recommends chromium ||
      abort "chromium installed (apt-get install chromium failed; install it by hand and rerun)"
  fi
  chromium_path="$(command -v chromium)"

  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    abort "node and npm available (install Node.js 18 or newer)"
  fi
  if [[ ! -d book/tests/node_modules/puppeteer-core ]] ||
    [[ book/tests/package-lock.json -nt book/tests/node_modules/.package-lock.json ]]; then
    echo "test-book: installing the browser test's npm packages (book/tests)"
    (cd book/tests && PUPPETEER_SKIP_DOWNLOAD=1 run_quiet npm ci --no-audit --no-fund) ||
      abort "npm packages installed in book/tests (npm ci failed; check that npm's registry is reachable)"
  fi
fi

# --- build, links, question bank -------------------------------------------------------------
# mdbook exits 0 even when an include fails (it only logs ERROR), so its log is read too.
build_log="$(mktemp)"
if mdbook build book >"$build_log" 2>&1; then
  pass "mdbook build book (quiz files validated by mdbook-quiz)"
else
  cat "$build_log"
  rm -f "$build_log"
  abort "mdbook build book (see the error above: it names the chapter or quiz file)"
fi
if grep -E '(^|[[:space:]])(ERROR|WARN)[[:space:]]' "$build_log"; then
  fail "mdbook build book logs no errors or warnings (see the lines above)"
else
  pass "mdbook build book logs no errors or warnings"
fi
rm -f "$build_log"

if python3 book/tests/check_includes.py book; then
  pass "every {{#include}} names an existing file and anchor, and nothing is left unexpanded"
else
  fail "every {{#include}} names an existing file and anchor, and nothing is left unexpanded"
fi

if python3 book/tests/check_links.py book/book; then
  pass "internal links and anchors of the built book resolve"
else
  fail "internal links and anchors of the built book resolve"
fi

# python_check LABEL SCRIPT ARGS...: runs one of book/tests' checkers, shows its FAIL lines, and
# passes or fails LABEL with the checker's last line (its count) after it.
python_check() {
  local label=$1 output status
  shift
  output="$(python3 "$@")"
  status=$?
  grep '^FAIL' <<<"$output"
  if ((status == 0)); then
    pass "$label: $(tail -n 1 <<<"$output")"
  else
    fail "$label: $(tail -n 1 <<<"$output")"
  fi
}

python_check "question bank" book/tests/check_quiz_bank.py book

# What exercises 1 and 6 grade (crates/grader/bank) must not be printed by any built page:
# mdbook-quiz embeds the answers of every quiz it shows.
python_check "graded questions are in no built page" book/tests/check_graded_not_in_book.py book crates/grader/bank

# One reason per case for the activation line: every place in the chapters, the practice
# quizzes, the graded bank, the key's rubrics and the exercise hints that says why that line is
# long names a case of book/src/includes/activation-line.md (or includes it), and no phrasing
# true only of large tensors is used outside that case. The checker first proves itself on a
# bad and a good sample.
python_check "the activation-line checker's self-test" scripts/check-activation-reasons.py --self-test
python_check "reasons for the activation line name their case" scripts/check-activation-reasons.py .

# The PyTorch appendix shows these scripts' anchored parts: each must at least compile, and each
# runs when PyTorch is installed (it is optional: the course itself never needs Python). Each
# runs offline, on GPT-2 small's config with random weights.
declare -A example_args=(
  [book/examples/profile_gpt2.py]="--local"
  [book/examples/pytorch_profiler_recipe.py]="--out target/torch-recipe"
)
have_torch=0
python3 -c "import torch, transformers" 2>/dev/null && have_torch=1
for example in book/examples/*.py; do
  if python3 -c "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')" "$example"; then
    pass "$example compiles"
  else
    fail "$example compiles"
  fi
  if ((have_torch == 0)); then
    echo "skip $example not run: torch and transformers are not installed (optional)"
  elif [[ -z "${example_args[$example]+set}" ]]; then
    fail "$example: scripts/test-book.sh does not say how to run it offline (example_args)"
  elif run_quiet python3 "$example" ${example_args[$example]}; then
    pass "$example runs with PyTorch"
  else
    fail "$example runs with PyTorch"
  fi
done

# --- measured figures -----------------------------------------------------------------------
# Every {{#measured NAME.KEY}} a page uses is in book/measured/NAME.json and every {{#claim}}
# holds on that committed reference run (book-measure --check names the page and sentence
# otherwise). It measures nothing, so it runs in --quick mode too.
check_log="$(mktemp)"
if cargo run --quiet -p book-measure -- --check >"$check_log" 2>&1; then
  pass "book-measure --check: $(tail -n 1 "$check_log")"
else
  cat "$check_log"
  fail "book-measure --check: every measured key of the book exists and every claim holds on book/measured (the lines above name page and sentence)"
fi
rm -f "$check_log"

# --- pictures -------------------------------------------------------------------------------
# check_links.py above already fails on a picture a chapter shows but the book lacks; this
# checks the other way round (no stale picture left behind) and that each one parses.
if python3 - book/src <<'PY'
import sys, xml.etree.ElementTree as ET
from pathlib import Path
src = Path(sys.argv[1])
chapters = "\n".join(p.read_text(encoding="utf-8") for p in src.rglob("*.md"))
problems = []
pictures = sorted((src / "images").glob("*")) if (src / "images").is_dir() else []
for picture in pictures:
    if f"images/{picture.name}" not in chapters:
        problems.append(f"{picture}: no chapter shows it (embed it or delete it)")
    if picture.suffix == ".svg":
        try:
            root = ET.parse(picture).getroot()
            if not root.tag.endswith("svg"):
                problems.append(f"{picture}: the root element is <{root.tag}>, not <svg>")
        except ET.ParseError as e:
            problems.append(f"{picture}: not well-formed XML ({e}); rerun `cargo run -p book-measure`")
for p in problems:
    print(f"FAIL {p}")
print(f"{len(pictures)} pictures checked")
sys.exit(1 if problems else 0)
PY
then
  pass "every picture in book/src/images is a well-formed SVG that a chapter shows"
else
  fail "every picture in book/src/images is a well-formed SVG that a chapter shows"
fi

if ((quick)); then
  echo "skip book-measure --quick and the browser test (--quick)"
  exit 0 # the EXIT trap prints the counts
fi

# Every experiment behind the book's figures and pictures (the exercises' programs, gpt2 serve
# and course bench, the A/A simulation) still runs, writes its measured file and draws its
# pictures: book-measure's --quick mode (the tiny models), into a temporary folder, never over
# the committed files.
if ((experiments)); then
  measure_dir="$(mktemp -d)"
  if run_quiet cargo run --quiet -p book-measure -- --quick --no-progress --out "$measure_dir"; then
    pass "book-measure --quick: every experiment behind the book's figures runs and writes its file and pictures"
  else
    fail "book-measure --quick: every experiment behind the book's figures runs and writes its file and pictures (its output is above)"
  fi
  rm -rf "$measure_dir"
else
  echo "skip book-measure --quick (--no-experiments: the page walk runs it)"
fi

# --- the book in a real browser --------------------------------------------------------------
port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory book/book >/dev/null 2>&1 &
server_pid=$!
base_url="http://127.0.0.1:$port"
for _ in $(seq 1 50); do
  if python3 -c "import urllib.request; urllib.request.urlopen('$base_url/index.html', timeout=1)" 2>/dev/null; then
    break
  fi
  sleep 0.1
done

mkdir -p target
counts="$(mktemp)"
node book/tests/quiz-in-browser.mjs \
  --base-url "$base_url" \
  --chromium "$chromium_path" \
  --quiz book/src/quizzes/name-the-question.toml \
  --page name-the-question.html \
  --screenshot target/book-quiz.png \
  --counts "$counts"
browser_status=$?
if [[ -s "$counts" ]]; then
  read -r browser_passed browser_failed <"$counts"
  passed=$((passed + browser_passed))
  failed=$((failed + browser_failed))
fi
rm -f "$counts"
if ((browser_status != 0)) && ((${browser_failed:-0} == 0)); then
  fail "browser test ran to the end (node exited with status $browser_status)"
fi
