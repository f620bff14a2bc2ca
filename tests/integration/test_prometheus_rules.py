"""dist/prometheus: the recording and alerting rules pass `promtool check
rules` and their unit tests (`promtool test rules`); every loom metric they
read is one a real loomd exports (loom_job_pending_oldest_seconds counting
a pending job's wait); and a real Prometheus, configured as docs/install.md
shows (scrape job "loomd" with the bearer token, the rule file), scrapes
loomd and evaluates the recording rules on it."""

import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("LOOM_SOURCE_DIR") or os.path.join(HERE, "..", "..")
RULES = os.path.join(SRC, "dist", "prometheus", "loom-rules.yml")
sys.path.insert(0, HERE)
from loomd_client import Loomd  # noqa: E402
from prom_server import Prometheus  # noqa: E402


def run(*cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, f"{' '.join(cmd)}: {p.stdout}{p.stderr}"
    print(f"ok: {' '.join(cmd[:3])}")


def main():
    run("promtool", "check", "rules", RULES)
    run("promtool", "test", "rules", os.path.join(SRC, "dist", "prometheus", "loom-rules.test.yml"))
    used = set(re.findall(r"\b(loom_[a-z_]+)", open(RULES).read()))
    args = ["--executor", "local", "--node", "name=n1,cpus=4,memory=4GiB,gpus=1,gpu_type=virtual"]
    with Loomd(extra_args=args) as d:
        c = d.client()
        c.submit("hold", "#!/bin/sh\nsleep 60\n", resources={"gpus": 1})
        c.submit("wait", "#!/bin/sh\ntrue\n", resources={"gpus": 1})
        # Job 1 runs, job 2 waits: loom_job_pending_oldest_seconds counts its
        # wait, polled until it passes a second (not a fixed sleep).
        deadline = time.monotonic() + 30
        while True:
            status, _, body = c.request("GET", "/metrics")
            assert status == 200, status
            text = body.decode()
            m = re.search(r"^loom_job_pending_oldest_seconds (\S+)$", text, re.M)
            age = float(m.group(1)) if m else None
            running = c.list_all(state="RUNNING")
            if (running and age is not None and age >= 1.0) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        exported = set(re.findall(r"^(loom_[a-z_]+)", text, re.M))
        missing = used - exported
        assert not missing, f"the rules read metrics loomd does not export: {sorted(missing)}"
        print(f"ok: loomd exports every metric the rules read ({len(used)})")
        assert age is not None and 1.0 <= age < 60, f"loom_job_pending_oldest_seconds {age}, expected the wait of job 2"
        print(f"ok: loom_job_pending_oldest_seconds {age}")

        with Prometheus(d, rules=RULES) as prom:
            deadline = time.monotonic() + 60
            pending = prom.query("loom:jobs_pending", deadline)
            occupancy = prom.query("loom:gpu_occupancy:ratio", deadline)
            log = prom.log()
            assert pending == 1.0, f"loom:jobs_pending = {pending}, expected 1: {log}"
            assert occupancy == 1.0, f"loom:gpu_occupancy:ratio = {occupancy}, expected 1: {log}"
            rules = prom.get("/rules")["data"]["groups"]
            bad = [r["name"] for g in rules for r in g["rules"] if r.get("health") == "err"]
            assert not bad, f"rules failing in Prometheus: {bad}"
            print(f"ok: Prometheus evaluates the rules on loomd: loom:jobs_pending {pending}, "
                  f"loom:gpu_occupancy:ratio {occupancy}")
        for j in c.list_all(state="RUNNING"):
            c.cancel(j["id"])
    print("PASS")


if __name__ == "__main__":
    main()
