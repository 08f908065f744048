#!/usr/bin/env bash
# The whole test suite, from a fresh clone. Installs what the tests need (cargo-nextest,
# mdBook + mdbook-quiz into target/tools, Chromium and Python packages as the scripts need
# them), builds every binary and test once in the dev profile (the learner's `cargo run -p
# exercise-N` and `course`'s profile, optimised where timed: root Cargo.toml; into target/debug),
# so nothing is compiled twice, then runs:
#   0. the lints: cargo clippy --workspace --all-targets -- -D warnings (root Cargo.toml's
#      [workspace.lints]);
#   1. the Rust tests of every crate, exercise and solution (cargo nextest);
#   2. the book: build with quiz validation, link and include checks, a headless-Chromium quiz test;
#   3. the real-client check: the official `openai` Python package against `gpt2 serve`;
#   3b. the book's prose: no figure typed where a measured file should render it, the word limits
#      (scripts/check-prose.py, scripts/count-words.py, each with its self-test);
#   4. the exercises (`course-dev check`, driven by exercises/info.toml): each untouched exercise
#      fails `course check`, each solution, run for real, passes it, and the terminal quizzes and
#      exercise 3's prediction prompt work in a pseudo-terminal;
#   4b. the page walk: every command README.md and the book's pages tell a reader to type, run in
#      the pages' order (scripts/page-walk.py, with its self-test);
#   5. the CUDA code compiles (no GPU needed: nvcc and the CUDA headers come from PyPI);
#   6. the gpt2, engine, llama and profiler tests on aarch64 (Apple Silicon's kind of CPU),
#      cross-compiled and run under qemu-user.
# Before the build it checks that each package's own build (`cargo run -p exercise-3`...) would
# compile its dependencies as the workspace's build does, here, on a Mac and on Windows
# (scripts/check-features.py: Cargo's unit graphs, nothing compiled).
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
started=$SECONDS

# The binaries the steps run: the dev profile's (the one build).
bin=target/debug

step() { printf '\n==> [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

if ! cargo nextest --version >/dev/null 2>&1; then
  step "installing cargo-nextest"
  cargo install --locked cargo-nextest
fi

step "every package compiles its dependencies as the workspace does (no compiling: unit graphs)"
for platform in "" aarch64-apple-darwin x86_64-pc-windows-msvc; do
  scripts/check-features.py ${platform:+--target "$platform"}
done

step "the workspace is formatted (cargo fmt --check)"
cargo fmt --all --check

step "no import cycle between any crate's modules"
scripts/check-module-cycles.py --self-test
scripts/check-module-cycles.py

step "building every package, binary and test (dev profile, the learner's)"
cargo build --workspace --all-targets

# The lints root Cargo.toml's [workspace.lints] chooses, and clippy's defaults, as errors. Clippy
# checks in check mode: the build scripts and proc-macros are the build's, the dependencies'
# metadata is its own (no code generated).
step "lints (cargo clippy --workspace --all-targets -- -D warnings)"
cargo clippy --workspace --all-targets -- -D warnings

# Before the Rust tests: mdbook-measured's tests build a small book with the real mdBook.
step "book tools (mdBook, mdbook-quiz, the book's measured-figures preprocessor)"
scripts/install-book-tools.sh

# The untouched exercises' own tests fail on purpose (they are the learner's to-do list);
# `course-dev check` below proves that they fail and that the solutions pass. Exercise 3's tests
# are of the program around the learner's answers (its prediction prompt), not of a TODO.
step "Rust tests (every crate and solution)"
cargo nextest run --workspace --no-fail-fast -E 'not package(/^exercise-/) or package(exercise-3)' 

# --no-experiments: book-measure --quick runs once, in the page walk (README.md's book-measure step).
step "book: build, links, includes, quiz bank, browser"
scripts/test-book.sh --no-experiments

step "book prose: figures come from measured files; word limits"
python3 scripts/check-prose.py --self-test
python3 scripts/check-prose.py
python3 scripts/count-words.py --self-test
python3 scripts/count-words.py

step "openai client against gpt2 serve"
python3 scripts/openai-client-check.py --binary "$bin/gpt2"

step "exercises and solutions through course check (course-dev check)"
"$bin/course-dev" check

step "page walk: the commands of README.md and the book's pages, in order"
python3 scripts/page-walk.py --self-test
python3 scripts/page-walk.py

step "CUDA code compiles (cargo check --features cuda with PyPI's nvcc)"
scripts/check-cuda.sh

step "aarch64: gpt2, engine, llama and profiler tests cross-compiled and run under qemu-user"
scripts/test-aarch64.sh

step "all test suites passed"
