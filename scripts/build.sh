#!/usr/bin/env bash
# Configures (once) and builds a preset: scripts/build.sh [default|asan] [ninja targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
preset="${1:-default}"
shift || true
dir=build
[ "$preset" = default ] || dir="build-$preset"
# The llama.cpp and tiktoken references (cached outside the repository) are part of every
# configuration.
ref=$(scripts/fetch-llama-ref.sh)
tiktoken=$(scripts/fetch-tiktoken.sh)
if [ ! -f "$dir/build.ninja" ] || ! grep -qx "JAL_LLAMA_REF:PATH=$ref" "$dir/CMakeCache.txt" ||
   ! grep -qx "JAL_TIKTOKEN_REF:PATH=$tiktoken" "$dir/CMakeCache.txt"; then
  cmake --preset "$preset" -DJAL_LLAMA_REF="$ref" -DJAL_TIKTOKEN_REF="$tiktoken" >/dev/null
fi
cmake --build --preset "$preset" ${1:+--target "$@"}
