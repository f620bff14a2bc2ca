"""Backfill with reservations in loomd (docs/scheduling.md, "Backfill"):
`loomd --backfill easy` on one node of two virtual GPUs. Two one-GPU jobs
with a 60 s time limit run; a whole-node job behind them waits for
resources and gets a reservation at the earlier of their expected ends;
a later CPU-only job (two of the node's four CPUs, the wide job asks
three) with a 600 s limit would fit now, but running to its limit would
hold CPUs the reservation needs: it waits
with reason Reservation. `job.get` carries the wide job's expected start
and `loom jobs --start` shows it (as `squeue --start`). Under greedy
backfill (the default) the CPU job starts at once and no job has an
expected start."""

import datetime
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
NODE = "name=n1,cpus=4,memory=4GiB,gpus=2,gpu_type=virtual"
SLEEP = "#!/bin/bash\nsleep 300\n"


def wait(c, jid, pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = c.get(jid)
        if pred(j):
            return j
        time.sleep(0.05)
    raise AssertionError(f"job {jid}: not {what}: {c.get(jid)}")


def parse_time(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def scenario(backfill):
    with Loomd(extra_args=["--executor", "local", "--node", NODE, "--backfill", backfill]) as d:
        c = d.client()

        def submit(name, limit, **res):
            return c.call("job.submit", {"name": name, "script": SLEEP, "time_limit": limit,
                                         "resources": res})["id"]

        small = [submit(f"s{i}", 60, gpus=1, cpus=1) for i in range(2)]
        for jid in small:
            wait(c, jid, lambda j: j["state"] == "RUNNING", "running")
        t_small = max(parse_time([e for e in c.get(i)["events"] if e["to"] == "RUNNING"][0]["time"])
                      for i in small)
        wide = submit("wide", 60, gpus=2, cpus=3)
        cpu = submit("cpu", 600, cpus=2)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        env["LOOM_STATE_DIR"] = d.state_dir
        try:
            if backfill == "greedy":
                wait(c, cpu, lambda j: j["state"] == "RUNNING", "running (greedy backfill)")
                assert "expected_start" not in c.get(wide), c.get(wide)
                return None
            j = wait(c, wide, lambda j: "expected_start" in j, "given an expected start")
            start = parse_time(j["expected_start"]["time"])
            assert j["expected_start"]["node"] == "n1", j["expected_start"]
            # The small jobs' limits end 60 s after they started (to the
            # second, as times are stored).
            assert abs(start - (t_small + 60)) <= 2, (start, t_small)
            j = wait(c, cpu, lambda j: j["reason"] == "Reservation", "held back (Reservation)")
            assert j["state"] == "PENDING", j
            p = subprocess.run([LOOM, "jobs", "--start"], capture_output=True, text=True,
                               env=env, timeout=30)
            assert p.returncode == 0, p.stderr
            lines = p.stdout.splitlines()
            assert "START_TIME" in lines[0] and "SCHEDNODES" in lines[0], p.stdout
            row = [l for l in lines if l.split()[0] == str(wide)]
            assert row and "n1" in row[0].split() and "N/A" not in row[0], p.stdout
            row = [l for l in lines if l.split()[0] == str(cpu)]
            assert row and "N/A" in row[0] and "Reservation" in row[0], p.stdout
            assert not any(l.split()[0] in map(str, small) for l in lines[1:]), p.stdout
            return p.stdout
        finally:
            for jid in small + [wide, cpu]:
                c.cancel(jid)


def array_one_record():
    """`loom squeue` shows an array's never-started tasks as one record, as
    Slurm keeps them in one job record with one reason: behind a job that
    holds the node, the first task waits for Resources and the others for
    Priority (they were two rows, split by reason)."""
    with Loomd(extra_args=["--executor", "local", "--node", NODE]) as d:
        c = d.client()
        blocker = c.call("job.submit", {"name": "blk", "script": SLEEP, "time_limit": 60,
                                        "resources": {"cpus": 4}})["id"]
        wait(c, blocker, lambda j: j["state"] == "RUNNING", "running")
        arr = c.call("job.submit", {"name": "arr", "script": SLEEP, "time_limit": 60,
                                    "resources": {"cpus": 4}, "options": {"array": "0-2"}})["id"]
        wait(c, arr + 2, lambda j: j["reason"] == "Priority", "waiting for Priority")
        assert c.get(arr)["reason"] in ("Resources", "Reservation"), c.get(arr)
        env = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        env["LOOM_STATE_DIR"] = d.state_dir
        p = subprocess.run([LOOM, "squeue", "--name", "arr", "-h", "-o", "%i %T %r"],
                           capture_output=True, text=True, env=env, timeout=30)
        assert p.returncode == 0, p.stderr
        rows = p.stdout.splitlines()
        assert len(rows) == 1 and rows[0].startswith(f"{arr}_[0-2] PENDING "), p.stdout
        for jid in (blocker, arr, arr + 1, arr + 2):
            c.cancel(jid)


def main():
    out = scenario("easy")
    print(out)
    scenario("greedy")
    array_one_record()
    print("ok")


if __name__ == "__main__":
    main()
