#!/usr/bin/env bash
# Installs the Debian bookworm packages the build and the tests need. Idempotent: when
# everything is present it only checks and returns (no apt-get update).
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git ccache clang-format sparse
  libfmt-dev libcli11-dev nlohmann-json3-dev libpcre2-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  liburing-dev libfabric-dev libboost-dev libopenblas-dev
  # jal-serve's integration test drives the server with curl
  curl
  # cpack -G DEB runs dpkg-shlibdeps for the packages' dependencies; scripts/build-packages.sh
  # builds jal.ko from the jal-dkms package with dkms (docs/install.md)
  dpkg-dev dkms
  # the libFuzzer targets (scripts/fuzz.sh): clang, its fuzzer and sanitizer runtimes, and
  # llvm-symbolizer for readable crash stacks
  clang-14 libclang-rt-14-dev llvm-14
  # signed firmware images: ECDSA P-256 and SHA-256 for jal-fwsign, the emulator's boot ROM
  # and jalctl fw update (fwimage/, docs/decisions.md)
  libmbedtls-dev
  libunicorn-dev gcc-arm-none-eabi picolibc-arm-none-eabi libstdc++-arm-none-eabi-picolibc
  # the GDB stub's integration test drives jal-emu --gdb with it (docs/management-core.md)
  gdb-multiarch
  # the system test's guest (scripts/build-guest.sh): kernel headers for jal.ko (the guest
  # kernel is the image of the same release), a static busybox and cpio for the initramfs
  linux-headers-amd64 busybox-static cpio
  # the Pareto plots of tools/perf/sweep_inferencex.py (docs/performance.md)
  python3-matplotlib
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# The llama.cpp and tiktoken references (scripts/fetch-llama-ref.sh, fetch-tiktoken.sh)
# come from the npm registry. Any node with npm will do; Debian's packages only when there
# is none.
command -v npm >/dev/null || missing+=(nodejs npm)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "setup: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
