#!/usr/bin/python3
"""Live reconfiguration through loomd (docs/scheduling.md, "Live
reconfiguration") with real training (workloads/models/train_plan.py, gloo
workers on CPU, virtual GPUs): loomd runs Rubick's policy (--rubick); job b
(one worker, may not grow) and job a (one worker, may grow to two) run
side by side; when b ends (cancelled here, so that the test does not hang
on the machine's speed), loomd itself asks a to checkpoint, and restarts it
from the checkpoint with two workers: same job id, LOOM_PLAN with two
workers, two GPUs, an event RUNNING -> RUNNING, run.reconfigurations 1.
Fails if loomd does not reconfigure.

A job that does not checkpoint (it ignores SIGTERM and is killed after
loomd's grace) fails with a reason that says so; that part needs no torch.
The training part needs Debian's python3-torch; without it there is no
training to reconfigure and it says so (as integration.rubick_restart
does)."""

import json
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402

SRC = os.path.abspath(os.environ.get("LOOM_SOURCE_DIR", "."))
SCRIPT = os.path.join(SRC, "workloads", "models", "train_plan.py")
DEVICE = os.path.join(SRC, "workloads", "devices", "h200.json")
NODE = "name=n1,cpus=2,memory=16GiB,gpus=2,gpu_type=virtual"

JOB = """#!/bin/sh
echo "plan=$LOOM_PLAN world=$LOOM_WORLD_SIZE gpus=$CUDA_VISIBLE_DEVICES cpus=$LOOM_CPUS" >&2
exec /usr/bin/python3 {script} --model lstm --global-batch 256 --input-size 8 \\
    --checkpoint {dir}/{name}.ckpt --total-steps 1000000
"""


def submit(c, d, name, gpus_max):
    return c.call("job.submit", {
        "name": name,
        "time_limit": 600,
        "script": JOB.format(script=SCRIPT, dir=d, name=name),
        "resources": {"gpus": 1, "cpus": 1, "memory": "4GiB"},
        "reconfig": {"global_batch": 256, "model": "lstm",
                     "gpus": {"min": 1, "max": gpus_max},
                     "cpus": {"min": 1, "max": gpus_max},
                     "memory": {"min": "4GiB", "max": "%dGiB" % (4 * gpus_max)}}})["id"]


def wait(c, i, what, ok, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = c.get(i)
        if ok(j):
            return j
        time.sleep(0.2)
    raise AssertionError(f"job {i}: {what} within {timeout} s: {json.dumps(c.get(i))[:3000]}")


def stdout_lines(j):
    with open(j["run"]["stdout"]) as f:
        return [json.loads(x) for x in f if x.startswith("{")]


SLEEPER = """#!/bin/sh
trap '{trap}' TERM
while :; do sleep 0.1; done
"""


def no_checkpoint():
    """a ignores the checkpoint request: killed after the grace, FAILED."""
    args = ["--executor", "local", "--node", NODE, "--rubick", DEVICE, "--rubick-cost", "5s",
            "--grace", "2s"]
    with Loomd(extra_args=args) as ld:
        c = ld.client()
        spec = {"resources": {"gpus": 1, "cpus": 1, "memory": "4GiB"}}
        rc = {"global_batch": 256, "model": "lstm"}
        b = c.call("job.submit", dict(spec, name="b", script=SLEEPER.format(trap="exit 0"),
                                      reconfig=dict(rc, gpus={"min": 1, "max": 1})))["id"]
        wait(c, b, "RUNNING", lambda j: j["state"] == "RUNNING", 30)
        a = c.call("job.submit", dict(spec, name="a", script=SLEEPER.format(trap=""),
                                      reconfig=dict(rc, gpus={"min": 1, "max": 2},
                                                    cpus={"min": 1, "max": 2},
                                                    memory={"min": "4GiB", "max": "8GiB"})))["id"]
        wait(c, a, "RUNNING", lambda j: j["state"] == "RUNNING", 30)
        c.call("job.cancel", {"id": b})
        ja = wait(c, a, "FAILED", lambda j: j["state"] == "FAILED", 60)
        assert "did not checkpoint for its reconfiguration" in ja["reason"], ja["reason"]
        assert ja["run"]["outcome"]["signal"] == 9, ja["run"]["outcome"]
        print(f"no checkpoint: {ja['state']}: {ja['reason']}")


def main():
    no_checkpoint()
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"python3-torch not importable ({e}): no training to reconfigure, only the "
              "refused checkpoint checked")
        return 0
    d = tempfile.mkdtemp(prefix="loom-rubick-")
    args = ["--executor", "local", "--node", NODE, "--rubick", DEVICE, "--rubick-cost", "5s",
            "--grace", "60s"]
    with Loomd(extra_args=args) as ld:
        c = ld.client()
        try:
            return live(c, d)
        finally:  # jobs outlive loomd: none is left training after a failure
            for j in c.call("job.list", {"state": ["PENDING", "RUNNING"]})["jobs"]:
                c.call("job.cancel", {"id": j["id"]})


def live(c, d):
    b = submit(c, d, "b", 1)
    wait(c, b, "RUNNING", lambda j: j["state"] == "RUNNING", 30)
    a = submit(c, d, "a", 2)
    ja = wait(c, a, "RUNNING", lambda j: j["state"] == "RUNNING", 30)
    assert ja["run"]["plan"]["workers"] == 1 and len(ja["run"]["gpus"]) == 1, ja["run"]
    assert ja["reconfig"]["model"] == "lstm", ja["reconfig"]
    time.sleep(4)  # a trains a few steps on one worker
    c.call("job.cancel", {"id": b})
    wait(c, b, "its end", lambda j: j["state"] == "CANCELLED" and "outcome" in j["run"], 60)
    ja = wait(c, a, "reconfigured to two workers",
              lambda j: j["run"].get("reconfigurations") == 1
              and not j["run"].get("reconfiguring"), 60)
    run = ja["run"]
    assert ja["state"] == "RUNNING" and run["plan"]["workers"] == 2, run
    assert sorted(run["gpus"]) == [0, 1], run
    ev = [e for e in ja["events"] if e["from"] == "RUNNING" and e["to"] == "RUNNING"]
    assert len(ev) == 1 and "reconfigured by rubick" in ev[0]["reason"], ja["events"]
    with open(os.path.join(run["dir"], "spec.json")) as f:  # what the shepherd was given
        left = json.load(f)["time_limit_ns"] / 1e9
    assert 300 < left < 600, f"the restart's time limit: {left} s, expected what is left of 600"
    time.sleep(4)  # a few steps on two workers
    c.call("job.cancel", {"id": a})
    ja = wait(c, a, "its end", lambda j: j["state"] == "CANCELLED" and "outcome" in j["run"],
              60)
    lines = stdout_lines(ja)
    assert len(lines) == 2, f"expected one JSON line per run: {lines}"
    one, two = lines
    assert one["workers"] == 1 and one["checkpointed"] and one["step"] >= 1, one
    assert two["workers"] == 2 and two["first_step"] == one["step"], two
    assert two["global_batch"] == 256 and two["step"] >= two["first_step"], two
    with open(run["stderr"]) as f:
        err = f.read()
    second = [x for x in err.splitlines() if x.startswith('plan={"workers": 2')]
    assert second and " world=2 gpus=" in second[0], err[-2000:]
    assert sorted(second[0].split(" gpus=")[1].split()[0].split(",")) == ["0", "1"], second
    print(f"a: {one['samples_per_s']:.1f} samples/s on 1 worker (steps 0..{one['step']}), "
          f"{two['samples_per_s']:.1f} on 2 (steps {two['first_step']}..{two['step']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
