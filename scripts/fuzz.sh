#!/usr/bin/env bash
# Builds the libFuzzer targets (CMake preset fuzz: clang-14, ASan + UBSan, build-fuzz/) and
# runs each for a bounded time from its seed corpus (docs/reliability.md, "Fuzzing").
#
#   scripts/fuzz.sh [options] [TARGET...]     TARGET: gguf code-object admin transport
#                                             tile-exec tokenizer fw-image (default: all)
#   --time SECONDS   per target (default 20); CI runs the default
#   --corpus DIR     keep each target's corpus in DIR/TARGET (created from the seeds when
#                    missing) and let it grow there; default: a temporary copy of the seeds,
#                    so the repository is never modified
#   --seeds          rewrite the committed seed corpora (tests/fuzz/corpus) with
#                    make-fuzz-seeds, then stop
#   --json           one JSON object per target on stdout (target, status, seconds,
#                    executions, cov, ft, corpus, artifact) instead of the table
#   --no-build       use build-fuzz/ as it is
#
# A target that crashes, leaks or breaks one of its invariants fails the script; the input
# is kept in build-fuzz/artifacts/TARGET/ and the line to reproduce it is printed:
#   build-fuzz/bin/fuzz-TARGET build-fuzz/artifacts/TARGET/crash-...
set -euo pipefail
cd "$(dirname "$0")/.."

all_targets=(gguf code-object admin transport tile-exec tokenizer fw-image)
seconds=20 corpus_root="" json=0 build=1 seeds=0
targets=()
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --time) seconds=${2:?--time needs a number of seconds}; shift 2 ;;
    --corpus) corpus_root=${2:?--corpus needs a directory}; shift 2 ;;
    --seeds) seeds=1; shift ;;
    --json) json=1; shift ;;
    --no-build) build=0; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ $seconds =~ ^[1-9][0-9]*$ ]] || { echo "fuzz.sh: --time wants a positive number of seconds, not '$seconds'" >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] ||
    { echo "fuzz.sh: no target '$t' (targets: ${all_targets[*]})" >&2; exit 2; }
done

log() { echo "fuzz: $*" >&2; }
if [ $build = 1 ]; then
  scripts/setup.sh
  [ -f build-fuzz/build.ninja ] || cmake --preset fuzz >/dev/null
  cmake --build --preset fuzz >&2
fi

if [ $seeds = 1 ]; then
  rm -rf tests/fuzz/corpus
  build-fuzz/bin/make-fuzz-seeds tests/fuzz/corpus
  log "seed corpora written to tests/fuzz/corpus"
  exit 0
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
symbolizer=/usr/lib/llvm-14/bin/llvm-symbolizer
[ -x $symbolizer ] && export ASAN_SYMBOLIZER_PATH=$symbolizer UBSAN_SYMBOLIZER_PATH=$symbolizer

failed=0
[ $json = 1 ] || printf '%-12s %-7s %8s %12s %7s %7s %7s\n' target status seconds executions cov ft corpus
for t in "${targets[@]}"; do
  if [ -n "$corpus_root" ]; then
    corpus=$corpus_root/$t
    [ -d "$corpus" ] || { mkdir -p "$corpus"; cp tests/fuzz/corpus/$t/* "$corpus/"; }
  else
    corpus=$work/corpus-$t
    mkdir -p "$corpus"
    cp tests/fuzz/corpus/$t/* "$corpus/"
  fi
  artifacts=build-fuzz/artifacts/$t
  mkdir -p "$artifacts"
  out=$work/$t.log
  start=$(date +%s)
  status=ok
  # -rss_limit_mb: ASan's quarantine and the corpus grow over a run; 2 GiB is libFuzzer's
  # default, stated so a longer run fails the same way.
  build-fuzz/bin/fuzz-$t -max_total_time="$seconds" -print_final_stats=1 -rss_limit_mb=2048 \
    -artifact_prefix="$artifacts/" "$corpus" >"$out" 2>&1 || status=FAILED
  secs=$(($(date +%s) - start))
  last=$(grep -E '^#[0-9]+' "$out" | tail -1 || true)
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out")
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  units=$(find "$corpus" -type f | wc -l)
  artifact=$(sed -n "s/.*Test unit written to \(.*\)$/\1/p" "$out" | tail -1)
  if [ $json = 1 ]; then
    printf '{"target":"%s","status":"%s","seconds":%d,"executions":%s,"cov":%s,"ft":%s,"corpus":%d,"artifact":"%s"}\n' \
      "$t" "$status" "$secs" "${execs:-0}" "${cov:-0}" "${ft:-0}" "$units" "$artifact"
  else
    printf '%-12s %-7s %8d %12s %7s %7s %7d\n' "$t" "$status" "$secs" "${execs:-?}" "${cov:-?}" "${ft:-?}" "$units"
  fi
  if [ $status != ok ]; then
    failed=1
    log "fuzz-$t failed; its output:"
    grep -v '^#[0-9]' "$out" | tail -40 >&2
    [ -z "$artifact" ] || log "reproduce: build-fuzz/bin/fuzz-$t $artifact"
  fi
done
exit $failed
