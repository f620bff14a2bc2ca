"""Per-job CPU counters on loomd's GET /metrics never go back: a job whose
shell runs three CPU-bound child processes one after another (each exits and
is reaped) is scraped every 50 ms; loom_job_process_cpu_{user,system}_seconds_total
must never decrease, and once only `sleep` is left the job's CPU seconds must
still hold what its children used (a sum over the live processes alone would
drop back to ~0 there)."""

import os
import re
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402

SCRIPT = """#!/bin/bash
for k in 1 2 3; do
  ( i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done )
done
echo children-done > MARKER
sleep 60
"""


def job_cpu(text, job_id):
    total = 0.0
    found = False
    for mode in ("user", "system"):
        m = re.search(r'^loom_job_process_cpu_%s_seconds_total\{job_id="%d"\} (\S+)$' % (mode, job_id),
                      text, re.M)
        if m:
            total += float(m.group(1))
            found = True
    return total if found else None


def main():
    args = ["--executor", "local", "--node", "name=n1,cpus=4,memory=4GiB,gpus=1,gpu_type=virtual"]
    with Loomd(extra_args=args) as d:
        c = d.client()
        marker = os.path.join(tempfile.mkdtemp(prefix="loom-jobcpu-"), "children.done")
        job = c.submit("burn", SCRIPT.replace("MARKER", marker))
        job_id = job["id"]
        series = []
        done_at = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            status, _, body = c.request("GET", "/metrics")
            assert status == 200, status
            v = job_cpu(body.decode(), job_id)
            if v is not None:
                series.append(v)
            j = c.get(job_id)
            assert j["state"] in ("PENDING", "RUNNING"), j
            if done_at is None and os.path.exists(marker):
                done_at = len(series)
            if done_at is not None and len(series) >= done_at + 5:
                break
            time.sleep(0.05)
        assert done_at is not None, "the job's children did not finish in time"
        assert len(series) >= 5, series
        for a, b in zip(series, series[1:]):
            assert b >= a - 1e-9, f"CPU counter went back: {a} -> {b} (series {series})"
        peak_during = max(series[:done_at]) if done_at else 0.0
        after = series[-1]
        # Three loops of 150,000 shell iterations take well over 0.2 s of CPU.
        assert after >= 0.2, f"the job's CPU after its children ended is {after} s: {series}"
        assert after >= peak_during, (peak_during, after)
        c.cancel(job_id)
    print("ok: %d scrapes, job CPU %.2f s after its children ended" % (len(series), after))


if __name__ == "__main__":
    main()
