#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (the README's second command; CI runs it).
#   scripts/test.sh [--asan] [ctest args...]
# --asan builds and runs it under AddressSanitizer + UndefinedBehaviorSanitizer instead
# (build-asan/). Extra arguments go to ctest, e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
if [ "${1:-}" = --asan ]; then
  preset=asan
  shift
fi
scripts/setup.sh
scripts/build.sh "$preset"
ctest --preset "$preset" -j "$(nproc)" "$@"
