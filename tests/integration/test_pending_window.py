"""loomd's queue is every pending job (issue 18, finding 16): the scheduler
used to read only the 1,000 lowest-id pending jobs, so a queue policy never
saw a job behind them. Here 1,500 jobs wait behind one that holds the only
GPU; the last one submitted has the highest priority, and under the priority
queue it is the one that starts when the GPU frees. A job cancelled while
it waits never starts."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402

WAITING = 1500
BATCH = 500  # calls per JSON-RPC batch (the limit is 1,000)


def wait_state(c, job_id, state, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = c.get(job_id)
        if j["state"] == state:
            return j
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} not {state}: {c.get(job_id)}")


def main():
    args = ["--executor", "local", "--queue-policy", "priority",
            "--node", "name=n1,cpus=4,memory=4GiB,gpus=1,gpu_type=virtual"]
    with Loomd(extra_args=args) as d:
        c = d.client()
        gate = os.path.join(d.state_dir, "gate")
        blocker = c.call("job.submit", {
            "name": "blocker", "resources": {"gpus": 1},
            "script": f"#!/bin/bash\nwhile [ ! -e {gate} ]; do sleep 0.05; done\n"})["id"]
        wait_state(c, blocker, "RUNNING")
        ids = []
        for start in range(0, WAITING, BATCH):
            calls = [("job.submit", {"name": f"w{i}", "resources": {"gpus": 1},
                                     "priority": 10 if i == WAITING - 1 else
                                     (5 if i == WAITING - 2 else 0),
                                     "script": "#!/bin/bash\nsleep 30\n"})
                     for i in range(start, min(start + BATCH, WAITING))]
            for kind, res in c.batch(calls):
                assert kind == "ok", res
                ids.append(res["id"])
        top, second = ids[-1], ids[-2]
        assert top > 1000 + blocker, "the top job must lie beyond the old 1,000-job window"
        # the second-highest is cancelled while it waits: it must never start
        c.cancel(second)
        c.wait_steps(3)  # a few steps with every job pending
        assert c.get(top)["state"] == "PENDING"
        open(gate, "w").close()
        wait_state(c, blocker, "COMPLETED")
        started = wait_state(c, top, "RUNNING")
        assert c.get(second)["state"] == "CANCELLED"
        running = [i for i in ids[:200] if c.get(i)["state"] != "PENDING"]
        assert not running, f"lower-priority jobs left the queue: {running}"
        # leave nothing behind: every other job is cancelled first, then the top one
        rest = [i for i in ids if i not in (top, second)]
        for start in range(0, len(rest), BATCH):
            for kind, res in c.batch([("job.cancel", {"id": i})
                                      for i in rest[start:start + BATCH]]):
                assert kind == "ok", res
        c.cancel(top)
        deadline = time.monotonic() + 30  # until loomd has stopped its process
        while "outcome" not in c.get(top)["run"] and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "outcome" in c.get(top)["run"], c.get(top)
        print(f"job {top} (priority 10, {WAITING} jobs queued) started first on "
              f"{started['run']['node']}")


if __name__ == "__main__":
    main()
