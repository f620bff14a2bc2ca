"""bench/array_submit: how long one job.submit of a 10,000-task array takes
(every task created in one store transaction), beside 10,000 single
submissions in one JSON-RPC batch for scale, against a real loomd
(--executor none: nothing runs, only the queue is measured), over its Unix
socket. Each figure is the median of RUNS fresh loomd state directories.

    python3 bench/array_submit.py BUILD_DIR OUT.md [TASKS] [RUNS]
"""

import datetime
import os
import platform
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from loomd_client import Loomd  # noqa: E402

SCRIPT = "#!/bin/bash\necho $SLURM_ARRAY_TASK_ID\n"


def one_run(build, tasks):
    os.environ["LOOM_BUILD_DIR"] = build
    with Loomd(extra_args=["--executor", "none"]) as d:
        c = d.client(unix=True)
        t0 = time.perf_counter()
        r = c.call("job.submit", {"name": "arr", "script": SCRIPT,
                                  "options": {"array": f"0-{tasks - 1}%8"}})
        array_s = time.perf_counter() - t0
        assert r["array"]["tasks"] == tasks, r
        last = c.call("job.get", {"id": r["id"] + tasks - 1})["job"]
        assert last["options"]["array_task_id"] == tasks - 1
        assert last["options"]["array_job_id"] == r["id"]
        assert c.call("server.info")["jobs"]["PENDING"] == tasks
        calls = [("job.submit", {"name": f"j{i}", "script": SCRIPT}) for i in range(tasks)]
        t0 = time.perf_counter()
        for k in range(0, tasks, 1000):  # the batch limit is 1,000 calls
            c.batch(calls[k:k + 1000])
        batch_s = time.perf_counter() - t0
        c.close()
        return array_s, batch_s


def main():
    build, out = sys.argv[1], sys.argv[2]
    tasks = int(sys.argv[3]) if len(sys.argv) > 3 else 10000
    runs = int(sys.argv[4]) if len(sys.argv) > 4 else 5
    res = [one_run(os.path.abspath(build), tasks) for _ in range(runs)]
    arr = [a for a, _ in res]
    bat = [b for _, b in res]
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with open(out, "w") as f:
        f.write(f"""# bench/array_submit — one job.submit of a {tasks:,}-task array

Command: `nice -n 10 python3 bench/array_submit.py {build} {out} {tasks} {runs}`
Date: {now}
Machine: {platform.machine()}, {os.cpu_count()} CPUs, Linux {platform.release()}; shared with
other developers' builds and tests while this ran (timings are noisy; compare the two columns
of one run).

loomd `--executor none`, durability normal, over its Unix socket; a fresh state directory per
run. "array": one `job.submit` with `options.array = "0-{tasks - 1}%8"` (all tasks in one store
transaction), wall time client-side until the answer. "batch": the same number of plain
submissions as JSON-RPC batches of 1,000 calls, for scale. Each run also checks that every task
is stored and PENDING with its array ids.

| | median | min | max | runs |
|---|---:|---:|---:|---:|
| array ({tasks:,} tasks, 1 call) | {statistics.median(arr) * 1000:.0f} ms | {min(arr) * 1000:.0f} ms | {max(arr) * 1000:.0f} ms | {runs} |
| batches ({tasks:,} calls) | {statistics.median(bat) * 1000:.0f} ms | {min(bat) * 1000:.0f} ms | {max(bat) * 1000:.0f} ms | {runs} |
""")
    print(open(out).read())


if __name__ == "__main__":
    main()
