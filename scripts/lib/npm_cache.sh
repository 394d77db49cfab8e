# The part every scripts/fetch-*.sh shares: npm packages installed into a cache entry
# outside the repository, printed on stdout; progress on stderr. Sourced, not run:
#
#   npm_cache_begin TOOL DEST STAMP "$@"   --help, or print DEST and exit when its VERSION
#                                          file holds STAMP; else a scratch directory $work
#                                          beside DEST (removed on exit)
#   npm_cache_install PREFIX ARGS...       npm install ARGS (exact versions) into PREFIX
#   npm_cache_finish DIR                   stamp DIR, rename it to DEST, print DEST
#
# Building beside the destination and renaming at the end means an interrupted fetch never
# leaves a half-filled cache entry behind.

log() { echo "$npm_cache_tool: $*" >&2; }

npm_cache_begin() {
  npm_cache_tool=$1 npm_cache_dest=$2 npm_cache_stamp=$3
  shift 3
  case ${1:-} in
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    "") ;;
    *) log "unknown argument $1"; exit 2 ;;
  esac
  if [[ -f $npm_cache_dest/VERSION && $(cat "$npm_cache_dest/VERSION") == "$npm_cache_stamp" ]]; then
    echo "$npm_cache_dest"
    exit 0
  fi
  command -v npm >/dev/null || { log "npm is missing (run scripts/setup.sh)"; exit 1; }
  mkdir -p "$(dirname "$npm_cache_dest")"
  work=$(mktemp -d "$npm_cache_dest.partial.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}

npm_cache_install() {
  local prefix=$1
  shift
  log "installing $* from npm"
  (cd "$work" && npm install --silent --no-audit --no-fund --ignore-scripts \
     --prefix "$prefix" -E "$@" >&2)
}

npm_cache_finish() {
  echo "$npm_cache_stamp" >"$1/VERSION"
  rm -rf "$npm_cache_dest"
  mv "$1" "$npm_cache_dest"
  log "ready in $npm_cache_dest"
  echo "$npm_cache_dest"
}
