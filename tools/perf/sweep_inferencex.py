#!/usr/bin/python3
"""InferenceX sweep of the modelled chip: jal-run --timing-only over concurrencies.

Runs `jal-run --timing-only --shape SHAPE --prompt-len P --n N --project-out O
--concurrency C --json` for each C (docs/performance.md, "InferenceX methodology"), keeps
every run's JSON, and writes a Markdown table and a Pareto plot (mixed tok/s per kW rated
against tok/s per user) of the points that ran. A concurrency that runs out of HBM (its KV
caches, allocated when jal-run opens the model, or what a decode step allocates later) is
recorded as such.

    tools/perf/sweep_inferencex.py                       # 1 4 16 64 88 96 256, 8k/1k, into docs/perf/
    tools/perf/sweep_inferencex.py --concurrency 1,4 --out-dir /tmp/sweep
    tools/perf/sweep_inferencex.py --from-json docs/perf/inferencex-sweep.json   # redraw only
    tools/perf/sweep_inferencex.py --numerics ggml --name inferencex-ggml   # llama.cpp's roundings
    tools/perf/sweep_inferencex.py --kv-type f16 --concurrency 1,4,16,64,96,128,192 --name inferencex-f16
    tools/perf/sweep_inferencex.py --numerics ggml --kv-type f16 --schedule mixed --concurrency 1,16,64,128,204 --name inferencex-ggml-f16-mixed

Debian's Python 3 and nothing from PyPI. The plot needs matplotlib (Debian bookworm:
`apt-get install python3-matplotlib`); without it the table is still written. Each point
takes 1.5-4 minutes of wall clock on a 2-CPU machine (mostly the one 8k prefill); the
modelled figures do not depend on the machine.
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import time

# Published InferenceX results for GPT-OSS-120B, 8k/1k (ARCHITECTURE.md section 12).
PUBLISHED = {
    "jalapeno_mixed_tok_s_per_kw_rated": 85448,
    "gb200_mixed_tok_s_per_kw_rated": 44960,
    "e2e_s": 1.03,
    "min_tbt_ms": 0.69,
}

COLUMNS = [
    # (header, key, format)
    ("concurrency", "concurrency", "{:d}"),
    ("TTFT ms", "ttft_ms", "{:.0f}"),
    ("TPOT ms", "tpot_ms", "{:.2f}"),
    ("E2E s", "e2e_s", "{:.2f}"),
    ("tok/s/user", "tok_s_user", "{:.1f}"),
    ("serve s", "serve_s", "{:.1f}"),
    ("output tok/s", "output_tok_s", "{:,.0f}"),
    ("mixed tok/s", "mixed_tok_s", "{:,.0f}"),
    ("avg W", "avg_power_w", "{:.0f}"),
    ("mixed tok/s/kW rated", "mixed_tok_s_per_kw_rated", "{:,.0f}"),
    ("mixed tok/s/kW modelled", "mixed_tok_s_per_kw_modelled", "{:,.0f}"),
    ("decode roofline", "decode_roofline_fraction", "{:.1%}"),
    ("dispatches/step", "dispatches_per_step", "{:,.0f}"),
    ("wall s", "wall_s", "{:.0f}"),
]


def parse_args():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--build", default=os.path.join(root, "build"), help="build directory")
    p.add_argument("--concurrency", default="1,4,16,64,88,96,256", help="comma-separated list")
    p.add_argument("--shape", default="gpt-oss-120b")
    p.add_argument("--prompt-len", type=int, default=8192)
    p.add_argument("--out-tokens", type=int, default=1024, help="--project-out")
    p.add_argument("--measured", type=int, default=4, help="tokens actually run (--n)")
    p.add_argument("--numerics", default="native", choices=["native", "ggml"],
                   help="jal-run --numerics: native (F32 activations into every product, the "
                   "F32 rate) or ggml (Q8_0/BF16 activations, the MXFP8/BF16 rates)")
    p.add_argument("--kv-type", default="f32", choices=["f32", "f16"],
                   help="jal-run --kv-type: the KV cache's elements (f16: half the bytes, so "
                   "twice the sequences fit)")
    p.add_argument("--schedule", default="serial", choices=["serial", "mixed"],
                   help="jal-run --schedule: prompts prefilled alone (serial) or in chunks "
                   "inside the other users' decode steps (mixed)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds per point")
    p.add_argument("--out-dir", default=os.path.join(root, "docs", "perf"))
    p.add_argument("--name", default="inferencex", help="file name prefix in --out-dir")
    p.add_argument("--from-json", help="redraw the table and plot from a saved sweep")
    p.add_argument("--quiet", action="store_true")
    return p.parse_args()


def run_point(args, c):
    """One jal-run; its JSON plus wall_s, or {'concurrency', 'error'}."""
    cmd = [os.path.join(args.build, "bin", "jal-run"), "--timing-only", "--shape", args.shape,
           "--prompt-len", str(args.prompt_len), "--n", str(args.measured),
           "--project-out", str(args.out_tokens), "--concurrency", str(c), "--json",
           "--numerics", args.numerics, "--kv-type", args.kv_type, "--schedule", args.schedule]
    t0 = time.monotonic()
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"concurrency": c, "error": f"not finished in {args.timeout:.0f} s"}
    wall = time.monotonic() - t0
    if r.returncode != 0:
        err = (r.stderr.strip().splitlines() or ["exit status %d" % r.returncode])[-1]
        if "out of memory" in err:
            err = "out of HBM (" + err.removeprefix("jal-run: ") + ")"
        return {"concurrency": c, "error": err, "wall_s": wall}
    doc = json.loads(r.stdout)
    doc["wall_s"] = wall
    doc.pop("tokens", None)
    return doc


def sweep(args):
    points = []
    for c in [int(x) for x in args.concurrency.split(",") if x]:
        if not args.quiet:
            print(f"sweep: concurrency {c} ...", file=sys.stderr, flush=True)
        pt = run_point(args, c)
        if not args.quiet:
            what = pt.get("error") or ("%.0f mixed tok/s per kW rated, %.1f tok/s/user"
                                       % (pt["mixed_tok_s_per_kw_rated"], pt["tok_s_user"]))
            print(f"sweep: concurrency {c}: {what} ({pt.get('wall_s', 0):.0f} s)",
                  file=sys.stderr, flush=True)
        points.append(pt)
    return {
        "date": datetime.date.today().isoformat(),
        "shape": args.shape,
        "prompt_len": args.prompt_len,
        "out_tokens": args.out_tokens,
        "measured_tokens": args.measured,
        "numerics": args.numerics,
        "kv_type": args.kv_type,
        "schedule": args.schedule,
        "published": PUBLISHED,
        "points": points,
    }


def pareto(points):
    """Points not beaten on both tok/s/user and mixed tok/s per kW rated, by tok/s/user."""
    front = []
    for p in points:
        dominated = any(q is not p and q["tok_s_user"] >= p["tok_s_user"]
                        and q["mixed_tok_s_per_kw_rated"] >= p["mixed_tok_s_per_kw_rated"]
                        and (q["tok_s_user"], q["mixed_tok_s_per_kw_rated"])
                        != (p["tok_s_user"], p["mixed_tok_s_per_kw_rated"])
                        for q in points)
        if not dominated:
            front.append(p)
    return sorted(front, key=lambda p: p["tok_s_user"])


def markdown(doc):
    ok = [p for p in doc["points"] if "error" not in p]
    lines = [
        f"InferenceX sweep, {doc['shape']}, {doc['prompt_len']} in / {doc['out_tokens']} out "
        f"({doc['measured_tokens']} tokens run, the rest projected), "
        f"`jal-run --timing-only`, {doc.get('numerics', 'native')} numerics, "
        f"{doc.get('kv_type', 'f32').upper()} KV cache, "
        f"{doc.get('schedule', 'serial')} schedule, {doc['date']}.",
        "",
        "| " + " | ".join(h for h, _, _ in COLUMNS) + " |",
        "|" + "---|" * len(COLUMNS),
    ]
    for p in ok:
        lines.append("| " + " | ".join(f.format(p[k]) for _, k, f in COLUMNS) + " |")
    for p in doc["points"]:
        if "error" in p:
            lines.append(f"| {p['concurrency']} | " + p["error"].replace("|", "/")
                         + " |" * (len(COLUMNS) - 1))
    pub = doc["published"]
    lines += [
        "",
        f"Published (GPT-OSS-120B, 8k/1k): {pub['jalapeno_mixed_tok_s_per_kw_rated']:,} mixed "
        f"tok/s per kW rated (GB200: {pub['gb200_mixed_tok_s_per_kw_rated']:,}), E2E "
        f"{pub['e2e_s']} s, min TBT {pub['min_tbt_ms']} ms.",
    ]
    if ok:
        front = ", ".join(str(p["concurrency"]) for p in pareto(ok))
        lines.append(f"Pareto front (concurrency): {front}.")
    return "\n".join(lines) + "\n"


def plot(doc, path):
    try:
        import matplotlib
    except ImportError:
        print("sweep: no matplotlib (apt-get install python3-matplotlib): no plot",
              file=sys.stderr)
        return False
    matplotlib.use("Agg")
    matplotlib.rcParams["svg.hashsalt"] = "jal-inferencex"  # the same SVG for the same data
    matplotlib.rcParams["svg.fonttype"] = "none"
    import matplotlib.pyplot as plt

    ok = [p for p in doc["points"] if "error" not in p]
    pub = doc["published"]
    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    ax.set_xscale("log")
    ax.set_yscale("log")
    xs = [p["tok_s_user"] for p in ok]
    ys = [p["mixed_tok_s_per_kw_rated"] for p in ok]
    ax.scatter(xs, ys, color="tab:blue", zorder=3, label="jal-run --timing-only (modelled)")
    # Labels alternately above and below, so that neighbouring points' do not overlap.
    for i, p in enumerate(sorted(ok, key=lambda p: p["tok_s_user"])):
        ax.annotate(f"C={p['concurrency']}", (p["tok_s_user"], p["mixed_tok_s_per_kw_rated"]),
                    textcoords="offset points", xytext=(4, 6 if i % 2 else -12), fontsize=8)
    front = pareto(ok)
    ax.plot([p["tok_s_user"] for p in front], [p["mixed_tok_s_per_kw_rated"] for p in front],
            color="tab:blue", lw=1, zorder=2)
    ax.axhline(pub["jalapeno_mixed_tok_s_per_kw_rated"], color="tab:green", ls="--", lw=1,
               label="published peak, Jalapeño (85,448)")
    ax.axhline(pub["gb200_mixed_tok_s_per_kw_rated"], color="tab:gray", ls=":", lw=1,
               label="published, GB200 (44,960)")
    ax.axvline(1000 / pub["min_tbt_ms"], color="tab:green", ls="-.", lw=0.8,
               label="published min TBT 0.69 ms (1,449 tok/s/user)")
    ax.set_xlabel("tok/s per user (1000 / TPOT)")
    ax.set_ylabel("mixed (input + output) tok/s per kW rated (700 W)")
    ax.set_title(f"{doc['shape']}, {doc['prompt_len']} in / {doc['out_tokens']} out, one chip, "
                 f"modelled, {doc.get('numerics', 'native')} numerics, "
                 f"{doc.get('kv_type', 'f32').upper()} KV ({doc['date']})", fontsize=10)
    ax.grid(True, which="both", lw=0.3, alpha=0.5)
    ax.legend(fontsize=8, loc="center right")
    fig.tight_layout()
    fig.savefig(path, metadata={"Date": None})
    plt.close(fig)
    return True


def main():
    args = parse_args()
    if args.from_json:
        with open(args.from_json) as f:
            doc = json.load(f)
    else:
        doc = sweep(args)
    os.makedirs(args.out_dir, exist_ok=True)
    base = os.path.join(args.out_dir, args.name)
    if not args.from_json:
        with open(base + "-sweep.json", "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
            f.write("\n")
    with open(base + "-sweep.md", "w") as f:
        f.write(markdown(doc))
    drew = plot(doc, base + "-pareto.svg")
    print(markdown(doc))
    wrote = ([] if args.from_json else [base + "-sweep.json"]) + [base + "-sweep.md"]
    wrote += [base + "-pareto.svg"] if drew else []
    print("sweep: wrote " + ", ".join(wrote), file=sys.stderr)
    return 0 if any("error" not in p for p in doc["points"]) else 1


if __name__ == "__main__":
    sys.exit(main())
