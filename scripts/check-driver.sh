#!/usr/bin/env bash
# Builds jal.ko against the installed Debian kernel headers under the kernel's own checkers:
# sparse (C=2: every file) and the extra warnings (W=1). Any warning fails.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v sparse >/dev/null || { echo "check-driver: sparse is missing (scripts/setup.sh installs it)" >&2; exit 2; }
kdir=$(ls -d /usr/src/linux-headers-*-amd64 2>/dev/null | sort -V | tail -1)
[ -n "$kdir" ] || { echo "check-driver: no /usr/src/linux-headers-*-amd64 (scripts/setup.sh installs them)" >&2; exit 2; }
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# Out of tree in a copy, so the checkout gets no build products.
mkdir -p "$stage/driver" "$stage/include"
cp -r driver/. "$stage/driver/"
cp -r include/jal "$stage/include/"
log="$stage/build.log"
if ! make -C "$kdir" M="$stage/driver" C=2 W=1 modules >"$log" 2>&1; then
  cat "$log" >&2
  echo "check-driver: the driver does not build" >&2
  exit 1
fi
if grep -E 'warning:|error:' "$log" >&2; then
  echo "check-driver: warnings from the kernel build, sparse or W=1 (above)" >&2
  exit 1
fi
echo "check-driver: ok (jal.ko built with C=2 W=1 against $(basename "$kdir"), no warnings)"
