"""A restarted loomd adopts the right Slurm job after a crash in the middle
of placing a job again (the node-down give-up; docs/slurm.md, Restart).

A job loom gave up on Slurm (its node went down before Slurm started it)
is placed again later, under a new tag loom:<id>.<attempt>. Two crash
windows are set up exactly, by writing the store as loomd would have left
it (loomd stopped; a real Slurm holds the jobs):
- A: loomd recorded the second placement (RUNNING, attempt 2) and died
  before sbatch. Slurm holds only the first attempt's job, tag loom:<id>,
  CANCELLED. The restarted loomd must not adopt that job (it ended by
  loom's give-up, not the job's): it queues the job again, and it runs.
- B: loomd recorded that it gives the Slurm job up (giving_up) and died
  before scancel: the Slurm job still waits (held). The restarted loomd
  must cancel it and place the job again; it runs under loom:<id>.2.
"""

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd  # noqa: E402

src = os.environ.get("LOOM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
script = os.path.join(src, "scripts", "slurm", "netns-cluster.sh")


def slurm(cdir, *args):
    r = subprocess.run([script, "exec", cdir] + list(args), capture_output=True, text=True)
    assert r.returncode == 0, f"{args}: {r.stderr}"
    return r.stdout


def wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def slurm_jobs(cdir_c):
    """Slurm's jobs: id -> (comment, state)."""
    out = {}
    for line in slurm(cdir_c, "squeue", "-h", "-t", "all", "-o", "%i|%k|%T").splitlines():
        sid, tag, state = line.split("|")
        out[sid] = (tag, state)
    return out


def main():
    cdir = tempfile.mkdtemp(prefix="loom-slurmadopt-")
    cdir_c = cdir + "/cluster"
    d = None
    try:
        up = subprocess.run([script, "up", cdir_c], capture_output=True, text=True)
        assert up.returncode == 0, f"cluster did not start: {up.stderr}"
        env = dict(line.split(" ", 1)[1].split("=", 1) for line in up.stdout.splitlines()
                   if line.startswith("export "))
        os.environ["SLURM_CONF"] = env["SLURM_CONF"]
        ns = env["LOOM_SLURM_NETNS"]
        state_dir = cdir + "/loomd"
        os.makedirs(state_dir)

        # Two jobs in loom's store, queued by a loomd that runs nothing.
        d = Loomd(state_dir=state_dir)
        d.start()
        c = d.client(unix=True)
        body = '#!/bin/bash\necho "$SLURMD_NODENAME"\n'
        ja = c.call("job.submit", {"name": "a", "script": body, "resources": {"cpus": 1},
                                   "submit_id": "adopt-a"})["id"]
        jb = c.call("job.submit", {"name": "b", "script": body, "resources": {"cpus": 1},
                                   "submit_id": "adopt-b"})["id"]
        assert d.stop() == 0
        d = None

        # Slurm's side of the crash: A's first attempt, given up (cancelled
        # before it started); B's job, still waiting.
        hold = ["sbatch", "--parsable", "--hold", "-w", "loom2", "--wrap", "true"]
        sid_a1 = slurm(cdir_c, *hold, f"--comment=loom:{ja}").strip()
        slurm(cdir_c, "scancel", sid_a1)
        sid_b1 = slurm(cdir_c, *hold, f"--comment=loom:{jb}").strip()
        wait_until(lambda: slurm_jobs(cdir_c)[sid_a1][1] == "CANCELLED", 30,
                   "the first attempt to be cancelled")

        # loom's side: the store as loomd left it in each window.
        base = {"node": "loom2", "gpus": [], "gpu_share": 0, "executor": "slurm",
                "suspended": False}
        run_a = dict(base, attempt=2)
        run_b = dict(base, attempt=1, giving_up=True, slurm_job_id=sid_b1,
                     slurm_state="PENDING", slurm_reason="JobHeldUser")
        db = sqlite3.connect(os.path.join(state_dir, "loom.db"))
        for jid, run in ((ja, run_a), (jb, run_b)):
            n = db.execute("UPDATE jobs SET state='RUNNING', run=? WHERE id=?",
                           (json.dumps(run), jid)).rowcount
            assert n == 1, f"job {jid} not in the store"
        db.commit()
        db.close()

        d = Loomd(state_dir=state_dir,
                  extra_args=["--executor", "slurm", "--log-level",
                              os.environ.get("LOOM_LOG_LEVEL", "info")],
                  wrapper=["nsenter", f"--net=/run/netns/{ns}"])
        d.start()
        c = d.client(unix=True)
        wait_until(lambda: all(c.get(j)["state"] not in ("PENDING", "RUNNING")
                               for j in (ja, jb)), 90, "both jobs to end")
        recs = slurm_jobs(cdir_c)
        log = d.read_log()

        a = c.get(ja)
        assert a["state"] == "COMPLETED", (a["state"], a["reason"], log)
        assert a["run"]["attempt"] == 3, a["run"]
        assert a["run"]["slurm_job_id"] != sid_a1, a["run"]
        assert recs[a["run"]["slurm_job_id"]] == (f"loom:{ja}.3", "COMPLETED"), recs
        assert any(e["reason"] == "requeued: loomd stopped before the job started"
                   for e in a["events"]), a["events"]
        with open(a["run"]["stdout"]) as f:
            assert f.read().split() == [a["run"]["node"]]

        b = c.get(jb)
        assert b["state"] == "COMPLETED", (b["state"], b["reason"], log)
        assert b["run"]["attempt"] == 2 and "giving_up" not in b["run"], b["run"]
        assert recs[sid_b1] == (f"loom:{jb}", "CANCELLED"), recs[sid_b1]
        assert recs[b["run"]["slurm_job_id"]] == (f"loom:{jb}.2", "COMPLETED"), recs
        assert any(e["reason"] == "requeued: its node went down before Slurm started it"
                   for e in b["events"]), b["events"]

        # Nothing else was submitted: one Slurm job per placement.
        tags = sorted(t for t, _ in recs.values())
        assert tags == sorted([f"loom:{ja}", f"loom:{ja}.3", f"loom:{jb}", f"loom:{jb}.2"]), tags
        assert d.stop() == 0
        d = None
        print(f"A: first attempt's CANCELLED Slurm job {sid_a1} not adopted, placed again "
              f"as loom:{ja}.3 -> COMPLETED; B: held Slurm job {sid_b1} cancelled after the "
              f"restart, placed again as loom:{jb}.2 -> COMPLETED")
    finally:
        if d is not None:
            d.cleanup()
        subprocess.run([script, "down", cdir_c])
        if not os.environ.get("LOOM_KEEP"):
            shutil.rmtree(cdir, ignore_errors=True)


if __name__ == "__main__":
    main()
