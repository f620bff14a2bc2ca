#!/usr/bin/python3
"""Pools the profiler-overhead campaigns of bench/prof_overhead.sh.

    prof_overhead_campaigns.py [--designs D1,D2] OUT.md CAMPAIGN...

A CAMPAIGN is a directory holding MODEL-DESIGN/ab.json (and bench.json
where the script wrote one) from one run of bench/prof_overhead.sh, or
DIR:MODEL-DESIGN for one `loom prof --ab` whose --out was DIR.
--designs keeps only those designs. Within a
campaign `loom prof --ab` gives the overhead on median step time with a t
interval over its block pairs; campaigns repeated on the same machine
disagree by more than those intervals (docs/bench/prof_overhead_reading.md),
so the pairs of one campaign are not independent of each other. Here the
campaign is the unit: per model and design, the mean of the campaigns' log
ratios with a Student t interval over campaigns (n - 1 degrees of freedom).
The target, overhead <= 1%, is called met when the upper end of that
interval is at most +1%, not met when its lower end is above +1%, and
undecided otherwise. Every per-campaign figure shown is loom's own
(ab.json: metrics.wall_p50)."""

import json
import math
import os
import statistics
import sys

TARGET = 0.01
METRIC = "wall_p50"
# Two-sided 95% Student t quantiles by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131,
       16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093, 20: 2.086, 25: 2.060, 30: 2.042}


def t95(df):
    """The quantile for df, or for the nearest tabulated df below it (wider)."""
    return T95[max(k for k in T95 if k <= df)]


def pct(r):
    return f"{100 * (r - 1):+.2f}%"


def campaign_entries(arg):
    """(model, design, start, ratio, (lo, hi), load, source) per measurement."""
    out = []
    if ":" in arg:
        cdir, label = arg.rsplit(":", 1)
        subs = [(label, cdir)]
    else:
        cdir = arg
        subs = [(n, os.path.join(cdir, n)) for n in sorted(os.listdir(cdir))]
    for name, sub in subs:
        abp = os.path.join(sub, "ab.json")
        if not os.path.isfile(abp) or "-" not in name:
            continue
        model, design = name.split("-", 1)
        with open(abp) as f:
            ab = json.load(f)
        m = ab["metrics"][METRIC]
        start, load = "finished " + ab.get("finished", "?"), "?"
        bp = os.path.join(sub, "bench.json")
        if os.path.isfile(bp):
            with open(bp) as f:
                bench = json.load(f)
            start = bench.get("start", start)
            load = bench.get("load_before", "?")
        out.append((model, design, start, m["ratio_geomean"], tuple(m["ratio_ci95_t"]), load,
                    arg))
    return out


def pooled(ratios):
    logs = [math.log(r) for r in ratios]
    n = len(logs)
    mean = statistics.fmean(logs)
    if n < 2:
        return math.exp(mean), None
    half = t95(n - 1) * statistics.stdev(logs) / math.sqrt(n)
    return math.exp(mean), (math.exp(mean - half), math.exp(mean + half))


def verdict(iv):
    if iv is None:
        return "one campaign: no interval between campaigns"
    lo, hi = iv
    if hi <= 1 + TARGET:
        return f"**met** (upper end {pct(hi)})"
    if lo > 1 + TARGET:
        return f"**not met** (lower end {pct(lo)})"
    return "undecided"


def main(argv):
    args = argv[1:]
    designs = None
    if len(args) >= 2 and args[0] == "--designs":
        designs = set(args[1].split(","))
        args = args[2:]
    if len(args) < 2:
        sys.stderr.write(__doc__)
        return 2
    out_path, dirs = args[0], args[1:]
    rows = []
    for d in dirs:
        if not os.path.isdir(d.rsplit(":", 1)[0] if ":" in d else d):
            sys.stderr.write(f"prof_overhead_campaigns: {d}: not a directory\n")
            return 2
        rows += campaign_entries(d)
    if designs is not None:
        rows = [r for r in rows if r[1] in designs]
    if not rows:
        sys.stderr.write("prof_overhead_campaigns: no MODEL-DESIGN/ab.json in the directories\n")
        return 1
    keys = sorted({(r[0], r[1]) for r in rows})
    L = ["# Profiler overhead pooled over campaigns (100 Hz, median step time)", "",
         f"`bench/prof_overhead_campaigns.py {' '.join(argv[1:])}`", "",
         "One campaign = one run of bench/prof_overhead.sh (or one `loom prof --ab` by hand); "
         "the campaign is the unit: mean of the campaigns' log ratios with a Student t 95% "
         "interval over campaigns. Per-campaign figures are loom's own (ab.json, "
         f"metrics.{METRIC}: geometric mean over block pairs, t interval over pairs). "
         "Designs: `toggle` = loom and the workload on one CPU, `toggle_apart` = loom on "
         "the other CPU, `toggle_free` = nothing pinned, as `loom prof` runs by default "
         "(bench/prof_overhead.sh).", "",
         "| model, design | campaigns | pooled overhead | t 95% over campaigns | target <= 1% |",
         "|---|---:|---:|---|---|"]
    for k in keys:
        rs = [r[3] for r in rows if (r[0], r[1]) == k]
        est, iv = pooled(rs)
        ivs = "n/a" if iv is None else f"[{pct(iv[0])}, {pct(iv[1])}]"
        L.append(f"| {k[0]}, {k[1]} | {len(rs)} | {pct(est)} | {ivs} | {verdict(iv)} |")
    L += ["", "## Every campaign", "",
          "| model, design | started (UTC) | load before | overhead | t 95% over pairs | records |",
          "|---|---|---|---:|---|---|"]
    for k in keys:
        for r in sorted((r for r in rows if (r[0], r[1]) == k), key=lambda r: r[2]):
            L.append(f"| {k[0]}, {k[1]} | {r[2]} | {r[5]} | {pct(r[3])} | "
                     f"[{pct(r[4][0])}, {pct(r[4][1])}] | {r[6]} |")
    with open(out_path + ".tmp", "w") as f:
        f.write("\n".join(L) + "\n")
    os.replace(out_path + ".tmp", out_path)
    print("\n".join(L))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
