"""loomd and the simulator run one scheduling step (libloom runtime): a trace
replayed live through loomd (sleep jobs, time compressed 60x) and through
`loom_sim_dynamic` (tests/integration/sim_starts.c) gives the same start
order and the same placements (node and GPUs) for deterministic policies.

The trace is built so that its events are at least 0.5 s apart once
compressed: loomd's start latency (a step, a fork) and its end detection
(a poll tick) then cannot reorder them. A queue forms (jobs wait for
resources), a small job backfills past a big one, and the priority queue
reorders the waiting jobs.
"""

import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

COMPRESS = 60.0
# name, due (s, uncompressed), duration (s), GPUs, priority
TRACE = [
    ("A", 0, 180, 2, 0),
    ("B", 30, 120, 4, 0),
    ("C", 60, 60, 3, 0),    # waits: nothing free until B ends
    ("D", 90, 120, 1, 5),   # waits too; first under the priority queue
    ("E", 120, 30, 4, 0),   # only n1 can hold it: waits until n1 is empty; F backfills
    ("F", 240, 60, 2, 0),
    ("G", 330, 30, 1, 9),
]
NODES = [("n0", 8, 2), ("n1", 8, 4)]  # name, CPUs, GPUs


def time_limit(dur):
    """The live job's time limit (whole seconds, generous), which sjf orders by in loomd;
    the simulator is given the same number as the job's estimate (else sjf there would
    use the trace's run time, an oracle loomd does not have)."""
    return int(dur / COMPRESS) + 10


def write_inputs(tmp):
    nodes = os.path.join(tmp, "nodes.csv")
    with open(nodes, "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        for name, cpus, gpus in NODES:
            f.write(f"{name},{cpus * 1000},16384,{gpus},virtual\n")
    trace = os.path.join(tmp, "trace.jsonl")
    with open(trace, "w") as f:
        for name, due, dur, gpus, prio in TRACE:
            f.write(json.dumps({"id": name, "due_s": due, "duration_s": dur, "cpus": 1,
                                "mem": "1GiB", "gpus": gpus, "priority": prio,
                                "estimate_s": time_limit(dur)}) + "\n")
    return nodes, trace


def simulated(nodes, trace, queue, placement):
    exe = os.path.join(build_dir(), "sim_starts")
    out = subprocess.run([exe, nodes, trace, queue, placement, str(COMPRESS)], check=True,
                         capture_output=True, text=True).stdout
    starts = []
    for line in out.splitlines():
        name, _t, node, gpus = (line.split() + [""])[:4]
        starts.append((name, node, [int(g) for g in gpus.split(",") if g]))
    return starts


def live(queue, placement):
    args = ["--executor", "local", "--queue-policy", queue, "--placement", placement]
    for name, cpus, gpus in NODES:
        args += ["--node", f"name={name},cpus={cpus},memory=16GiB,gpus={gpus},gpu_type=virtual"]
    ids = {}
    with Loomd(extra_args=args) as d:
        c = d.client()
        t0 = time.monotonic()
        for name, due, dur, gpus, prio in TRACE:
            wait = t0 + due / COMPRESS - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            ids[name] = c.call("job.submit", {
                "name": name, "script": f"#!/bin/bash\nsleep {dur / COMPRESS:.3f}\n",
                "priority": prio, "time_limit": time_limit(dur),
                "resources": {"cpus": 1, "memory": "1GiB", "gpus": gpus}})["id"]
        deadline = time.monotonic() + 60
        jobs = {}
        while time.monotonic() < deadline:
            jobs = {n: c.get(i) for n, i in ids.items()}
            if all(j["state"] == "COMPLETED" for j in jobs.values()):
                break
            time.sleep(0.1)
        bad = {n: j["state"] for n, j in jobs.items() if j["state"] != "COMPLETED"}
        assert not bad, f"jobs did not complete: {bad}"
    starts = []
    for name, j in jobs.items():
        t = [e["time"] for e in j["events"] if e["to"] == "RUNNING"][0]
        starts.append((t, j["id"], name, j["run"]["node"], list(j["run"]["gpus"])))
    starts.sort()
    return [(name, node, gpus) for _t, _id, name, node, gpus in starts]


def main():
    tmp = tempfile.mkdtemp(prefix="loom-agree-")
    nodes, trace = write_inputs(tmp)
    for queue, placement in [("fifo", "firstfit"), ("priority", "bestfit")]:
        sim = simulated(nodes, trace, queue, placement)
        assert len(sim) == len(TRACE), f"simulator started {len(sim)} of {len(TRACE)}: {sim}"
        got = live(queue, placement)
        assert got == sim, (f"{queue}/{placement}: live and simulated differ:\n"
                            f"  live: {got}\n  sim:  {sim}")
        print(f"{queue}/{placement}: {len(got)} starts agree: "
              + " ".join(f"{n}@{node}{g}" for n, node, g in got))


if __name__ == "__main__":
    main()
