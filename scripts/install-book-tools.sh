#!/usr/bin/env bash
# Installs the book's tools, pinned, into target/tools (not ~/.cargo), so a fresh clone and CI
# get exactly the versions the book was written against. Skips what is already installed. The
# book's own preprocessor, mdbook-measured, is built from this workspace and linked there too.
#
#   scripts/install-book-tools.sh        # then: export PATH="$PWD/target/tools/bin:$PATH"
#
# Takes about a minute and a half cold on two cores; seconds when the tools are already there.
#
# The tools are built unoptimised (`cargo install --debug`): on this project's 2-core VM that
# installs both in 85 s instead of 162 s, and `mdbook build book` takes 0.56 s instead of
# 0.12 s, which a fresh clone, CI and `mdbook serve` never notice.
set -euo pipefail

MDBOOK_VERSION=0.5.4
MDBOOK_QUIZ_VERSION=0.5.0

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
root="${BOOK_TOOLS_ROOT:-$repo_root/target/tools}"
bin="$root/bin"

# Prints the installed version of $1 (e.g. "0.5.4"), or nothing if it is missing or broken.
installed_version() {
  local tool="$1"
  [[ -x "$bin/$tool" ]] || return 0
  "$bin/$tool" --version 2>/dev/null | awk '{print $2}' | sed 's/^v//'
}

install_one() {
  local crate="$1" version="$2"
  local have
  have="$(installed_version "$crate")"
  if [[ "$have" == "$version" ]]; then
    echo "install-book-tools: $crate $version already in $bin"
    return 0
  fi
  echo "install-book-tools: installing $crate $version into $root${have:+ (found $have)}"
  if ! cargo install --debug --locked --version "$version" --root "$root" "$crate"; then
    echo "install-book-tools: could not install $crate $version." >&2
    echo "  Next step: check that crates.io is reachable and that rustc is at least 1.88 (rustc --version)." >&2
    exit 1
  fi
}

# The book's own preprocessor (crates/mdbook-measured, `[preprocessor.measured]` in book/book.toml)
# is a workspace crate: built in the workspace's own profile into target/debug, so after the test
# command's `cargo build --workspace --all-targets` this compiles nothing, then linked into $bin,
# where book.toml's command finds it. The link follows every later build.
install_measured() {
  local target_dir="${CARGO_TARGET_DIR:-$repo_root/target}"
  [[ "$target_dir" == /* ]] || target_dir="$repo_root/$target_dir"
  echo "install-book-tools: building mdbook-measured (crates/mdbook-measured) into $target_dir/debug"
  if ! (cd "$repo_root" && cargo build -p mdbook-measured); then
    echo "install-book-tools: could not build mdbook-measured (the book's preprocessor)." >&2
    echo "  Next step: read the compiler's error above; rustc must be at least 1.88 (rustc --version)." >&2
    exit 1
  fi
  mkdir -p "$bin"
  if [[ "$target_dir" == "$repo_root/target" && "$bin" == "$repo_root/target/tools/bin" ]]; then
    ln -sfn ../../debug/mdbook-measured "$bin/mdbook-measured"
  else
    ln -sfn "$target_dir/debug/mdbook-measured" "$bin/mdbook-measured"
  fi
  echo "install-book-tools: mdbook-measured linked into $bin"
}

install_one mdbook "$MDBOOK_VERSION"
install_one mdbook-quiz "$MDBOOK_QUIZ_VERSION"
install_measured

echo "install-book-tools: done. Add the tools to PATH with:"
echo "  export PATH=\"$bin:\$PATH\""
