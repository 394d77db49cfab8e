#!/usr/bin/env bash
# Sets up, builds and runs the whole test suite (the README's second command; CI runs it).
# Extra arguments go to ctest, e.g. scripts/test.sh -L unit
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default
ctest --preset default -j "$(nproc)" "$@"
