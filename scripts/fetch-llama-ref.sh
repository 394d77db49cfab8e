#!/usr/bin/env bash
# Fetches the independent reference (llama.cpp and ggml, as prebuilt CPU libraries in the
# npm package node-llama-cpp@3.21.1) and prints its directory on stdout (progress on stderr).
#
#   scripts/fetch-llama-ref.sh          fetch, or print the cached result
#
# Layout of the printed directory:
#   lib/       libggml-base.so, libggml.so, libggml-cpu-*.so, libllama.so (x64 CPU builds)
#   src/       the matching llama.cpp source (include/llama.h, ggml/include/*.h, gguf-py)
#   VERSION    the package version
#
# The result is cached outside the repository:
#   ${JAL_LLAMA_REF:-${XDG_CACHE_HOME:-$HOME/.cache}/jal/llama-ref-3.21.1}
# When that exists the script prints it and does nothing else (no network). Needs node
# and npm (scripts/setup.sh installs them) and the npm registry.
set -euo pipefail

version=3.21.1
. "$(dirname "$0")/lib/npm_cache.sh"
npm_cache_begin fetch-llama-ref \
  "${JAL_LLAMA_REF:-${XDG_CACHE_HOME:-$HOME/.cache}/jal/llama-ref-$version}" "$version" "$@"
npm_cache_install "$work/npm" --omit=optional "node-llama-cpp@$version" \
  "@node-llama-cpp/linux-x64@$version"
bins=$work/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
bundle=$work/npm/node_modules/node-llama-cpp/llama/gitRelease.bundle
[[ -f $bins/libggml-base.so && -f $bundle ]] || { log "unexpected package layout"; exit 1; }

mkdir -p "$work/out/lib"
cp -a "$bins"/*.so "$work/out/lib/"
# The package names the versioned libraries; give them their plain names too.
(cd "$work/out/lib" && for f in lib*.v*.so; do ln -sf "$f" "${f%%.v*}.so"; done)
log "unpacking the matching llama.cpp source"
git -c advice.detachedHead=false clone --quiet "$bundle" "$work/out/src" >&2
rm -rf "$work/out/src/.git"
npm_cache_finish "$work/out"
