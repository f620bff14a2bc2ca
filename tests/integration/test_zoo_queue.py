"""A warm start does not jump loomd's queue on a guessed speed-up (issue 33;
docs/zoo.md, "Warm starts and the queue"): under --queue-policy sjf, of two
waiting jobs with equal time limits the earlier one starts first, whether
or not the later carries the warm-start labels or a zoo.speedup label (loomd
used to divide the later one's time limit by it: 1.3x-4.3x derived from the
parent's similarity, which measured speed-ups of 0.45x-22x at one similarity
showed to have no basis).
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
    assert not run({"zoo.speedup": "2.00", "zoo.parent": "1"}), \
        "a zoo.speedup label moved the later job ahead"
    assert not run({"zoo.parent": "1"}), "the earlier job did not go first"
    print("ok")


if __name__ == "__main__":
    main()
