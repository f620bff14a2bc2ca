"""loomd's GET /metrics: store, scheduler, host and per-job families pass
`promtool check metrics` without a word, and a real Prometheus server
(Debian's, started here on loopback with loomd's bearer token) scrapes
loomd and can query what it scraped."""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402
from prom_server import Prometheus  # noqa: E402


def main():
    args = ["--executor", "local", "--node", "name=n1,cpus=4,memory=4GiB,gpus=2,gpu_type=virtual"]
    with Loomd(extra_args=args) as d:
        c = d.client()
        c.submit("metrics-job", "#!/bin/bash\nsleep 30\n", resources={"gpus": 1})
        deadline = time.monotonic() + 20
        while c.list_all(state="RUNNING") == [] and time.monotonic() < deadline:
            time.sleep(0.05)
        status, _, body = c.request("GET", "/metrics")
        assert status == 200, status
        text = body.decode()
        for family in ("loom_jobs", "loom_gpus_allocated", "loom_cpu_seconds_total",
                       "loom_memory_total_bytes", "loom_job_process_resident_memory_bytes"):
            assert any(l.startswith(family) for l in text.splitlines()), f"no {family}"
        lint = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
        assert lint.returncode == 0 and not lint.stdout.strip() and not lint.stderr.strip(), \
            f"promtool: rc={lint.returncode} {lint.stdout!r} {lint.stderr!r}"

        with Prometheus(d) as prom:
            value = prom.query("loom_gpus_allocated", time.monotonic() + 60)
            assert value is not None, "Prometheus never scraped loomd: " + prom.log()
            targets = prom.get("/targets")
            health = [t["health"] for t in targets["data"]["activeTargets"]]
            assert health == ["up"], targets
            assert value == 1.0, f"loom_gpus_allocated = {value}, expected 1 (one job, one GPU)"
            print(f"promtool clean; Prometheus scraped loomd: up, loom_gpus_allocated {value}")
        for j in c.list_all(state="RUNNING"):
            c.cancel(j["id"])


if __name__ == "__main__":
    main()
