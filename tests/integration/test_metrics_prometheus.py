"""loomd's GET /metrics: store, scheduler, host and per-job families pass
`promtool check metrics` without a word, and a real Prometheus server
(Debian's, started here on loopback with loomd's bearer token) scrapes
loomd and can query what it scraped."""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


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

        work = tempfile.mkdtemp(prefix="loom-prom-")
        prom = None
        try:
            token_file = os.path.join(work, "token")
            shutil.copy(os.path.join(d.state_dir, "token"), token_file)
            host_port = d.url.split("://", 1)[1]
            with open(os.path.join(work, "prometheus.yml"), "w") as f:
                f.write(f"""global:
  scrape_interval: 1s
scrape_configs:
  - job_name: loomd
    authorization:
      type: Bearer
      credentials_file: {token_file}
    static_configs:
      - targets: ['{host_port}']
""")
            port = free_port()
            prom = subprocess.Popen(
                ["prometheus", "--config.file", os.path.join(work, "prometheus.yml"),
                 "--storage.tsdb.path", os.path.join(work, "data"),
                 "--web.listen-address", f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "log"), "wb"))
            api = f"http://127.0.0.1:{port}/api/v1"
            deadline = time.monotonic() + 60
            value = None
            while time.monotonic() < deadline:
                try:
                    q = urllib.request.urlopen(api + "/query?query=loom_gpus_allocated", timeout=2)
                    r = json.load(q)["data"]["result"]
                    if r:
                        value = float(r[0]["value"][1])
                        break
                except OSError:
                    pass
                time.sleep(0.5)
            assert value is not None, "Prometheus never scraped loomd: " + \
                open(os.path.join(work, "log")).read()[-2000:]
            targets = json.load(urllib.request.urlopen(api + "/targets", timeout=2))
            health = [t["health"] for t in targets["data"]["activeTargets"]]
            assert health == ["up"], targets
            assert value == 1.0, f"loom_gpus_allocated = {value}, expected 1 (one job, one GPU)"
            print(f"promtool clean; Prometheus scraped loomd: up, loom_gpus_allocated {value}")
        finally:
            if prom:
                prom.terminate()
                prom.wait(10)
            shutil.rmtree(work, ignore_errors=True)
        for j in c.list_all(state="RUNNING"):
            c.cancel(j["id"])


if __name__ == "__main__":
    main()
