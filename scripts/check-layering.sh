#!/usr/bin/env bash
# Checks the dependency rule of docs/decisions.md ("Layering") on a built tree:
#   * the emulator (emu/) and the firmware (firmware/) neither link libjal nor include any of
#     userlib's headers;
#   * userlib includes no emulator or firmware internals (its contract with them is
#     include/jal/hw and, for the emulator transport, include/jal/emu).
# It reads what the compiler actually included (ninja's dependency log), so a header pulled
# in through another header counts too.
#   scripts/check-layering.sh [BUILD_DIR]   (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
dir="${1:-build}"
[ -f "$dir/build.ninja" ] || { echo "check-layering: $dir is not a configured build (run scripts/build.sh)" >&2; exit 2; }

fail=0
report() { echo "check-layering: $*" >&2; fail=1; }

# Every object file with the headers it included, as "object<TAB>header" lines.
deps=$(ninja -C "$dir" -t deps 2>/dev/null | awk -v root="$root/" '
  /^[^ ].*: #deps/ { obj = $1; sub(/:$/, "", obj); next }
  /^    / { h = $1; sub("^" root, "", h); sub(/^\.\.\//, "", h); print obj "\t" h }')
[ -n "$deps" ] || { echo "check-layering: no dependency information in $dir (build it first)" >&2; exit 2; }

# Objects of the emulator and firmware libraries and programs.
lower=$(printf '%s\n' "$deps" | awk -F'\t' '$1 ~ /^(emu|firmware)\/CMakeFiles\// && $2 ~ /^userlib\//')
[ -z "$lower" ] || report "the emulator or firmware includes userlib headers:
$(printf '%s\n' "$lower" | sort -u | head -20)"

# userlib's objects: nothing from emu/ or firmware/.
upper=$(printf '%s\n' "$deps" | awk -F'\t' '$1 ~ /^userlib\/CMakeFiles\// && $2 ~ /^(emu|firmware)\//')
[ -z "$upper" ] || report "userlib includes emulator or firmware internals:
$(printf '%s\n' "$upper" | sort -u | head -20)"

# Link line: jal-emu (which links the emulator and firmware libraries) does not name libjal.
for target in jal-emu; do
  line=$(ninja -C "$dir" -t commands "bin/$target" 2>/dev/null | tail -1)
  [ -n "$line" ] || { report "no link command for bin/$target"; continue; }
  if printf '%s\n' "$line" | grep -Eq 'libjal\.(so|a)|libjal_static'; then
    report "bin/$target links libjal"
  fi
done

if [ "$fail" -eq 0 ]; then
  echo "check-layering: ok ($(printf '%s\n' "$deps" | cut -f1 | sort -u | wc -l) objects checked)"
fi
exit "$fail"
