"""Gandiva's mechanisms in loomd (docs/running.md): time-slicing by
suspend/resume, and packing with introspection from the jobs' step markers.

The GPU is virtual, so the jobs emulate what a GPU does to co-located work:
a "contending" job beats a heartbeat file per step, and each step's compute
takes 2.5 x (jobs beating on its GPU in the last 0.12 s) times as long as
alone (kernels of co-located jobs can slow each other more than
time-slicing would; a suspended job stops beating, as a stopped job stops
computing); a "light" job does not touch the lock (packing costs it nothing).
Steps are reported with LOOM_STEP markers, timed by the job itself.
"""

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402

JOB = r'''#!/bin/bash
exec /usr/bin/python3 - <<'PY'
import glob, os, time
gpu = os.environ["CUDA_VISIBLE_DEVICES"]
beat = "{vgpu}/beat-%s-{name}" % gpu
ticks = open("{vgpu}/ticks-{name}", "a")
for i in range({steps}):
    t0 = time.monotonic_ns()
    if "{mode}" == "contend":
        now = time.time()
        os.utime(beat) if os.path.exists(beat) else open(beat, "w").close()
        active = sum(1 for f in glob.glob("{vgpu}/beat-%s-*" % gpu)
                     if now - os.path.getmtime(f) < 0.12)
        time.sleep(0.05 * (2.5 * active if active > 1 else 1))
    else:
        time.sleep(0.05)
    t1 = time.monotonic_ns()
    ticks.write("%f\n" % time.time())
    ticks.flush()
    print("LOOM_STEP %d %d %d" % (i, t0, t1), flush=True)
if os.path.exists(beat):
    os.unlink(beat)
PY
'''


def job(vgpu, name, mode, steps, **res):
    return {"name": name, "script": JOB.format(vgpu=vgpu, name=name, mode=mode, steps=steps),
            "resources": dict(cpus=1, **res)}


def wait_state(c, ids, states, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = [c.get(i)["state"] for i in ids]
        if all(s in states for s in got):
            return
        time.sleep(0.05)
    raise AssertionError(f"jobs {ids} not in {states}: {[c.get(i) for i in ids]}")


def wait_steps(vgpu, name, n, timeout=30):
    deadline = time.monotonic() + timeout
    path = os.path.join(vgpu, "ticks-" + name)
    while time.monotonic() < deadline:
        if os.path.exists(path) and sum(1 for _ in open(path)) >= n:
            return
        time.sleep(0.02)
    raise AssertionError(f"{name} did not reach {n} steps")


def ticks(vgpu, name):
    return [(float(l), name) for l in open(os.path.join(vgpu, "ticks-" + name))]


def switches(vgpu, a, b):
    merged = sorted(ticks(vgpu, a) + ticks(vgpu, b))
    return sum(1 for x, y in zip(merged, merged[1:]) if x[1] != y[1])


NODE = "name=n1,cpus=8,memory=8GiB,gpus=1,gpu_type=virtual"


def time_slicing(vgpu):
    """Two whole-GPU jobs on one GPU take turns of about a quantum each."""
    with Loomd(extra_args=["--executor", "local", "--node", NODE, "--timeslice", "1s"]) as d:
        c = d.client()
        a = c.call("job.submit", job(vgpu, "ta", "light", 50, gpus=1))["id"]
        wait_steps(vgpu, "ta", 3)
        b = c.call("job.submit", job(vgpu, "tb", "light", 50, gpus=1))["id"]
        wait_state(c, [a, b], {"COMPLETED"}, timeout=90)
        ja, jb = c.get(a), c.get(b)
        b_start = [e for e in jb["events"] if e["to"] == "RUNNING"][0]["time"]
        a_end = [e for e in ja["events"] if e["from"] == "RUNNING"][0]["time"]
        assert b_start < a_end, "b did not start before a ended: no time-slicing"
        n = switches(vgpu, "ta", "tb")
        # Turns of about 1 s with 50 ms steps: a few switches; running both
        # at once would interleave nearly every step (~100 switches).
        assert 2 <= n <= 16, f"{n} switches between the two jobs' steps"
        assert ja["run"]["suspended"] is False and jb["run"]["suspended"] is False
        return n


def packing(vgpu, mode):
    """Two half-GPU jobs packed on one GPU; introspection keeps or undoes it."""
    with Loomd(extra_args=["--executor", "local", "--node", NODE, "--placement", "packing", "--pack-check"]) as d:
        c = d.client()
        a = c.call("job.submit", job(vgpu, mode + "a", mode, 60, gpu_share=500))["id"]
        wait_steps(vgpu, mode + "a", 4)
        b = c.call("job.submit", job(vgpu, mode + "b", mode, 60, gpu_share=500))["id"]
        wait_state(c, [a, b], {"COMPLETED"}, timeout=120)
        notes = [c.get(i)["run"].get("gandiva", "") for i in (a, b)]
        return notes, switches(vgpu, mode + "a", mode + "b")


def main():
    vgpu = tempfile.mkdtemp(prefix="loom-vgpu-")
    n = time_slicing(vgpu)
    notes, _ = packing(vgpu, "light")
    assert all("packing kept" in x for x in notes), f"light jobs: {notes}"
    kept = notes[0]
    notes, sw = packing(vgpu, "contend")
    assert any("packing undone" in x for x in notes), f"contending jobs: {notes}"
    undone = [x for x in notes if "undone" in x][0]
    print(f"time-slicing: {n} switches; light: {kept}; contending: {undone}")


if __name__ == "__main__":
    main()
