"""bench/dep_chain: a chain of N jobs, each `afterok` on the one before,
through a real loomd with the local executor: the time from the first
submission until the last job has ended, and per link (one job's end to the
next one's start, from the jobs' recorded times). Every job must complete,
in order.

    python3 bench/dep_chain.py BUILD_DIR OUT.md [N]
"""

import datetime
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from loomd_client import Loomd  # noqa: E402


def stamp(text):
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def main():
    build, out = os.path.abspath(sys.argv[1]), sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 1000
    os.environ["LOOM_BUILD_DIR"] = build
    with Loomd(extra_args=["--executor", "local", "--node", "name=n1,cpus=4,memory=4GiB"]) as d:
        c = d.client(unix=True)
        t0 = time.perf_counter()
        ids = [c.call("job.submit", {"name": "c0", "script": "#!/bin/bash\ntrue\n"})["id"]]
        for i in range(1, n):
            ids.append(c.call("job.submit", {"name": f"c{i}", "script": "#!/bin/bash\ntrue\n",
                                             "options": {"dependency": f"afterok:{ids[-1]}"}})["id"])
        submit_s = time.perf_counter() - t0
        while c.call("job.get", {"id": ids[-1]})["job"]["state"] in ("PENDING", "RUNNING"):
            time.sleep(0.05)
        total_s = time.perf_counter() - t0
        jobs = [c.call("job.get", {"id": i})["job"] for i in ids]
        c.close()
    assert all(j["state"] == "COMPLETED" for j in jobs), [j["state"] for j in jobs]
    starts = [stamp(j["start_time"]) for j in jobs]
    assert starts == sorted(starts)
    links = [stamp(b["start_time"]) - stamp(a["end_time"]) for a, b in zip(jobs, jobs[1:])]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    q = statistics.quantiles(links, n=100)
    with open(out, "w") as f:
        f.write(f"""# bench/dep_chain — a chain of {n:,} afterok jobs

Command: `nice -n 10 python3 bench/dep_chain.py {sys.argv[1]} {out} {n}`
Date: {now}
Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}; shared with
other developers' builds and tests while this ran (load average {open('/proc/loadavg').read().split()[0]}): timings are noisy.

loomd (release build) with the local executor, one node of 4 CPUs; job i runs `true` and
depends on job i-1 (`afterok`). All {n:,} submitted first, then waited for. Checked: every job
COMPLETED, start times in chain order.

| | value |
|---|---:|
| submissions ({n:,}, one call each) | {submit_s:.2f} s |
| first submission to last job ended | {total_s:.2f} s |
| per link: end of a job to start of the next, median | {statistics.median(links) * 1000:.0f} ms |
| per link p90 / max | {q[89] * 1000:.0f} ms / {max(links) * 1000:.0f} ms |

A link is the runner noticing the end (its poll, every 100 ms tick or sooner when woken),
judging the waiting dependencies again (once per step in which a job ended), and the next step
starting the released job.
""")
    print(open(out).read())


if __name__ == "__main__":
    main()
