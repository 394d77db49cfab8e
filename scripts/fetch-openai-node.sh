#!/usr/bin/env bash
# Fetches the official OpenAI Node.js client (the npm package `openai`) that jal-serve's
# integration test drives the server with, and prints its directory on stdout (progress on
# stderr). The test runs `node` with NODE_PATH=<dir>/node_modules.
#
#   scripts/fetch-openai-node.sh        fetch, or print the cached result
#
# The result is cached outside the repository:
#   ${JAL_OPENAI_NODE:-${XDG_CACHE_HOME:-$HOME/.cache}/jal/openai-node-<version>}
# When that exists the script prints it and does nothing else (no network). Needs node and
# npm (scripts/setup.sh installs them) and the npm registry.
set -euo pipefail

version=4.95.0
. "$(dirname "$0")/lib/npm_cache.sh"
npm_cache_begin fetch-openai-node \
  "${JAL_OPENAI_NODE:-${XDG_CACHE_HOME:-$HOME/.cache}/jal/openai-node-$version}" "$version" "$@"
npm_cache_install "$work/out" "openai@$version"
[[ -f $work/out/node_modules/openai/package.json ]] || { log "unexpected package layout"; exit 1; }
npm_cache_finish "$work/out"
