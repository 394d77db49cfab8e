#!/usr/bin/env bash
# Configures (once) and builds a preset: scripts/build.sh [default|asan] [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
shift || true
dir=build
[ "$preset" = default ] || dir="build-$preset"
[ -f "$dir/build.ninja" ] || cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" ${1:+--target "$@"}
