#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (the README's second command; CI runs it).
#   scripts/test.sh [--asan|--tsan] [ctest args...]
# --asan builds and runs it under AddressSanitizer + UndefinedBehaviorSanitizer instead
# (build-asan/); --tsan builds and runs the tests labelled concurrency under
# ThreadSanitizer (build-tsan/). Extra arguments go to ctest, e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
preset=default
case "${1:-}" in
--asan | --tsan)
  preset=${1#--}
  shift
  ;;
esac
scripts/setup.sh
if [ "$preset" = tsan ]; then
  scripts/build.sh tsan concurrency_tests
else
  scripts/build.sh "$preset"
fi
ctest --preset "$preset" -j "$(nproc)" "$@"
