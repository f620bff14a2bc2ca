"""Fair share by account in loomd (docs/scheduling.md, "Fair share by
account"): one virtual GPU; a blocker job of account "acA" holds it for a
second, so acA has usage; meanwhile a job of acA and then one of acB wait.
When the GPU frees:
- fairshare:1m,by=account and tiresias+fairshare:1m,by=account start acB's
  job first (acB has used nothing);
- fifo, and fairshare by user (every job here has the same owner, loomd's
  user), start acA's job first, as submitted.
Jobs charge options.account (an operator, as loomd's own user is, may name
any account)."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402


def started(c, jid):
    return [e["time"] for e in c.get(jid)["events"] if e["to"] == "RUNNING"][0]


def first_started(policy):
    args = ["--executor", "local", "--queue-policy", policy,
            "--node", "name=n0,cpus=4,memory=4GiB,gpus=1,gpu_type=virtual"]
    with Loomd(extra_args=args) as d:
        c = d.client()

        def submit(name, account, script):
            return c.call("job.submit", {"name": name, "script": script,
                                         "resources": {"gpus": 1},
                                         "options": {"account": account}})["id"]

        block = submit("block", "acA", "#!/bin/bash\nsleep 1\n")
        deadline = time.monotonic() + 30
        while c.get(block)["state"] != "RUNNING":
            assert time.monotonic() < deadline, "the blocker did not start"
            time.sleep(0.05)
        a = submit("a", "acA", "#!/bin/bash\ntrue\n")
        b = submit("b", "acB", "#!/bin/bash\ntrue\n")
        deadline = time.monotonic() + 60
        while not all(c.get(i)["state"] == "COMPLETED" for i in (block, a, b)):
            assert time.monotonic() < deadline, "jobs did not complete"
            time.sleep(0.1)
        assert c.get(a)["owner"]["account"] == "acA", c.get(a)["owner"]
        return "acB" if started(c, b) < started(c, a) else "acA"


def main():
    want = {"fairshare:1m,by=account": "acB", "tiresias+fairshare:1m,by=account": "acB",
            "fifo": "acA", "fairshare:1m": "acA"}
    for policy, account in want.items():
        got = first_started(policy)
        assert got == account, f"{policy}: {got}'s job started first, expected {account}'s"
        print(policy, "->", got, "first")
    print("ok")


if __name__ == "__main__":
    main()
