#!/usr/bin/env python3
"""The dashboard feed's cost with a large queue: how long one scan of the
active jobs takes (loomd's debug line "dash feed scan", active=N ms=T) with
10,000 jobs pending behind one running, when single jobs change (cancels).

    LOOM_BUILD_DIR=build /usr/bin/python3 bench/dash_feed.py

Results: docs/bench/dash_feed.md."""
import json
import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
from loomd_client import Loomd  # noqa: E402

work = tempfile.mkdtemp(prefix="loom-bench-dash-")
d = Loomd(extra_args=["--executor", "local", "--node", "name=n1,cpus=8,memory=16GiB,gpus=2",
                      "--log-level", "debug"]).start()
c = d.client()
c.submit("blocker", "#!/bin/sh\nsleep 300\n", resources={"gpus": 2}, options={"workdir": work})
time.sleep(1)
for k in range(10):
    batch = [{"jsonrpc": "2.0", "id": i, "method": "job.submit",
              "params": {"name": f"s-{k * 1000 + i}", "script": "true", "resources": {"gpus": 1},
                         "options": {"workdir": work}}} for i in range(1000)]
    c.request("POST", "/rpc", json.dumps(batch).encode())
time.sleep(1.5)
for j in range(20):  # one change at a time among 10,000 pending
    c.cancel(100 + j)
    time.sleep(0.3)
# cancel the pending jobs, then the blocker: jobs outlive loomd by design
ids = [j["id"] for j in c.list_all(state=["PENDING"])]
for k in range(0, len(ids), 1000):
    c.request("POST", "/rpc", json.dumps([{"jsonrpc": "2.0", "id": i, "method": "job.cancel",
                                           "params": {"id": i}} for i in ids[k:k + 1000]]).encode())
c.cancel(1)
time.sleep(1)
d.stop()
log = open(d.log_path).read()
d.cleanup()
scans = [(int(a), float(b)) for a, b in re.findall(r'dash feed scan" active=(\d+) ms=([\d.]+)', log)]
big = sorted(ms for n, ms in scans if n >= 9900)
print(f"scans: {len(scans)}, of them with >= 9,900 active: {len(big)}")
if big:
    print(f"scan of ~10,000 active jobs: median {big[len(big) // 2]:.1f} ms, "
          f"min {big[0]:.1f} ms, max {big[-1]:.1f} ms")
