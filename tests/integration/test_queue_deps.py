"""The queue's Slurm habits against a real loomd with the local executor:
pending reasons (Resources, Priority, JobHeld, BeginTime, Dependency) in
job.get, job.list and `loom jobs`; holds, begin times and dependencies
(a chain runs in order, afternotok, DependencyNeverSatisfied, singleton);
hold/release/requeue/update."""

import datetime
import json
import os
import pwd
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")


def stamp(text):
    """An RFC 3339 time from loomd as seconds since the epoch."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class QueueDeps(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd(extra_args=["--executor", "local", "--node",
                                  "name=n1,cpus=2,memory=4GiB", "--grace", "500ms"]).start()
        cls.c = cls.d.client()
        cls.tmp = tempfile.mkdtemp(prefix="loom-deps-")

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def loom(self, *args, timeout=60):
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        p = subprocess.run([LOOM] + list(args), capture_output=True, text=True, env=e,
                           cwd=self.tmp, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def submit(self, text, *args):
        path = os.path.join(self.tmp, "job.sh")
        with open(path, "w") as f:
            f.write("#!/bin/bash\n" + text + "\n")
        rc, out, err = self.loom("submit", "--json", path, *args)
        self.assertEqual(rc, 0, err)
        return json.loads(out)["id"]

    def job(self, jid):
        return self.c.call("job.get", {"id": jid})["job"]

    def wait_for(self, jid, pred, what, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            j = self.job(jid)
            if pred(j):
                return j
            time.sleep(0.05)
        self.fail(f"job {jid}: {what} not reached: {j['state']} {j.get('reason')}")

    def reason_is(self, jid, reason):
        return self.wait_for(jid, lambda j: j["state"] == "PENDING" and j["reason"] == reason,
                             "PENDING " + reason)

    def cancel_all(self, *ids):
        for i in ids:
            self.loom("cancel", str(i))

    def test_reasons_resources_priority(self):
        a = self.submit("sleep 30", "-c", "2", "--name", "big")
        self.wait_for(a, lambda j: j["state"] == "RUNNING", "RUNNING")
        b = self.submit("true", "-c", "2", "--name", "second")
        c = self.submit("true", "-c", "2", "--name", "third")
        self.reason_is(b, "Resources")
        self.reason_is(c, "Priority")
        page = self.c.call("job.list", {"state": ["PENDING"]})["jobs"]
        got = {j["id"]: j["reason"] for j in page}
        self.assertEqual((got[b], got[c]), ("Resources", "Priority"))
        rc, out, err = self.loom("jobs", "--format", "id,state,reason")
        self.assertEqual(rc, 0, err)
        rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[1:]}
        self.assertEqual(rows[str(b)], ["PENDING", "Resources"])
        self.assertEqual(rows[str(c)], ["PENDING", "Priority"])
        self.cancel_all(c, b, a)
        self.wait_for(b, lambda j: j["state"] == "CANCELLED", "CANCELLED")
        self.wait_for(a, lambda j: j["state"] == "CANCELLED", "CANCELLED")

    def ended(self, jid):
        return self.wait_for(jid, lambda j: j["state"] not in ("PENDING", "RUNNING"), "end",
                             timeout=60)

    def test_chain_runs_in_order(self):
        # Each job appends its id to one file; each depends on the one before.
        # The first is held until the chain is whole (on a loaded machine the
        # chain of quick jobs could otherwise run out while it is submitted).
        log = os.path.join(self.tmp, "chain.txt")
        ids = [self.submit(f"echo $LOOM_JOB_ID >> {log}", "--name", "chain", "--hold")]
        for _ in range(19):
            ids.append(self.submit(f"echo $LOOM_JOB_ID >> {log}", "--name", "chain",
                                   "--dependency", f"afterok:{ids[-1]}"))
        self.assertEqual(self.job(ids[-1])["state"], "PENDING")
        self.reason_is(ids[-1], "Dependency")
        rc, _, err = self.loom("release", str(ids[0]))
        self.assertEqual(rc, 0, err)
        for i in ids:
            self.assertEqual(self.ended(i)["state"], "COMPLETED")
        with open(log) as f:
            self.assertEqual([int(x) for x in f.read().split()], ids)
        starts = [stamp(self.job(i)["start_time"]) for i in ids]
        self.assertEqual(starts, sorted(starts))

    def test_afternotok_and_never_satisfied(self):
        bad = self.submit("exit 3")
        on_fail = self.submit("true", "--dependency", f"afternotok:{bad}")
        on_ok = self.submit("true", "--dependency", f"afterok:{bad}")
        anyway = self.submit("true", "--dependency", f"afterany:{bad}")
        self.assertEqual(self.ended(bad)["state"], "FAILED")
        self.assertEqual(self.ended(on_fail)["state"], "COMPLETED")
        self.assertEqual(self.ended(anyway)["state"], "COMPLETED")
        j = self.ended(on_ok)
        self.assertEqual((j["state"], j["reason"]), ("CANCELLED", "DependencyNeverSatisfied"))
        good = self.submit("true")
        never = self.submit("true", "--dependency", f"afternotok:{good}")
        either = self.submit("true", "--dependency", f"afternotok:{good}?afterok:{good}")
        self.assertEqual(self.ended(never)["reason"], "DependencyNeverSatisfied")
        self.assertEqual(self.ended(either)["state"], "COMPLETED")
        gone = self.submit("true", "--dependency", "afterok:999999")
        self.assertEqual(self.ended(gone)["reason"], "DependencyNeverSatisfied")

    def test_singleton(self):
        first = self.submit("sleep 1", "--name", "solo", "-c", "1")
        second = self.submit("true", "--name", "solo", "-c", "1", "--dependency", "singleton")
        self.wait_for(first, lambda j: j["state"] == "RUNNING", "RUNNING")
        self.reason_is(second, "Dependency")
        self.ended(first)
        self.assertEqual(self.ended(second)["state"], "COMPLETED")
        self.assertGreaterEqual(stamp(self.job(second)["start_time"]),
                                stamp(self.job(first)["end_time"]))

    def test_hold_release_update(self):
        held = self.submit("true", "--hold", "--name", "waiting")
        self.reason_is(held, "JobHeld")
        self.c.wait_steps(3)  # a few steps: a held job stays pending
        self.assertEqual(self.job(held)["state"], "PENDING")
        rc, out, err = self.loom("update", str(held), "--time", "1:00:00", "--priority", "7",
                                 "--name", "renamed")
        self.assertEqual((rc, out), (0, f"Updated job {held}\n"), err)
        j = self.reason_is(held, "JobHeld")
        self.assertEqual((j["name"], j["time_limit"], j["priority"]), ("renamed", 3600, 7))
        rc, out, err = self.loom("release", str(held))
        self.assertEqual((rc, out), (0, f"Released job {held}\n"), err)
        self.assertEqual(self.ended(held)["state"], "COMPLETED")
        # hold after submission, then release
        a = self.submit("true", "--begin", "now+1hour")
        self.reason_is(a, "BeginTime")
        rc, _, err = self.loom("hold", str(a))
        self.assertEqual(rc, 0, err)
        self.reason_is(a, "JobHeld")
        self.loom("hold", str(a))  # held already: no second event
        self.loom("release", str(a))
        self.reason_is(a, "BeginTime")
        # both in the job's events, as its submission and end are (issue 31)
        me = pwd.getpwuid(os.geteuid()).pw_name
        events = [(e["from"], e["to"], e["reason"])
                  for e in self.c.call("job.get", {"id": a})["job"]["events"]]
        self.assertEqual(events, [(None, "PENDING", None),
                                  ("PENDING", "PENDING", "held by " + me),
                                  ("PENDING", "PENDING", "released by " + me)])
        self.loom("cancel", str(a))
        rc, out, err = self.loom("show", str(a))
        self.assertEqual(rc, 0, err)
        shown = [l.split(None, 2)[2] for l in out.splitlines() if " -> " in l]
        self.assertEqual(shown[1:], ["PENDING -> PENDING  held by " + me,
                                     "PENDING -> PENDING  released by " + me,
                                     "PENDING -> CANCELLED  cancelled by request"], out)
        # errors: not pending, not found, bad usage
        rc, _, err = self.loom("hold", str(held))
        self.assertEqual(rc, 1)
        self.assertIn("COMPLETED", err)
        rc, _, err = self.loom("release", "999999")
        self.assertEqual((rc, err), (4, "loom release: job 999999 not found\n"))
        rc, _, err = self.loom("update", str(held))
        self.assertEqual(rc, 2)
        rc, _, err = self.loom("update", str(held), "--time", "soon")
        self.assertEqual(rc, 2)
        self.assertIn("--time", err)

    def test_begin_time(self):
        t0 = time.time()
        a = self.submit("true", "--begin", "now+2")
        self.reason_is(a, "BeginTime")
        self.assertEqual(self.ended(a)["state"], "COMPLETED")
        self.assertGreaterEqual(stamp(self.job(a)["start_time"]), t0 + 1.0)
        path = os.path.join(self.tmp, "never.sh")
        with open(path, "w") as f:
            f.write("#!/bin/bash\ntrue\n")
        rc, _, err = self.loom("submit", "--begin", "someday", path)
        self.assertNotEqual(rc, 0)
        self.assertIn("options.begin", err)

    def runs(self):
        try:
            with open(os.path.join(self.tmp, "requeue.txt")) as f:
                return f.read().count("run")
        except FileNotFoundError:
            return 0

    def test_requeue(self):
        a = self.submit("echo run >> requeue.txt; sleep 30", "-c", "2")
        self.wait_for(a, lambda j: j["state"] == "RUNNING" and self.runs() == 1, "first run")
        rc, out, err = self.loom("requeue", str(a))
        self.assertEqual(rc, 0, err)
        # stopped, queued again, started again: a second run
        self.wait_for(a, lambda j: j["state"] == "RUNNING" and self.runs() == 2, "second run")
        self.loom("cancel", str(a))
        self.ended(a)
        rc, _, err = self.loom("requeue", str(a))  # an ended job runs again
        self.assertEqual(rc, 0, err)
        self.wait_for(a, lambda j: j["state"] == "RUNNING", "RUNNING again")
        self.loom("cancel", str(a))
        self.ended(a)
        b = self.submit("true", "--hold")
        rc, _, err = self.loom("requeue", str(b))
        self.assertEqual(rc, 1)
        self.assertIn("PENDING", err)
        self.loom("cancel", str(b))
        c = self.submit("echo done >> completed.txt")
        self.assertEqual(self.ended(c)["state"], "COMPLETED")
        rc, _, err = self.loom("requeue", str(c))  # a completed job never runs twice
        self.assertEqual(rc, 1, err)
        self.assertIn("COMPLETED", err)
        time.sleep(0.5)
        self.assertEqual(self.job(c)["state"], "COMPLETED")
        with open(os.path.join(self.tmp, "completed.txt")) as f:
            self.assertEqual(f.read(), "done\n")

    def test_array_throttle_env(self):
        out = os.path.join(self.tmp, "arr")
        os.makedirs(out, exist_ok=True)
        first = self.submit(
            f"echo $LOOM_ARRAY_JOB_ID $LOOM_ARRAY_TASK_ID $SLURM_ARRAY_JOB_ID "
            f"$SLURM_ARRAY_TASK_ID $SLURM_ARRAY_TASK_COUNT $SLURM_ARRAY_TASK_MIN "
            f"$SLURM_ARRAY_TASK_MAX > {out}/$LOOM_JOB_ID; "
            f"echo start >> {out}/log; sleep 0.4; echo end >> {out}/log",
            "--array", "1-7:2,10%1", "-c", "1", "--name", "arr")
        self.reason_is(first + 1, "JobArrayTaskLimit")
        tasks = [j for j in self.c.call("job.list", {"limit": 1000})["jobs"]
                 if j["options"].get("array_job_id") == first]
        self.assertEqual([j["options"]["array_task_id"] for j in tasks], [1, 3, 5, 7, 10])
        self.assertEqual([j["id"] for j in tasks], list(range(first, first + 5)))
        rc, listing, err = self.loom("jobs", "--format", "id,state,reason")
        self.assertEqual(rc, 0, err)
        self.assertIn(f"{first}_[", listing)
        for j in tasks:
            self.assertEqual(self.ended(j["id"])["state"], "COMPLETED")
        for j in tasks:
            with open(os.path.join(out, str(j["id"]))) as f:
                t = j["options"]["array_task_id"]
                self.assertEqual(f.read().split(),
                                 [str(first), str(t), str(first), str(t), "5", "1", "10"])
        # %1: one task at a time (the node would hold two)
        depth = peak = 0
        with open(os.path.join(out, "log")) as f:
            for line in f.read().split():
                depth += 1 if line == "start" else -1
                peak = max(peak, depth)
        self.assertEqual(peak, 1)

    def test_array_cancel(self):
        first = self.submit("sleep 30", "--array", "0-3", "--hold")
        rc, _, err = self.loom("cancel", f"{first}_2")
        self.assertEqual(rc, 0, err)
        states = [self.job(first + k)["state"] for k in range(4)]
        self.assertEqual(states, ["PENDING", "PENDING", "CANCELLED", "PENDING"])
        rc, out, err = self.loom("cancel", str(first))
        self.assertEqual(rc, 0, err)
        states = [self.job(first + k)["state"] for k in range(4)]
        self.assertEqual(states, ["CANCELLED"] * 4)


class Restart(unittest.TestCase):
    """Holds and dependencies live in the store: a new loomd keeps them."""

    def test_kept_across_restart(self):
        args = ["--executor", "local", "--node", "name=n1,cpus=2,memory=4GiB"]
        d = Loomd(extra_args=args).start()
        try:
            c = d.client()
            held = c.call("job.submit", {"name": "h", "script": "#!/bin/bash\ntrue\n",
                                         "options": {"hold": True}})["id"]
            first = c.call("job.submit", {"name": "f", "script": "#!/bin/bash\nsleep 2\n"})
            first = first["id"]
            dep = c.call("job.submit", {"name": "d", "script": "#!/bin/bash\ntrue\n",
                                        "options": {"dependency": f"afterok:{first}"}})
            dep = dep["id"]
            c.close()
            d.stop()
            d.start()
            c = d.client()
            end = time.monotonic() + 30
            while c.call("job.get", {"id": dep})["job"]["state"] != "COMPLETED":
                self.assertLess(time.monotonic(), end)
                time.sleep(0.1)
            j = c.call("job.get", {"id": held})["job"]
            self.assertEqual((j["state"], j["reason"]), ("PENDING", "JobHeld"))
            c.call("job.release", {"id": held})
            while c.call("job.get", {"id": held})["job"]["state"] != "COMPLETED":
                self.assertLess(time.monotonic(), end)
                time.sleep(0.1)
            c.close()
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
