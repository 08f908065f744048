#!/usr/bin/env bash
# The gpt2, engine, llama and profiler tests on aarch64 Linux — the CPU kind of Apple Silicon
# and ARM laptops, where the engine runs its portable path — cross-compiled on this x86-64
# machine and run under qemu-user, so a regression there fails CI before it reaches a learner.
# The crates of plain logic (bench, course-model, grader: no code that depends on the CPU, no
# `target_arch`) are left out: emulating them tested nothing the x86-64 run does not, and cost
# minutes of the test command's time.
#
# Installs what it needs (Debian's cross gcc, qemu-user and binfmt-support; the Rust target).
# The test executables run through cargo's target runner; the binaries that CLI tests spawn
# (gpt2, course) are aarch64 too, and the kernel hands them to qemu through binfmt_misc, which
# this script mounts and enables (it needs root, as CI has). Without binfmt_misc it still runs
# every test that spawns nothing and says which ones it left out.
#
#   scripts/test-aarch64.sh [--help]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
"") ;;
*) echo "test-aarch64.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
esac

target=aarch64-unknown-linux-gnu
sysroot=/usr/aarch64-linux-gnu

if ! command -v aarch64-linux-gnu-gcc >/dev/null || ! command -v qemu-aarch64 >/dev/null || ! command -v update-binfmts >/dev/null; then
  echo "installing the aarch64 cross compiler, qemu-user and binfmt-support (Debian packages)"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user qemu-user-binfmt binfmt-support >/dev/null
fi
rustup target list --installed | grep -qx "$target" || rustup target add "$target"

# Spawned aarch64 binaries: binfmt_misc runs them through qemu, which finds the aarch64
# loader and libc under QEMU_LD_PREFIX.
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null || true
fi
if [ -e /proc/sys/fs/binfmt_misc/register ] && [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
fi
filter='all()'
if [ ! -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ]; then
  echo "binfmt_misc is not available here: leaving out the tests that spawn the gpt2 or course binary (binary(cli) and the serve tests)"
  filter='not (binary(cli) | binary(serve) | binary(serve_throughput) | binary(binary))'
fi

export QEMU_LD_PREFIX="$sysroot"
# Emulated memory reads say nothing about a real machine's bandwidth: a small buffer keeps the
# ceilings measurement of the profile tests from taking minutes under qemu, and so does a
# 32-token peak product (the 512-token one took about 50 s of each measurement there).
export COURSE_CEILINGS_BUFFER_MIB=32
export COURSE_CEILINGS_PEAK_ROWS=32
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L $sysroot"
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar

# Release, unlike the rest of the test command (the dev profile): this is a separate build in
# any case (its own folder, target/aarch64-unknown-linux-gnu), so it is still one build there,
# and the one whose time under qemu the CI budget was measured with.
cargo nextest run --release --target "$target" -p gpt2 -p engine -p llama -p profiler --no-fail-fast -E "$filter"
