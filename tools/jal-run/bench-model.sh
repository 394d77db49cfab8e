#!/usr/bin/env bash
# Emulator speed against llama.cpp on the same GGUF and machine (ARCHITECTURE.md §10), in one
# run: jal-run's wall-clock decode tokens/s (emulated chip) and llama.cpp's (jal-llama-ref:
# CPU, deterministic settings) on 1 thread and on as many threads as the emulator runs
# slices on (one per CPU), their ratios, and the modelled TPOT with the achieved fraction of
# the decode memory-bandwidth roofline.
#
#   tools/jal-run/bench-model.sh [BUILD_DIR] [PRESET] [STEPS]     (defaults: build medium 64)
#
# PRESET is a jal-mkmodel preset, or large-1g: a bandwidth-bound shape of about 1.2 GB (16
# layers, hidden 1024, 32 experts of 1024, vocabulary 32000; about 0.4 GB read a token).
#
# llama.cpp's decode rate is (STEPS − 1) / (t(--n STEPS) − t(--n 1)): the difference of two
# runs removes model loading and the prompt. jal-run reports its own decode rate (the wall
# time of its decode steps only). Both use greedy decoding from the same prompt ids.
#
# Last, the host's memory floor (`jal-bench memory` with a decode step's bytes): the time to
# read those bytes once on one thread, which bounds llama.cpp's step, and to copy them into
# L1 on every thread, which bounds jal-run's (its TLOADs copy every weight byte), each with
# the fraction of that floor's rate the step reaches.
set -euo pipefail
build=${1:-build}
preset=${2:-medium}
steps=${3:-64}
for exe in jal-run jal-mkmodel jal-llama-ref jal-bench; do
	[ -x "$build/bin/$exe" ] || { echo "bench-model: $build/bin/$exe is missing (build it first)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
model="$dir/$preset.gguf"
case $preset in
large-1g) shape=(--preset medium --layers 16 --hidden 1024 --experts 32 --expert-ffn 1024 --vocab 32000) ;;
*) shape=(--preset "$preset") ;;
esac
"$build/bin/jal-mkmodel" "${shape[@]}" --seed 1 "$model" >/dev/null
prompt=$(seq -s, 1 16)

now() { date +%s.%N; }
llama_tok_s() {  # THREADS: decode tokens/s of llama.cpp on that many threads
	local t0 t1 t2
	t0=$(now); "$build/bin/jal-llama-ref" "$model" --prompt-ids "$prompt" --n 1 --threads "$1" >/dev/null; t1=$(now)
	"$build/bin/jal-llama-ref" "$model" --prompt-ids "$prompt" --n "$steps" --threads "$1" >/dev/null; t2=$(now)
	echo "($steps - 1) / (($t2 - $t1) - ($t1 - $t0))" | bc -l
}
threads=$(nproc)
llama_tok_s=$(llama_tok_s 1)
llama_tok_s_n=$(llama_tok_s "$threads")

"$build/bin/jal-run" "$model" --prompt-ids "$prompt" --n "$steps" --json >"$dir/run.json"
# The host's memory floor for a step's bytes: each thread reading or copying that many.
step_bytes=$(python3 -c "import json, sys; print(int(json.load(open(sys.argv[1]))['decode_min_bytes']))" "$dir/run.json")
"$build/bin/jal-bench" memory --bytes "$step_bytes" --threads "$threads" --json -q >"$dir/memory.json"
python3 - "$dir/run.json" "$llama_tok_s" "$preset" "$steps" "$llama_tok_s_n" "$threads" "$dir/memory.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
mem = json.load(open(sys.argv[7]))
llama = float(sys.argv[2])
llama_n, threads = float(sys.argv[5]), int(sys.argv[6])
print(f"model: synthetic '{sys.argv[3]}' ({d['n_vocab']} vocab), {sys.argv[4]} greedy steps, prompt {len(d['prompt_ids'])} ids")
print(f"jal-run decode (emulated chip, wall clock): {d['wall_tok_s']:8.2f} tok/s   ({d['slices']} slices, {d['chip']['dispatches']} dispatches)")
print(f"llama.cpp decode (CPU, 1 thread):           {llama:8.2f} tok/s")
print(f"llama.cpp decode (CPU, {threads} threads):          {llama_n:8.2f} tok/s")
print(f"ratio jal-run / llama.cpp (1 thread):       {d['wall_tok_s'] / llama:8.3f}")
print(f"ratio jal-run / llama.cpp ({threads} threads):       {d['wall_tok_s'] / llama_n:8.3f}")
print(f"modelled TPOT {d['tpot_ms']:.4f} ms ({d['tok_s_user']:.0f} tok/s/user); decode roofline "
      f"{d['decode_roofline_ms']:.4f} ms ({d['decode_min_bytes'] / 1e6:.1f} MB at {d['slices']} x 240 GB/s): "
      f"{100 * d['decode_roofline_fraction']:.1f} % of it achieved; HBM busy {100 * d['decode_hbm_util']:.1f} %")
one, every = mem["rows"][0], mem["rows"][-1]
step_mb = mem["bytes"] / 1e6
read_ms = mem["bytes"] / (one["read_gb_s"] * 1e9) * 1e3
copy_ms = mem["bytes"] / (every["copy_gb_s"] * 1e9) * 1e3
print(f"host memory (jal-bench memory, {step_mb:.1f} MB a thread): 1 thread reads {one['read_gb_s']:.1f} GB/s, "
      f"copies {one['copy_gb_s']:.1f}; {every['threads']} threads read {every['read_gb_s']:.1f}, copy {every['copy_gb_s']:.1f}")
print(f"a decode step's {step_mb:.1f} MB: read once on 1 thread {read_ms:.2f} ms (llama.cpp's step {1e3 / llama:.2f} ms, "
      f"{read_ms * llama / 1e3:.2f} of its rate); copied into L1 on {every['threads']} threads {copy_ms:.2f} ms "
      f"(jal-run's step {1e3 / d['wall_tok_s']:.2f} ms, {copy_ms * d['wall_tok_s'] / 1e3:.2f} of its rate)")
PY
