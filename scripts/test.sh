#!/usr/bin/env bash
# The whole test suite, from a fresh clone. Installs what the tests need (cargo-nextest,
# mdBook + mdbook-quiz into target/tools, Chromium and Python packages as the scripts need
# them), builds every binary and test once in the release profile (the same profile
# `course run` uses, so nothing is compiled twice), then runs:
#   1. the Rust tests of every crate, exercise and solution (cargo nextest);
#   2. the book: build with quiz validation, link and include checks, a headless-Chromium quiz test;
#   3. the real-client check: the official `openai` Python package against `gpt2 serve`;
#   4. the exercises: each untouched exercise fails `course check`, each solution passes it;
#   5. the CUDA code compiles (no GPU needed: nvcc and the CUDA headers come from PyPI);
#   6. the gpt2, profiler, bench and grader tests on aarch64 (Apple Silicon's kind of CPU),
#      cross-compiled and run under qemu-user.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
started=$SECONDS

step() { printf '\n==> [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest"
  cargo install --locked cargo-nextest
fi

step "building every package, binary and test (release)"
cargo build --release --workspace --all-targets

# The untouched exercises' own tests fail on purpose (they are the learner's to-do list);
# check-exercises.sh below proves that they fail and that the solutions pass.
step "Rust tests (every crate and solution)"
cargo nextest run --release --workspace --no-fail-fast -E 'not package(/^exercise-/)' 

step "book tools (mdBook, mdbook-quiz)"
scripts/install-book-tools.sh

step "book: build, links, includes, quiz bank, browser"
scripts/test-book.sh

step "openai client against gpt2 serve"
python3 scripts/openai-client-check.py --binary target/release/gpt2

step "exercises and solutions through course check"
scripts/check-exercises.sh

step "CUDA code compiles (cargo check --features cuda with PyPI's nvcc)"
scripts/check-cuda.sh

step "aarch64: gpt2, profiler, bench and grader tests cross-compiled and run under qemu-user"
scripts/test-aarch64.sh

step "all test suites passed"
