#!/usr/bin/env bash
# Fails on any C/C++ file that is not in the house style (.clang-format; driver/ and
# emu/qemu/ have their own). scripts/check-format.sh --fix rewrites them instead.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null || { echo "check-format: clang-format is missing (scripts/setup.sh installs it)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.c' '*.h' '*.cpp' '*.hpp')
if [ "${1:-}" = --fix ]; then
  clang-format -i --style=file "${files[@]}"
  exit 0
fi
if ! clang-format --dry-run -Werror --style=file "${files[@]}" 2>/tmp/jal-format.$$; then
  grep -E '^[^ ].*(warning|error):' /tmp/jal-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  /' >&2
  rm -f /tmp/jal-format.$$
  echo "check-format: the files above are not in the house style; run scripts/check-format.sh --fix" >&2
  exit 1
fi
rm -f /tmp/jal-format.$$
echo "check-format: ok (${#files[@]} files)"
