#!/usr/bin/env python3
"""One slice's timeline, op by op, from a jal-emu trace taken with --trace-ops.

    build/bin/jal-run --timing-only --n 2 --trace /tmp/t.json --trace-ops 0
    tools/perf/op_timeline.py /tmp/t.json --slice 0 --stages 7-13

Prints, for the last dispatch of the trace (or --dispatch N, counted from 0), each stage the
slice entered and then every engine op (dma, mma, vec, net: start to completion) and every
stall of the scalar unit (a WAIT, a scalar cache miss, a barrier, a STAGE's drain), in
modelled microseconds from the first stage printed, with the instruction's pc: where the
slice's time goes, and which op each later one waited for (docs/emulator.md, "Traces").
"""
import argparse
import json
import sys

TRACKS = ["stall", "dma", "mma", "vec", "net"]
OP_TID0, OP_TRACKS = 100, 5  # emu/trace/trace_writer.hpp: op_tid()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("trace", help="a jal-emu --trace file taken with --trace-ops")
    p.add_argument("--slice", type=int, default=0, help="physical slice (default 0)")
    p.add_argument("--dispatch", type=int, default=-1, help="which dispatch (default: the last)")
    p.add_argument("--stages", default="", help="a range of stages, e.g. 7-13 (default: all)")
    p.add_argument("--min-us", type=float, default=0.0, help="leave out shorter ops")
    p.add_argument("--chip", type=int, default=0)
    a = p.parse_args()

    try:
        events = json.load(open(a.trace))
    except (OSError, ValueError) as e:
        sys.exit(f"op_timeline: {a.trace}: {e}")
    pid = 2 * a.chip + 1  # the chip's modelled-time process
    dispatches = sorted((e for e in events if e.get("ph") == "X" and e.get("pid") == pid
                         and e.get("cat") == "dispatch" and e.get("tid") == a.slice
                         and e.get("name") != "launch"), key=lambda e: e["ts"])
    if not dispatches:
        sys.exit(f"op_timeline: slice {a.slice} ran no dispatch in {a.trace}")
    d = dispatches[a.dispatch]
    t0, t1 = d["ts"], d["ts"] + d["dur"]
    stages = {int(e["name"].split()[1]): e for e in events
              if e.get("cat") == "stage" and e.get("pid") == pid and e.get("tid") == a.slice
              and t0 <= e["ts"] <= t1}
    lo, hi = 0, 1 << 30
    if a.stages:
        first, _, last = a.stages.partition("-")
        lo, hi = int(first), int(last or first)
    chosen = [k for k in sorted(stages) if lo <= k <= hi]
    if a.stages and not chosen:
        sys.exit(f"op_timeline: the slice entered none of stages {a.stages}")
    start = stages[chosen[0]]["ts"] if chosen else t0
    end = (stages[chosen[-1]]["ts"] + stages[chosen[-1]]["dur"]) if chosen else t1
    first_tid = OP_TID0 + a.slice * OP_TRACKS
    ops = sorted((e for e in events if e.get("cat") == "op" and e.get("pid") == pid
                  and first_tid <= e.get("tid", -1) < first_tid + OP_TRACKS
                  and start <= e["ts"] <= end), key=lambda e: e["ts"])
    if not ops:
        sys.exit(f"op_timeline: no ops of slice {a.slice} (was it named by --trace-ops?)")
    print(f"{d['name']}: slice {a.slice}, {d['dur']:.3f} us; times from {start - t0:.3f} us")
    marks = sorted((stages[k]["ts"], k) for k in chosen)
    for e in ops:
        while marks and marks[0][0] <= e["ts"]:
            ts, k = marks.pop(0)
            print(f"-- stage {k} at {ts - start:.3f} us, {stages[k]['dur']:.3f} us")
        if e["dur"] < a.min_us:
            continue
        track = TRACKS[e["tid"] - first_tid]
        print(f"{e['ts'] - start:9.3f} {e['dur']:8.3f}  {track:5} {e['name']:8} pc {e['args']['pc']}")


if __name__ == "__main__":
    main()
