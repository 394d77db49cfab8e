#!/usr/bin/env bash
# Emulator speed against llama.cpp on the same GGUF and machine (ARCHITECTURE.md §10), in one
# run: jal-run's wall-clock decode tokens/s (emulated chip) and llama.cpp's (jal-llama-ref:
# CPU, deterministic settings) on 1 thread and on as many threads as the emulator runs
# slices on (one per CPU), their ratios, and the modelled TPOT with the achieved fraction of
# the decode memory-bandwidth roofline.
usage() {
	cat <<'EOF'
Usage: tools/jal-run/bench-model.sh [--rounds N] [--json] [BUILD_DIR] [PRESET] [STEPS]

Decode speed of jal-run (the emulated chip, wall clock) against llama.cpp on the same GGUF.
  BUILD_DIR   the build with jal-run, jal-mkmodel, jal-llama-ref, jal-bench (default build)
  PRESET      a jal-mkmodel preset, or large-1g: a bandwidth-bound shape of about 1.2 GB
              (16 layers, hidden 1024, 32 experts of 1024, vocabulary 32000; about 0.4 GB
              read a token) (default medium)
  STEPS       greedy decode steps (default 64)
  --rounds N  N rounds (default 3), each running llama.cpp (1 thread, then one a CPU) and
              jal-run back to back, so that a round's ratio compares runs minutes apart at
              most; prints each round and the median ratio (the host's load moves single
              runs by tens of per cent)
  --json      one JSON document on stdout instead of the text
  -h, --help  this text

Each program times its own decode steps, steps 1 .. STEPS - 1 (a one-token forward pass
and the choice of the next token each), in the same process: jal-run's wall_tok_s (the
decode step's programs are built before the first of them, wall_prepare_s) and
jal-llama-ref's decode_tok_s. So neither figure holds model loading, the prompt or the
process's start. Both use greedy decoding from the same prompt ids.

Last, the host's memory floor (`jal-bench memory` with a decode step's bytes): the time to
read those bytes once on one thread, which bounds llama.cpp's step, and to copy them into
L1 on every thread, each with the fraction of that floor's rate the median round's step
reaches. And each round measures the step's matrix arithmetic alone (`jal-bench decode-mma`:
every matrix of a batch-1 step through the MMA functions jal-emu runs, with the runtime's
layouts, on one thread and on one a CPU, no emulator; the "MMAs" column) and prints the
ceiling it puts on the round's ratio: llama.cpp's step over that time, the ratio jal-run
would reach were the rest of an emulated step (interpreting, timing, messages, copies) free.
It also prints jal-run's instructions a decode step (every slice's): the emulator's work in
a unit the host's load does not move, to compare builds by when their timings are noise.
EOF
}
set -euo pipefail
rounds=3
json=0
args=()
while [ $# -gt 0 ]; do
	case $1 in
	-h | --help) usage; exit 0 ;;
	--json) json=1 ;;
	--rounds)
		[ $# -ge 2 ] || { echo "bench-model: --rounds needs a number" >&2; exit 1; }
		rounds=$2
		shift
		;;
	--rounds=*) rounds=${1#--rounds=} ;;
	-*) echo "bench-model: unknown option $1 (see --help)" >&2; exit 1 ;;
	*) args+=("$1") ;;
	esac
	shift
done
[ ${#args[@]} -le 3 ] || { echo "bench-model: at most BUILD_DIR PRESET STEPS (see --help)" >&2; exit 1; }
case $rounds in '' | *[!0-9]* | 0) echo "bench-model: --rounds must be a positive integer, not '$rounds'" >&2; exit 1 ;; esac
build=${args[0]:-build}
preset=${args[1]:-medium}
steps=${args[2]:-64}
case $steps in '' | *[!0-9]* | 0 | 1) echo "bench-model: STEPS must be an integer of at least 2, not '$steps'" >&2; exit 1 ;; esac
for exe in jal-run jal-mkmodel jal-llama-ref jal-bench; do
	[ -x "$build/bin/$exe" ] || { echo "bench-model: $build/bin/$exe is missing (build it first)" >&2; exit 1; }
done
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
say() { [ "$json" = 1 ] || echo "$@" >&2; }
model="$dir/$preset.gguf"
case $preset in
large-1g) shape=(--preset medium --layers 16 --hidden 1024 --experts 32 --expert-ffn 1024 --vocab 32000) ;;
*) shape=(--preset "$preset") ;;
esac
"$build/bin/jal-mkmodel" "${shape[@]}" --seed 1 "$model" >/dev/null
prompt=$(seq -s, 1 16)

llama_tok_s() {  # THREADS: decode tokens/s of llama.cpp on that many threads
	"$build/bin/jal-llama-ref" "$model" --prompt-ids "$prompt" --n "$steps" --threads "$1" --json >"$dir/llama.json"
	python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['decode_tok_s'])" "$dir/llama.json"
}
threads=$(nproc)
for r in $(seq "$rounds"); do
	say "bench-model: round $r of $rounds"
	llama_tok_s 1 >"$dir/llama1.$r"
	llama_tok_s "$threads" >"$dir/llaman.$r"
	"$build/bin/jal-run" "$model" --prompt-ids "$prompt" --n "$steps" --json >"$dir/run.$r.json"
	# The step's matrix arithmetic alone (the emulator's MMA functions, no emulator; GPT-OSS
	# models only: for others the file stays empty and the columns say so).
	if ! "$build/bin/jal-bench" decode-mma "$model" --threads "$threads" --json -q >"$dir/arith.$r.json" 2>"$dir/arith.err"; then
		[ "$r" != 1 ] || say "bench-model: no arithmetic floor: $(cat "$dir/arith.err")"
		: >"$dir/arith.$r.json"
	fi
done

# The host's memory floor for a step's bytes: each thread reading or copying that many.
step_bytes=$(python3 -c "import json, sys; print(int(json.load(open(sys.argv[1]))['decode_min_bytes']))" "$dir/run.1.json")
"$build/bin/jal-bench" memory --bytes "$step_bytes" --threads "$threads" --json -q >"$dir/memory.json"
python3 - "$dir" "$rounds" "$preset" "$steps" "$threads" "$json" <<'PY'
import json, statistics, sys
d, rounds, preset, steps, threads, as_json = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6] == "1"
rows = []
for r in range(1, rounds + 1):
    run = json.load(open(f"{d}/run.{r}.json"))
    l1, ln = float(open(f"{d}/llama1.{r}").read()), float(open(f"{d}/llaman.{r}").read())
    text = open(f"{d}/arith.{r}.json").read()
    arith = json.loads(text)["rows"][-1]["step_ms"] if text else None
    rows.append({"round": r, "jal_run_tok_s": run["wall_tok_s"], "llama_tok_s": l1,
                 "llama_threads_tok_s": ln, "ratio": run["wall_tok_s"] / l1,
                 "ratio_threads": run["wall_tok_s"] / ln, "arithmetic_ms": arith,
                 "ratio_ceiling": 1e3 / l1 / arith if arith else None})
run = json.load(open(f"{d}/run.1.json"))
mem = json.load(open(f"{d}/memory.json"))
median = sorted(rows, key=lambda x: x["ratio"])[(len(rows) - 1) // 2]  # a real round's figures
arith_text = open(f"{d}/arith.{median['round']}.json").read()
arith = json.loads(arith_text) if arith_text else None
one, every = mem["rows"][0], mem["rows"][-1]
read_ms = mem["bytes"] / (one["read_gb_s"] * 1e9) * 1e3
copy_ms = mem["bytes"] / (every["copy_gb_s"] * 1e9) * 1e3
llama_step_ms, jal_step_ms = 1e3 / median["llama_tok_s"], 1e3 / median["jal_run_tok_s"]
ceilings = [r["ratio_ceiling"] for r in rows if r["ratio_ceiling"]]
doc = {
    "model": preset, "steps": steps, "n_vocab": run["n_vocab"], "slices": run["slices"],
    "dispatches": run["chip"]["dispatches"], "instructions_per_step": run["instructions_per_step"],
    "threads": threads, "rounds": rows,
    "ratio_median": statistics.median(r["ratio"] for r in rows),
    "ratio_min": min(r["ratio"] for r in rows), "ratio_max": max(r["ratio"] for r in rows),
    "ratio_threads_median": statistics.median(r["ratio_threads"] for r in rows),
    "ratio_ceiling_median": statistics.median(ceilings) if ceilings else None,
    "tpot_ms": run["tpot_ms"], "tok_s_user": run["tok_s_user"],
    "decode_roofline_ms": run["decode_roofline_ms"], "decode_min_bytes": run["decode_min_bytes"],
    "decode_roofline_fraction": run["decode_roofline_fraction"],
    "decode_hbm_util": run["decode_hbm_util"],
    "memory": {"bytes": mem["bytes"], "read_1_thread_gb_s": one["read_gb_s"],
               "copy_all_threads_gb_s": every["copy_gb_s"], "read_once_ms": read_ms,
               "copy_into_l1_ms": copy_ms, "llama_step_ms": llama_step_ms,
               "jal_run_step_ms": jal_step_ms},
    "arithmetic": None if arith is None else {
        "matrices": arith["matrices"], "bytes": arith["bytes"],
        "step_ms_1_thread": arith["rows"][0]["step_ms"],
        "by_format_1_thread": {f["dtype"]: f["ms"] for f in arith["rows"][0]["by_format"]},
        "step_ms_all_threads": arith["rows"][-1]["step_ms"], "threads": arith["rows"][-1]["threads"],
        "ratio_ceiling": llama_step_ms / arith["rows"][-1]["step_ms"],
        "share_of_jal_run_step": arith["rows"][-1]["step_ms"] / jal_step_ms},
}
if as_json:
    print(json.dumps(doc, indent=1))
    sys.exit(0)
print(f"model: synthetic '{preset}' ({run['n_vocab']} vocab), {steps} greedy steps, prompt {len(run['prompt_ids'])} ids; "
      f"jal-run on {run['slices']} slices ({run['chip']['dispatches']} dispatches), llama.cpp on 1 and {threads} threads")
print(f"jal-run's decode step: {run['dispatches_per_step']:.0f} dispatch(es), {run['instructions_per_step']:.0f} instructions "
      f"(every slice's; the emulator's work, which the host's speed does not move)")
print(f"{'round':>5} {'jal-run tok/s':>14} {'llama.cpp 1t':>13} {'ratio':>7} {f'llama.cpp {threads}t':>13} {'ratio':>7} "
      f"{f'MMAs {threads}t ms':>11} {'ceiling':>8}")
for r in rows:
    print(f"{r['round']:>5} {r['jal_run_tok_s']:>14.2f} {r['llama_tok_s']:>13.2f} {r['ratio']:>7.3f} "
          f"{r['llama_threads_tok_s']:>13.2f} {r['ratio_threads']:>7.3f} "
          + (f"{r['arithmetic_ms']:>11.2f} {r['ratio_ceiling']:>8.2f}" if r["arithmetic_ms"] else f"{'-':>11} {'-':>8}"))
print(f"ratio jal-run / llama.cpp (1 thread):  median {doc['ratio_median']:.3f} (range {doc['ratio_min']:.3f}-{doc['ratio_max']:.3f})")
print(f"ratio jal-run / llama.cpp ({threads} threads): median {doc['ratio_threads_median']:.3f}")
print(f"modelled TPOT {run['tpot_ms']:.4f} ms ({run['tok_s_user']:.0f} tok/s/user); decode roofline "
      f"{run['decode_roofline_ms']:.4f} ms ({run['decode_min_bytes'] / 1e6:.1f} MB at {run['slices']} x 240 GB/s): "
      f"{100 * run['decode_roofline_fraction']:.1f} % of it achieved; HBM busy {100 * run['decode_hbm_util']:.1f} %")
step_mb = mem["bytes"] / 1e6
print(f"host memory (jal-bench memory, {step_mb:.1f} MB a thread): 1 thread reads {one['read_gb_s']:.1f} GB/s, "
      f"copies {one['copy_gb_s']:.1f}; {every['threads']} threads read {every['read_gb_s']:.1f}, copy {every['copy_gb_s']:.1f}")
print(f"a decode step's {step_mb:.1f} MB (median round): read once on 1 thread {read_ms:.2f} ms (llama.cpp's step "
      f"{llama_step_ms:.2f} ms, {read_ms / llama_step_ms:.2f} of its rate); copied into L1 on {every['threads']} threads "
      f"{copy_ms:.2f} ms (jal-run's step {jal_step_ms:.2f} ms, {copy_ms / jal_step_ms:.2f} of its rate)")
a = doc["arithmetic"]
if a is None:
    print("the step's matrix arithmetic alone: not measured (jal-bench decode-mma takes GPT-OSS models)")
    sys.exit(0)
print(f"the step's matrix arithmetic alone (jal-bench decode-mma: {a['matrices']} matrices, {a['bytes'] / 1e6:.1f} MB, "
      f"the emulator's MMA functions, no emulator): 1 thread {a['step_ms_1_thread']:.2f} ms ("
      + ", ".join(f"{k} {v:.2f}" for k, v in a["by_format_1_thread"].items()) + f"), {a['threads']} threads "
      f"{a['step_ms_all_threads']:.2f} ms ({100 * a['share_of_jal_run_step']:.0f} % of jal-run's step); against llama.cpp's "
      f"{llama_step_ms:.2f} ms (median round), jal-run on {a['threads']} threads could reach at most {a['ratio_ceiling']:.2f}x "
      f"were everything else free (the rounds' ceilings: median {doc['ratio_ceiling_median']:.2f}x)")
PY
