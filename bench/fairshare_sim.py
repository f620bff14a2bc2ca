"""bench/fairshare_sim: the fair queue policies side by side in the simulator
(issue 19): fifo, tiresias, fairshare, fairshare by account,
tiresias+fairshare and drf, on loaded multi-user workloads built from the
Alibaba GPU trace 2023 (workloads/traces/alibaba-gpu-2023), with
`loom sim --mode dynamic --users N --user-skew S [--accounts M]`.

The trace's own cluster never queues (its arrivals span 150 days), so the
workloads are loaded by construction, every step deterministic:
- nodes: every K-th line of openb_node_list_gpu_node.csv (the first, the
  (K+1)-th, ...), keeping the mix of GPU types;
- tasks: openb_pod_list_default.csv as is ("full"), or only its tasks that
  ran at most one hour and ask for at most one GPU ("short": greedy
  backfill starves multi-GPU tasks behind one-GPU ones under every policy,
  and tasks of days hold GPUs longer than any backlog lasts, which no
  policy without preemption can undo);
- arrivals divided by --compress; owners drawn by loom sim (seeded Zipf).

Cases (the issue's: two users submitting at 4:1 with equal shares):
  4to1      short, K=100 (13 nodes, 56 GPUs), compress 1000, 2 users,
            skew 2 (Zipf weights 1 : 1/4)
  accounts  short, same cluster, 3 users uniform, 2 accounts (users 1 and 3
            charge account 1, user 2 account 2)
  full      full, K=50 (25 nodes, 116 GPUs), compress 300, 2 users, skew 2

    python3 bench/fairshare_sim.py BUILD_DIR [--out DIR] [--seeds 42-44]

Writes DIR/fairshare_sim.md and DIR/fairshare_sim.json (default
/tmp/loom-bench; make bench: docs/bench)."""

import argparse
import csv
import datetime
import gzip
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "workloads", "traces", "alibaba-gpu-2023")
POLICIES = ["fifo", "tiresias", "fairshare:1h", "fairshare:1h,by=account",
            "tiresias+fairshare:1h", "drf"]
CASES = [
    # name, tasks, every K-th node, compress, users, skew, accounts
    ("4to1", "short", 100, 1000, 2, 2.0, 0),
    ("accounts", "short", 100, 1000, 3, 0.0, 2),
    ("full", "full", 50, 300, 2, 2.0, 0),
]


def write_nodes(path, k):
    with gzip.open(os.path.join(DATA, "openb_node_list_gpu_node.csv.gz"), "rt") as f:
        lines = f.read().splitlines()
    keep = [lines[0]] + [l for i, l in enumerate(lines[1:]) if i % k == 0]
    with open(path, "w") as f:
        f.write("\n".join(keep) + "\n")
    return len(keep) - 1, sum(int(l.split(",")[3]) for l in keep[1:])


def write_short(path):
    with gzip.open(os.path.join(DATA, "openb_pod_list_default.csv.gz"), "rt", newline="") as f:
        rows = list(csv.reader(f))
    h = {k: i for i, k in enumerate(rows[0])}
    out = [rows[0]]
    for r in rows[1:]:
        start = int(r[h["scheduled_time"]] or r[h["creation_time"]])
        if int(r[h["deletion_time"]]) - start <= 3600 and int(r[h["num_gpu"]]) <= 1:
            out.append(r)
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(out)
    return len(out) - 1


def sim(loom, nodes, pods, policy, case, seeds):
    _, _, _, compress, users, skew, accounts = case
    cmd = [loom, "sim", "--nodes", nodes, "--pods", pods, "--policy", "bestfit", "--mode",
           "dynamic", "--compress", str(compress), "--users", str(users), "--user-skew",
           str(skew), "--queue", policy, "--seeds", seeds, "--json"]
    if accounts:
        cmd += ["--accounts", str(accounts)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    shown = [os.path.basename(c) if c.startswith("/") else c for c in cmd]
    shown[shown.index("--queue") + 1] = "POLICY"
    return " ".join(shown), json.loads(out)["bestfit"]


def parts(xs):
    return " : ".join("%.3f" % x for x in xs)


def table(case, results, accounts):
    lines = ["| policy | mean JCT s | p99 JCT s | Jain (mean JCT) | GPU time by user, all "
             "| GPU time by user while all have a backlog | that time s |",
             "|---|---:|---:|---:|---|---|---:|"]
    for pol, r in results:
        lines.append("| `%s` | %.0f | %.0f | %.3f | %s | %s | %.0f |" % (
            pol, r["mean_jct_s"], r["p99_jct_s"], r["jain_jct"], parts(r["user_gpu_part"]),
            parts(r["user_contended_gpu_part"]), r["contended_s"]))
    if accounts:
        lines += ["", "Accounts (user k charges account 1 + (k-1) %% %d), GPU time while all "
                  "have a backlog:" % accounts, ""]
        for pol, r in results:
            acc = [0.0] * accounts
            for k, x in enumerate(r["user_contended_gpu_part"]):
                acc[k % accounts] += x
            lines.append("- `%s`: %s" % (pol, parts(acc)))
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--out", default="/tmp/loom-bench")
    ap.add_argument("--seeds", default="42-44")
    a = ap.parse_args()
    loom = os.path.abspath(os.path.join(a.build, "loom"))
    if not os.path.isdir(DATA):
        print("fairshare_sim: no trace at %s: skipped" % DATA)
        return 0
    os.makedirs(a.out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="loom-fairshare-sim.")
    short = os.path.join(tmp, "short.csv")
    nshort = write_short(short)
    full = "openb-default"  # loom sim finds the shipped trace by name
    md = ["# Fair queue policies in the simulator (issue 19)", "",
          "`python3 bench/fairshare_sim.py %s --out %s --seeds %s` on %s (%s, %d CPUs), "
          "%s UTC. Figures are means over the seeds (%s); the runs are deterministic "
          "for a seed. Wall times are not figures here." % (
              a.build, a.out, a.seeds, platform.node(), platform.machine(), os.cpu_count(),
              datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
              a.seeds), "",
          "How the workloads are built, and why: the docstring of bench/fairshare_sim.py and "
          "docs/scheduling.md, \"Fair share in the simulator\". `short` keeps %d of the "
          "default list's 8,152 tasks. \"While all have a backlog\": every user's waiting "
          "jobs ask for at least 1/N of the cluster's GPUs." % nshort, ""]
    raw = {}
    for case in CASES:
        name, tasks, k, compress, users, skew, accounts = case
        nodes = os.path.join(tmp, "nodes-%d.csv" % k)
        nn, ng = write_nodes(nodes, k)
        results = []
        for pol in POLICIES:
            cmd, r = sim(loom, nodes, short if tasks == "short" else full, pol, case, a.seeds)
            results.append((pol, r))
            raw.setdefault(name, {})[pol] = r
            print(name, pol, parts(r["user_contended_gpu_part"]), file=sys.stderr)
        md += ["## %s" % name, "",
               "Tasks `%s`, every %d-th GPU node (%d nodes, %d GPUs), arrivals / %d, %d users, "
               "skew %g%s. Command (per policy): `%s`." % (
                   tasks, k, nn, ng, compress, users, skew,
                   ", %d accounts" % accounts if accounts else "", cmd), ""]
        md += table(case, results, accounts) + [""]
    path = os.path.join(a.out, "fairshare_sim.md")
    old = open(path).read() if os.path.exists(path) else ""
    keep = old[old.find("## Notes"):] if "## Notes" in old else ""  # written by hand
    with open(path, "w") as f:
        f.write("\n".join(md) + ("\n" + keep if keep else ""))
    with open(os.path.join(a.out, "fairshare_sim.json"), "w") as f:
        json.dump(raw, f, indent=1, sort_keys=True)
    print("wrote %s" % os.path.join(a.out, "fairshare_sim.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
