#!/usr/bin/python3
"""Rubick's live reconfiguration through loomd, with real training on this
machine's CPUs (docs/scheduling.md, "Live reconfiguration").

loomd runs Rubick's policy (--rubick h200: the performance model's
device) on one node of two virtual GPUs and two CPUs. Two lstm jobs
(workloads/models/train_plan.py, global batch 256, sequence 8, gloo
workers of one thread each) are submitted with a "reconfig": b may use one
GPU, a one or two. loomd starts both on one GPU each; when b ends, loomd
(not this script) decides to grow a, asks it to checkpoint (SIGTERM),
and restarts it from its checkpoint with two workers (LOOM_PLAN). The
figures are the jobs' own: each run prints the steps it trained and its
samples per second. Writes OUT (markdown).

    bench/rubick_demo.py BUILD_DIR OUT [A_STEPS B_STEPS]
"""

import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(SRC, "tests", "integration"))
from loomd_client import Loomd  # noqa: E402

SCRIPT = os.path.join(SRC, "workloads", "models", "train_plan.py")
NODE = "name=demo,cpus=2,memory=16GiB,gpus=2,gpu_type=virtual"
JOB = """#!/bin/sh
exec /usr/bin/python3 {script} --model lstm --global-batch 256 --input-size 8 \\
    --checkpoint {dir}/{name}.ckpt --total-steps {steps}
"""


def submit(c, d, name, steps, gpus_max):
    return c.call("job.submit", {
        "name": name,
        "script": JOB.format(script=SCRIPT, dir=d, name=name, steps=steps),
        "resources": {"gpus": 1, "cpus": 1, "memory": "4GiB"},
        "reconfig": {"global_batch": 256, "model": "lstm",
                     "gpus": {"min": 1, "max": gpus_max}, "cpus": {"min": 1, "max": gpus_max},
                     "memory": {"min": "4GiB", "max": "%dGiB" % (4 * gpus_max)}}})["id"]


def wait_end(c, ids, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        jobs = [c.get(i) for i in ids]
        if all(j["state"] not in ("PENDING", "RUNNING") for j in jobs):
            return jobs
        time.sleep(0.5)
    raise SystemExit(f"jobs did not end within {timeout} s: {[c.get(i)['state'] for i in ids]}")


def runs(j):
    with open(j["run"]["stdout"]) as f:
        return [json.loads(x) for x in f if x.startswith("{")]


def main(argv):
    build, out = argv[1], argv[2]
    a_steps = int(argv[3]) if len(argv) > 3 else 60
    b_steps = int(argv[4]) if len(argv) > 4 else 15
    os.environ["LOOM_BUILD_DIR"] = os.path.abspath(build)
    d = tempfile.mkdtemp(prefix="loom-rubick-demo-")
    t0 = time.monotonic()
    args = ["--executor", "local", "--node", NODE, "--rubick",
            os.path.join(SRC, "workloads", "devices", "h200.json"), "--rubick-cost", "10s",
            "--grace", "120s"]
    with Loomd(extra_args=args) as ld:
        c = ld.client()
        b = submit(c, d, "b", b_steps, 1)
        while c.get(b)["state"] == "PENDING":
            time.sleep(0.2)
        a = submit(c, d, "a", a_steps, 2)
        ja, jb = wait_end(c, [a, b], 1800)
        ra, rb = runs(ja), runs(jb)  # loomd's state directory goes with it
    wall = time.monotonic() - t0
    load = open("/proc/loadavg").read().split()[:3]
    cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"],
                         capture_output=True, text=True).stdout.strip()
    ev = [e for e in ja["events"] if e["from"] == "RUNNING" and e["to"] == "RUNNING"]
    lines = [
        "# Rubick live reconfiguration through loomd",
        "",
        "Command: `bench/rubick_demo.sh build` (`bench/rubick_demo.py BUILD_DIR OUT %d %d`)."
        % (a_steps, b_steps),
        "loomd with `--rubick workloads/devices/h200.json --rubick-cost 10s` on one node of two",
        "virtual GPUs and two CPUs; two lstm",
        "jobs (global batch 256, sequence 8; gloo workers of one thread each on this machine's",
        "CPUs) with a `reconfig`: b (%d steps) one GPU, a (%d steps) one or two. loomd decided"
        % (b_steps, a_steps),
        "the starts and the reconfiguration; the rates are the jobs' own output (samples per",
        "second over the steps of each run, from its first step after start-up). The policy",
        "decides on the H200's performance model (its predicted rates are in the event's",
        "reason); the measured rates are this machine's, where a virtual GPU is one gloo",
        "worker on a CPU core.",
        "",
        "Machine: %d cores (%s), %s; load average %s at the end: shared with other"
        % (os.cpu_count(), cpu, platform.system(), " ".join(load)),
        "developers' builds, so the rates are noisy. Date: %s. Wall time %.0f s."
        % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), wall),
        "",
        "| job | run | workers | steps | samples/s |",
        "|---|---|---|---|---|",
    ]
    for name, rr in (("b", rb), ("a", ra)):
        for k, r in enumerate(rr):
            lines.append("| %s | %d | %d | %d..%d%s | %.1f |" % (
                name, k + 1, r["workers"], r["first_step"], r["step"],
                " (checkpointed)" if r["checkpointed"] else "", r["samples_per_s"]))
    lines.append("")
    lines.append("a: %s; %s; run.reconfigurations %s, run.plan %s." % (
        ja["state"], "event RUNNING -> RUNNING: \"%s\"" % ev[0]["reason"] if ev
        else "no reconfiguration event", ja["run"].get("reconfigurations"),
        json.dumps(ja["run"].get("plan"))))
    if len(ra) == 2 and ra[0]["samples_per_s"] > 0:
        lines.append("a after / before: %.2fx." % (ra[1]["samples_per_s"] / ra[0]["samples_per_s"]))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if len(ra) == 2 and ev else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
