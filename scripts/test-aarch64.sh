#!/usr/bin/env bash
# The gpt2, engine, llama and profiler tests on aarch64 Linux — the CPU kind of Apple Silicon
# and ARM laptops, where the engine runs its portable path — cross-compiled on this x86-64
# machine and run under qemu-user, so a regression there fails CI before it reaches a learner.
# The crates of plain logic (bench, course-model, grader: no code that depends on the CPU, no
# `target_arch`) are left out: emulating them tested nothing the x86-64 run does not, and cost
# minutes of the test command's time. So is the HTTP server: gpt2 is built without its default
# `serve` feature (`gpt2 serve` then says this build has no server), which leaves tokio, hyper,
# axum and reqwest out of the build; the server's tests are the serve package's, run on x86-64.
#
# Installs what it needs (Debian's cross gcc, qemu-user and binfmt-support; the Rust target).
# The test executables run through cargo's target runner; the gpt2 binary that gpt2's CLI tests
# spawn is aarch64 too, and the kernel hands it to qemu through binfmt_misc, which this script
# mounts and enables (it needs root, as CI has). Without binfmt_misc it still runs the test
# binaries that spawn nothing and says which ones it left out.
#
#   scripts/test-aarch64.sh [--help]
set -euo pipefail
cd "$(dirname "$0")/.."
case "${1:-}" in
-h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
  echo "binfmt_misc is not available here: leaving out gpt2's test binaries that spawn the gpt2 binary (cli, bad_input and profile)"
  filter='not (binary_id(gpt2::cli) | binary_id(gpt2::bad_input) | binary_id(gpt2::profile))'
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
# --no-default-features applies to every package named; of the four only gpt2 has default
# features (`serve`: the HTTP server), so the CPU code is built and tested as a learner's is.
cargo nextest run --release --target "$target" -p gpt2 -p engine -p llama -p profiler --no-default-features --no-fail-fast -E "$filter"
