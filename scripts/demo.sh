#!/usr/bin/env bash
# The main job (the README's first command): sets up, builds, starts an emulated chip,
# waits for it to boot, prints `jalctl info`, then generates text with `jal-run` from its
# embedded default model (a small synthetic GPT-OSS-architecture GGUF with GPT-OSS's real
# vocabulary and random weights, which it writes and caches) on the chip's slices: text ->
# token ids -> weights placed in HBM -> kernel dispatches -> tokens -> text, with the
# modelled TTFT, TPOT and power. Extra arguments go to jal-run (e.g. --n 32 --json).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh default jal-emu jalctl jal-run >/dev/null

dir=$(mktemp -d)
build/bin/jal-emu --socket-dir "$dir" --log "$dir/emu.log" &
emu=$!
trap 'kill $emu 2>/dev/null; wait $emu 2>/dev/null; rm -rf "$dir"' EXIT
for _ in $(seq 100); do [ -S "$dir/jal0.sock" ] && break; sleep 0.1; done
export JAL_EMU_DIR="$dir"
build/bin/jalctl info --wait 300
echo
echo "Firmware log:"
sed 's/^/  /' "$dir/emu.log"
echo
echo "Inference on the chip (jal-run, embedded default model):"
build/bin/jal-run "$@"
