#!/usr/bin/env bash
# The whole test suite, from a fresh clone: installs what the tests need, builds every
# binary and test once (release profile, so `course run` reuses the same build), runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

step() { printf '\n==> %s\n' "$*"; }

if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest"
  cargo install --locked cargo-nextest
fi

step "building every package and test (release)"
cargo build --release --workspace --all-targets

step "running the Rust tests"
cargo nextest run --release --workspace --no-fail-fast

for extra in scripts/test-book.sh; do
  if [ -x "$extra" ]; then
    step "$extra"
    "$extra"
  fi
done
