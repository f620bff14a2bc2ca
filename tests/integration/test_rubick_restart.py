#!/usr/bin/python3
"""Checkpoint-restart reconfiguration with a real training process
(workloads/models/train_plan.py, docs/scheduling.md "Live
reconfiguration"): a one-worker lstm job asked to stop (SIGTERM to its
launcher) checkpoints after its current step and exits 0; restarted from the
checkpoint with two workers (LOOM_PLAN) it continues at that step to its
total, the global batch unchanged; a checkpoint of another global batch and
a malformed LOOM_PLAN are refused, naming them.

Needs Debian's python3-torch; without it there is no training to test and
it says so (as integration.prof_zoo does)."""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.environ.get("LOOM_SOURCE_DIR", ".")
SCRIPT = os.path.join(SRC, "workloads", "models", "train_plan.py")


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def job(ckpt, total, plan, batch=8, **kw):
    env = dict(os.environ, LOOM_PLAN=json.dumps(plan))
    return subprocess.Popen(
        ["/usr/bin/python3", SCRIPT, "--model", "lstm", "--global-batch", str(batch),
         "--input-size", "8", "--checkpoint", ckpt, "--total-steps", str(total)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True, **kw)


def finish(p, what):
    """p's output; a run that outlives the limit is killed with its workers
    and the test fails showing what it printed (a hang used to cost 300 s
    and say nothing)."""
    try:
        return p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        fail(f"{what}: still running after 120 s: stdout {out[-500:]!r} stderr {err[-2000:]!r}")


def main():
    try:
        import torch  # noqa: F401
    except ImportError as e:
        print(f"python3-torch not importable ({e}): no training to reconfigure, nothing checked")
        return 0
    with tempfile.TemporaryDirectory() as d:
        ckpt = os.path.join(d, "a.ckpt")
        p = job(ckpt, 1000000, {"workers": 1})
        time.sleep(8)  # some steps (import and fork included)
        p.send_signal(signal.SIGTERM)
        out, err = finish(p, "stop")
        if p.returncode != 0:
            fail(f"stop: exit {p.returncode}: {err[-2000:]}")
        first = json.loads(out.strip().splitlines()[-1])
        if not first["checkpointed"] or first["step"] < 1 or not os.path.exists(ckpt):
            fail(f"stop: expected a checkpoint after >= 1 step: {first}")
        # restart with two workers, two more steps
        total = first["step"] + 2
        p = job(ckpt, total, {"workers": 2})
        out, err = finish(p, "restart")
        if p.returncode != 0:
            fail(f"restart: exit {p.returncode}: {err[-2000:]}")
        second = json.loads(out.strip().splitlines()[-1])
        if (second["first_step"] != first["step"] or second["step"] != total
                or second["workers"] != 2 or second["checkpointed"]
                or second["global_batch"] != 8 or not second["samples_per_s"] > 0):
            fail(f"restart: expected steps {first['step']}..{total} on 2 workers: {second}")
        # another global batch cannot resume this checkpoint
        p = job(ckpt, total + 1, {"workers": 1}, batch=16)
        out, err = finish(p, "batch")
        if p.returncode == 0 or "global batch 8, expected lstm with 16" not in err:
            fail(f"batch: expected a refusal naming the checkpoint: {p.returncode} {err[-500:]}")
        env = dict(os.environ, LOOM_PLAN="[1, 2]")
        r = subprocess.run(["/usr/bin/python3", SCRIPT, "--model", "lstm"], env=env,
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 2 or "LOOM_PLAN" not in r.stderr:
            fail(f"LOOM_PLAN: expected exit 2 naming it: {r.returncode} {r.stderr[-500:]}")
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
