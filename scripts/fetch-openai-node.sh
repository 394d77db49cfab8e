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
dest=${JAL_OPENAI_NODE:-${XDG_CACHE_HOME:-$HOME/.cache}/jal/openai-node-$version}
case ${1:-} in
  -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "fetch-openai-node: unknown argument $1" >&2; exit 2 ;;
esac
log() { echo "fetch-openai-node: $*" >&2; }

if [[ -f $dest/VERSION && $(cat "$dest/VERSION") == "$version" ]]; then
  echo "$dest"
  exit 0
fi
command -v npm >/dev/null || { log "npm is missing (run scripts/setup.sh)"; exit 1; }

# Install in a scratch directory beside the destination and rename at the end, so an
# interrupted fetch never leaves a half-filled cache entry behind.
mkdir -p "$(dirname "$dest")"
work=$(mktemp -d "$dest.partial.XXXXXX")
trap 'rm -rf "$work"' EXIT
log "installing openai@$version from npm"
(cd "$work" && npm install --silent --no-audit --no-fund --ignore-scripts \
   --prefix "$work/out" -E "openai@$version" >&2)
[[ -f $work/out/node_modules/openai/package.json ]] || { log "unexpected package layout"; exit 1; }
echo "$version" >"$work/out/VERSION"

rm -rf "$dest"
mv "$work/out" "$dest"
log "ready in $dest"
echo "$dest"
