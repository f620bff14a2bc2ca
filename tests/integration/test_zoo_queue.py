"""A warm-started job's expected shorter run reaches loomd's queue (docs/zoo.md,
"Expected speed-up and the queue"): under --queue-policy sjf, of two waiting
jobs with equal time limits the one labelled zoo.speedup starts first, though
it was submitted later; without the label the earlier one starts first.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402


def started(c, jid):
    return [e["time"] for e in c.get(jid)["events"] if e["to"] == "RUNNING"][0]


def run(warm_label):
    args = ["--executor", "local", "--queue-policy", "sjf",
            "--node", "name=n0,cpus=1,memory=4GiB,gpus=0"]
    with Loomd(extra_args=args) as d:
        c = d.client()

        def submit(name, script, labels=None):
            p = {"name": name, "script": script, "time_limit": 600,
                 "resources": {"cpus": 1, "memory": "1GiB"}}
            if labels:
                p["labels"] = labels
            return c.call("job.submit", p)["id"]

        # the blocker holds the only CPU until both others wait
        block = submit("block", "#!/bin/bash\nsleep 1.5\n")
        cold = submit("cold", "#!/bin/bash\ntrue\n")
        warm = submit("warm", "#!/bin/bash\ntrue\n", warm_label)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if all(c.get(i)["state"] == "COMPLETED" for i in (block, cold, warm)):
                break
            time.sleep(0.1)
        else:
            raise AssertionError("jobs did not complete")
        return started(c, warm) < started(c, cold)


def main():
    assert run({"zoo.speedup": "2.00", "zoo.parent": "1"}), "warm job did not start first"
    assert not run({"zoo.parent": "1"}), "without zoo.speedup the earlier job goes first"
    print("ok")


if __name__ == "__main__":
    main()
