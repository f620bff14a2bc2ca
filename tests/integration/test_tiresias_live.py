"""Tiresias in loomd (docs/scheduling.md, "Tiresias"): one virtual GPU,
`--queue-policy tiresias:thresholds=1,knob=0` (one threshold at 1 GPU-second,
no promotion). A long job runs past the threshold (queue 1); a short job
submitted then (queue 0) preempts it: the long job is suspended (SIGSTOP,
its record says by whom), the short one runs to completion, and the long
one resumes. Under fifo the short job waits for the long one."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402

NODE = "name=n1,cpus=4,memory=4GiB,gpus=1,gpu_type=virtual"


def wait(c, jid, pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = c.get(jid)
        if pred(j):
            return j
        time.sleep(0.05)
    raise AssertionError(f"job {jid}: not {what}: {c.get(jid)}")


def scenario(policy):
    args = ["--executor", "local", "--node", NODE, "--queue-policy", policy]
    with Loomd(extra_args=args) as d:
        c = d.client()

        def submit(name, script):
            return c.call("job.submit", {"name": name, "script": script,
                                         "resources": {"gpus": 1, "cpus": 1}})["id"]

        long_ = submit("long", "#!/bin/bash\nsleep 60\n")
        wait(c, long_, lambda j: j["state"] == "RUNNING", "running")
        time.sleep(1.5)  # attains 1.5 GPU-seconds: past the threshold
        short = submit("short", "#!/bin/bash\nsleep 0.3\n")
        try:
            if policy == "fifo":
                time.sleep(2)
                assert c.get(short)["state"] == "PENDING", c.get(short)
                return
            j = wait(c, long_, lambda j: j["run"]["suspended"], "suspended")
            assert f"preempted by job {short}" in (j["reason"] or ""), j
            wait(c, short, lambda j: j["state"] == "COMPLETED", "completed")
            j = wait(c, long_, lambda j: not j["run"]["suspended"], "resumed")
            assert j["state"] == "RUNNING", j
            assert j["reason"] == "resumed", j
        finally:
            for jid in (long_, short):
                if c.get(jid)["state"] in ("PENDING", "RUNNING"):
                    c.cancel(jid)


def main():
    scenario("tiresias:thresholds=1,knob=0")
    scenario("fifo")
    print("ok")


if __name__ == "__main__":
    main()
