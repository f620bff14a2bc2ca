"""The cost of usage sampling (docs/bench/usage.md): loomd's CPU per sampled
job per second, the shepherds' CPU, and the store's growth per point and
per job-day, with N sleep jobs running on the local executor.

    python3 bench/usage_sampling.py [--jobs N] [--seconds S] [--build DIR]

Starts loomd (DIR/loomd, default build/) on a node of N CPUs, submits N
`sleep` jobs of one CPU each, waits until all run, then measures over S
seconds (within the jobs' first minute, where each is sampled every second:
the costliest phase): loomd's and the shepherds' CPU time (/proc/PID/stat),
the points written (job.usage), and job_usage's b-tree bytes per row
(SQLite's dbstat, once loomd has stopped).
Prints one JSON object."""

import argparse
import json
import os
import sqlite3
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from loomd_client import Loomd  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def rows_and_bytes(db):
    """job_usage's rows and the bytes of its b-tree pages (SQLite's dbstat)."""
    c = sqlite3.connect(db, timeout=30)
    n = c.execute("SELECT count(*) FROM job_usage").fetchone()[0]
    size = c.execute("SELECT sum(pgsize) FROM dbstat WHERE name = 'job_usage'").fetchone()[0]
    c.close()
    return n, size or 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--build")
    a = ap.parse_args()
    if a.build:
        os.environ["LOOM_BUILD_DIR"] = a.build
    d = Loomd(extra_args=["--executor", "local", "--node",
                          f"name=bench,cpus={a.jobs},memory={a.jobs * 64}MiB"]).start()
    c = d.client(unix=True)
    ids = [c.submit(f"s{i}", "#!/bin/sh\nexec sleep 3600\n",
                    resources={"cpus": 1, "memory": 32 << 20})["id"] for i in range(a.jobs)]
    deadline = time.monotonic() + 600
    while len(c.list_all(state=["RUNNING"])) < a.jobs:
        if time.monotonic() > deadline:
            raise SystemExit("not all jobs started in 600 s")
        time.sleep(0.5)
    shepherds = [c.get(i)["run"]["shepherd_pid"] for i in ids]
    db = os.path.join(d.state_dir, "loom.db")
    r0 = sum(c.call("job.usage", {"id": i})["points"] for i in ids)
    l0 = cpu_seconds(d.proc.pid)
    s0 = sum(cpu_seconds(p) for p in shepherds)
    t0 = time.monotonic()
    time.sleep(a.seconds)
    l1 = cpu_seconds(d.proc.pid)
    s1 = sum(cpu_seconds(p) for p in shepherds)
    t1 = time.monotonic()
    r1 = sum(c.call("job.usage", {"id": i})["points"] for i in ids)
    for i in ids:
        c.cancel(i)
    c.close()
    d.stop()
    rows, size = rows_and_bytes(db)  # after loomd's last checkpoint
    d.cleanup()
    samples = r1 - r0
    wall = t1 - t0
    bytes_per_point = size / rows if rows else None
    print(json.dumps({
        "jobs": a.jobs, "seconds": round(wall, 1), "points_written": samples,
        "points_per_job_second": round(samples / (a.jobs * wall), 3),
        "loomd_cpu_seconds": round(l1 - l0, 2),
        "loomd_cpu_us_per_sampled_job_second": round((l1 - l0) / (a.jobs * wall) * 1e6, 1),
        "loomd_cpu_us_per_point": round((l1 - l0) / samples * 1e6, 1) if samples else None,
        "shepherds_cpu_seconds": round(s1 - s0, 2),
        "store_bytes_per_point": round(bytes_per_point, 1) if bytes_per_point else None,
        "store_bytes_per_job_day_bound": round(bytes_per_point * 1000) if bytes_per_point else None,
    }, indent=1))


if __name__ == "__main__":
    main()
