"""Scheduling and execution end to end (issue: scheduling and execution).

200 jobs of mixed GPU demands on one node with 4 virtual GPUs, run by a real
loomd with the local executor. Checks:
- at no moment is a GPU over-committed, reconstructed from the event log
  (RUNNING and end events) and each job's placement (run.gpus, run.gpu_share);
- every job ends in the state its script asks for (exit 0 -> COMPLETED,
  exit 3 -> FAILED, over its time limit -> TIMEOUT, cancelled -> CANCELLED);
- loomd killed with SIGKILL in the middle loses no job (all 200 are there,
  once each), adopts the jobs that were running, and leaves no orphan
  process once everything has ended.
"""

import datetime
import os
import random
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402

N = 200
rng = random.Random(5)


def ts(text):
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()


def make_jobs():
    jobs = []
    for i in range(N):
        kind = rng.choice(["whole1", "whole2", "whole4", "share250", "share500", "cpu"])
        res = {"cpus": 1}
        if kind.startswith("whole"):
            res["gpus"] = int(kind[5:])
        elif kind.startswith("share"):
            res["gpu_share"] = int(kind[5:])
        sleep = rng.choice([0.05, 0.1, 0.2, 0.3])
        r = rng.random()
        if r < 0.1:
            expect, script, limit = "FAILED", f"sleep {sleep}\nexit 3\n", 0
        elif r < 0.15:
            expect, script, limit = "TIMEOUT", "sleep 30\n", 1
        else:
            expect, script, limit = "COMPLETED", f"sleep {sleep}\nexit 0\n", 0
        spec = {"name": f"mix-{i}", "script": "#!/bin/bash\n" + script, "resources": res,
                "submit_id": f"mix-{i}"}
        if limit:
            spec["time_limit"] = limit
        jobs.append((spec, expect))
    # A few to cancel: long sleepers.
    for i in range(5):
        jobs[i * 37] = ({"name": f"cancel-{i}", "script": "#!/bin/bash\nsleep 60\n",
                         "resources": {"cpus": 1, "gpus": 1}, "submit_id": f"cancel-{i}"},
                        "CANCELLED")
    return jobs


def wait_all_ended(client, ids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = client.list_all()
        states = {j["id"]: j["state"] for j in jobs if j["id"] in ids}
        if all(s not in ("PENDING", "RUNNING") for s in states.values()):
            return
        time.sleep(0.2)
    left = {i: s for i, s in states.items() if s in ("PENDING", "RUNNING")}
    raise AssertionError(f"jobs still not ended after {timeout}s: {left}")


def check_no_overcommit(client, ids):
    intervals = []  # (start, end, gpu, share)
    for i in ids:
        j = client.get(i)
        run = j.get("run")
        # A job may have been requeued (marked RUNNING, loomd killed before
        # its process started): each RUNNING event opens a run, the next
        # event closes it; only the last run has a placement to check.
        runs, opened = [], None
        for e in j["events"]:
            if e["to"] == "RUNNING":
                opened = ts(e["time"])
            elif opened is not None:
                runs.append((opened, ts(e["time"]), e["to"]))
                opened = None
        if opened is not None:
            runs.append((opened, time.time(), None))
        if not runs:
            continue
        assert run is not None, f"job {i} ran but has no run record"
        assert all(r[2] == "PENDING" for r in runs[:-1]), f"job {i}: events {j['events']}"
        start, end, _ = runs[-1]
        # A cancelled job keeps its GPUs until its process has ended, which
        # the end record (run.outcome) marks; the RUNNING->CANCELLED event
        # comes earlier, at the request.
        ended_at = (run.get("outcome") or {}).get("ended_at")
        if ended_at:
            end = max(end, ts(ended_at))
        share = run["gpu_share"]
        for g in run["gpus"]:
            intervals.append((start, end, g, share))
    events = []
    for start, end, g, share in intervals:
        events.append((start, 1, g, share))
        events.append((end, 0, g, share))  # ends sort before starts at the same time
    events.sort()
    used = {}
    for t, kind, g, share in events:
        used[g] = used.get(g, 0) + (share if kind == 1 else -share)
        assert used[g] <= 1000, f"GPU {g} over-committed at {t}: {used[g]} milli-GPU"
    return len(intervals)


def processes_mentioning(text):
    out = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
    return [l for l in out.splitlines() if text in l and "ps -eo" not in l]


def main():
    jobs = make_jobs()
    args = ["--executor", "local", "--node", "name=n1,cpus=16,memory=16GiB,gpus=4,gpu_type=virtual",
            "--placement", "packing", "--grace", "500ms"]
    d = Loomd(extra_args=args).start()
    try:
        c = d.client()
        ids, expect = [], {}
        for spec, want in jobs:
            r = c.call("job.submit", spec)
            ids.append(r["id"])
            expect[r["id"]] = want
        cancel_ids = [i for i in ids if expect[i] == "CANCELLED"]
        # Cancel two while they run, the rest whatever their state.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and \
                sum(c.get(i)["state"] == "RUNNING" for i in cancel_ids[:2]) < 2:
            time.sleep(0.05)
        for i in cancel_ids:
            c.cancel(i)

        # Let about a third run, then kill loomd hard and restart it.
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            done = sum(1 for j in c.list_all() if j["state"] not in ("PENDING", "RUNNING"))
            if done >= N // 3:
                break
            time.sleep(0.1)
        running_before = [j["id"] for j in c.list_all(state="RUNNING")]
        d.kill9()
        time.sleep(0.3)
        d.start()
        c = d.client()
        wait_all_ended(c, set(ids), timeout=180)

        all_jobs = c.list_all()
        assert len(all_jobs) == N, f"{len(all_jobs)} jobs in the store, expected {N}"
        assert sorted(j["id"] for j in all_jobs) == sorted(ids), "ids differ"
        wrong = {j["id"]: (j["state"], expect[j["id"]], j["reason"]) for j in all_jobs
                 if j["state"] != expect[j["id"]]}
        assert not wrong, f"jobs in the wrong end state: {wrong}"
        for j in all_jobs:
            if j["state"] == "TIMEOUT":
                assert "time limit" in j["reason"], j
        n = check_no_overcommit(c, ids)
        info = c.info()
        d.stop()
        deadline = time.monotonic() + 10  # the shepherds exit after loomd
        while (left := processes_mentioning(d.state_dir)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not left, f"orphan processes: {left}"
        print(f"{N} jobs ended as expected; {n} GPU intervals, none over-committed; "
              f"{len(running_before)} jobs running across the kill -9; "
              f"occupancy {info['scheduler']['gpu_occupancy']:.2f} since restart")
    finally:
        d.cleanup()


if __name__ == "__main__":
    main()
