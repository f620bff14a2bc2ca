#!/usr/bin/env python3
"""Writes docs/bench/zoo_warmstart.md from the experiment's results.json
(workloads/zoo/experiment.py): per architecture the steps and training time
to the target, cold (random initialisation) and warm (loom zoo warm), the
speed-ups, the final test accuracies and the warm-up's cost.

    python3 workloads/zoo/report.py DIR/results.json docs/bench/zoo_warmstart.md
"""
import json
import statistics
import sys


def fmt_steps(v, budget):
    return str(v) if v is not None else f">{budget}"


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src) as f:
        res = json.load(f)
    meta, summ, runs = res["meta"], res["summary"], res["runs"]
    sp = {(s["arch"], s["seed"]): s for s in res["speedups"]}
    steps = meta["steps"]
    archs = []
    for r in runs:
        if r["arch"] not in archs:
            archs.append(r["arch"])
    out = []
    w = out.append
    w("# Warm starts on digits: ModelKeeper's experiment on this machine's CPU\n")
    w(f"`{meta['command']}` (nice -n 10, {meta['cpu_threads']} thread per run), on "
      f"{meta['machine']}, {meta['date']}, PyTorch {meta['torch']}; {meta['elapsed_s'] / 60:.0f} "
      f"minutes in all. The machine (2 cores) was shared with five developers' builds and tests "
      f"while it ran: step counts are exact, times are noisy (cold and warm runs of a pair ran "
      f"back to back, so their ratio is fairer than either time).\n")
    w(f"Repository: {len(res['repo'])} architectures trained {steps} steps each and registered "
      f"with `loom zoo add` (validation accuracy "
      f"{min(e['val'] for e in res['repo']):.3f} to {max(e['val'] for e in res['repo']):.3f}). "
      f"Then {len(archs)} architectures not in it, {meta['seeds']} seeds each, trained "
      f"{steps} steps from random initialisation (cold) and from `loom zoo warm` (warm); target: "
      f"validation accuracy >= {meta['target']}, evaluated every 10 steps. The warm run's time "
      f"includes the whole warm-up (the `loom zoo warm` process and `loom.warmstart.apply`).\n")
    w("## Summary\n")
    ok_speed = summ["median_speedup_steps"] >= 1.3
    ok_acc = summ["mean_test_warm"] >= summ["mean_test_cold"]
    w("| measure | value | goal |\n|---|---|---|")
    w(f"| median speed-up, steps to target (all {len(runs)} pairs) | "
      f"**{summ['median_speedup_steps']:.2f}x** | >= 1.3x: {'met' if ok_speed else 'NOT met'} |")
    w(f"| median speed-up, wall time to target incl. warm-up | "
      f"**{summ['median_speedup_time']:.2f}x** | |")
    w(f"| mean final test accuracy, cold / warm | {summ['mean_test_cold']:.4f} / "
      f"{summ['mean_test_warm']:.4f} | warm not lower: {'met' if ok_acc else 'NOT met'} |")
    w(f"| match + transform (C) / warm training run, median | "
      f"{100 * summ['match_transform_share_median']:.3f}% | < 1% |")
    w(f"| whole warm-up (loom process + apply) / warm run, median | "
      f"{100 * summ['warmup_share_median']:.2f}% | |\n")
    w("![speed-up per architecture and two learning curves](zoo_warmstart.png)\n")
    w("## Per architecture (seeds pooled)\n")
    w("| child | parent (similarity) | layers with weights mapped / all layers | steps cold | steps warm | speed-up steps "
      "(median) | speed-up time (median) | test cold | test warm |")
    w("|---|---|---|---|---|---|---|---|---|")
    for a in archs:
        rs = [r for r in runs if r["arch"] == a]
        wu = rs[0]["warmup"]
        w(f"| {a} | {wu['parent']} ({wu['similarity']:.3f}) | {wu['layers_mapped']} of "
          f"{wu['layers_child']} | "
          f"{', '.join(fmt_steps(r['cold']['steps_to_target'], steps) for r in rs)} | "
          f"{', '.join(fmt_steps(r['warm']['steps_to_target'], steps) for r in rs)} | "
          f"{statistics.median(sp[(a, r['seed'])]['steps'] for r in rs):.2f}x | "
          f"{statistics.median(sp[(a, r['seed'])]['time'] for r in rs):.2f}x | "
          f"{statistics.mean(r['cold']['test'] for r in rs):.3f} | "
          f"{statistics.mean(r['warm']['test'] for r in rs):.3f} |")
    never = [(r["arch"], r["seed"], k) for r in runs for k in ("cold", "warm")
             if r[k]["steps_to_target"] is None]
    w("")
    if never:
        w("Runs that never reached the target count as the step budget "
          f"({steps}), which understates their side's steps: " +
          ", ".join(f"{a} seed {s} {k}" for a, s, k in never) + ".\n")
    w("## Costs of the warm-up\n")
    ms = [r["warmup"]["match_s"] for r in runs]
    ts = [r["warmup"]["transform_s"] for r in runs]
    tot = [r["warmup"]["total_s"] for r in runs]
    tr = [r["warm"]["train_s"] for r in runs]
    w(f"Match (coarse pass + alignments against {len(res['repo'])} entries): median "
      f"{1000 * statistics.median(ms):.1f} ms; transform (load the parent, align, map, write): "
      f"median {1000 * statistics.median(ts):.1f} ms; the whole warm-up as a job sees it "
      f"(starting the `loom` process, both, and `apply` in Python): median "
      f"{1000 * statistics.median(tot):.0f} ms, against a median training run of "
      f"{statistics.median(tr):.1f} s ({steps} steps). The matching cost at scale is in "
      f"[zoo_match.md](zoo_match.md).\n")
    w("## Reading\n")
    w("<!-- notes -->")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
