#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu 22.04):
# it installs Rust with rustup, as the course's README asks of a learner, and builds `course`
# and the exercises in the dev profile, the learner's build. The course itself is the
# autograder zip's course/ folder (make-autograder-zip.sh puts it there), in /autograder/source.
set -euo pipefail
source_dir=${AUTOGRADER_SOURCE:-/autograder/source}
course_root=$source_dir/course

apt-get update
apt-get install -y --no-install-recommends build-essential ca-certificates curl pkg-config git
if ! command -v cargo >/dev/null 2>&1; then
  curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain stable
fi
# shellcheck disable=SC1091
. "$HOME/.cargo/env"

cd "$course_root"
cargo build -p course
# The exercises' packages, as `cargo run -p exercise-N` builds them (one at a time: together,
# cargo would resolve their features anew and build the shared crates twice).
for package in $(sed -n 's/^package = "\(exercise-[0-9]*\)"$/\1/p' exercises/info.toml); do
  cargo build -p "$package"
done
chmod +x "$source_dir/run_autograder"
