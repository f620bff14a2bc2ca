"""Running quotas and stored pending reasons against a real loomd (local
executor, single-user mode, one node of 4 virtual GPUs), with account
quotas (`--quota account:NAME=gpus=G,running=N`): a job whose start would
pass its account's running GPUs or jobs stays PENDING with reason
QuotaLimit while jobs behind it start, and starts once its account's
running job ends. Each pending job's reason (QuotaLimit, Resources,
Priority) is written to the store itself: the test reads loom.db with
SQLite, not only job.get. A user quota (the test's own login) from the
configuration file holds a second job until the first ends. Bad quota
text is refused by loomd at start."""

import os
import pwd
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
LOOMD = os.path.join(build_dir(), "loomd")

# Each job runs until its flag file appears (the test decides when it ends).
WAIT = "#!/bin/bash\nwhile [ ! -e {flag} ]; do sleep 0.05; done\n"


class RunningQuota(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="loom-quota-")
        cls.d = Loomd(extra_args=[
            "--executor", "local", "--grace", "500ms",
            "--node", "name=n1,cpus=16,memory=8GiB,gpus=4",
            "--quota", "account:qa=gpus=1",
            "--quota", "account:qa=running=5",
            "--quota", "account:qb=running=1,pending=10"]).start()
        cls.c = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        for j in cls.c.list_all():
            if j["state"] in ("PENDING", "RUNNING"):
                cls.c.cancel(j["id"])
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def job(self, name, account=None, **res):
        flag = os.path.join(self.tmp, name + ".done")
        opts = {"workdir": self.tmp}
        if account:
            opts["account"] = account
        r = self.c.submit(name, WAIT.format(flag=flag), resources=dict({"cpus": 1}, **res),
                          options=opts)
        return r["id"], flag

    def wait_state(self, jid, state, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            j = self.c.get(jid)
            if j["state"] == state:
                return j
            time.sleep(0.05)
        self.fail(f"job {jid} is {j['state']} (reason {j.get('reason')}), not {state}")

    def stored_reason(self, jid, want, timeout=30):
        """The reason column of loom.db itself, as soon as it says want."""
        db = os.path.join(self.d.state_dir, "loom.db")
        deadline = time.monotonic() + timeout
        got = None
        while time.monotonic() < deadline:
            con = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=10)
            try:
                got = con.execute("SELECT reason FROM jobs WHERE id = ?", (jid,)).fetchone()[0]
            finally:
                con.close()
            if got == want:
                return
            time.sleep(0.05)
        self.fail(f"job {jid}: stored reason {got!r}, expected {want!r}")

    def test_quota_limit_holds_then_starts(self):
        a1, a1_flag = self.job("a1", "qa", gpus=1)
        self.wait_state(a1, "RUNNING")
        a2, a2_flag = self.job("a2", "qa", gpu_share=500)  # 1.5 GPUs for qa: over
        b1, b1_flag = self.job("b1", "qb", gpus=1)  # behind a2, fits its quota: starts
        b2, b2_flag = self.job("b2", "qb")  # qb runs one job already
        c1, c1_flag = self.job("c1", gpus=1)  # no quota names its account
        self.wait_state(b1, "RUNNING")
        self.wait_state(c1, "RUNNING")
        d1, d1_flag = self.job("d1", gpus=2)  # one GPU left: waits for resources
        d2, d2_flag = self.job("d2", gpus=2)  # behind d1
        for jid, why in ((a2, "QuotaLimit"), (b2, "QuotaLimit"), (d1, "Resources"),
                         (d2, "Priority")):
            self.stored_reason(jid, why)
            j = self.c.get(jid)
            self.assertEqual((j["state"], j["reason"]), ("PENDING", why))
        # squeue's view: the reason column of loom jobs
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        out = subprocess.run([LOOM, "jobs", "--format", "id,state,reason"], env=e,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {ln.split()[0]: ln.split()[1:] for ln in out.stdout.splitlines()[1:]}
        self.assertEqual(rows[str(a2)], ["PENDING", "QuotaLimit"])
        self.assertEqual(rows[str(d1)], ["PENDING", "Resources"])
        # qa's running job ends: a2 starts, b2 still waits on qb's
        open(a1_flag, "w").close()
        self.wait_state(a1, "COMPLETED")
        self.wait_state(a2, "RUNNING")
        self.assertEqual(self.c.get(b2)["reason"], "QuotaLimit")
        open(b1_flag, "w").close()
        self.wait_state(b2, "RUNNING")
        # d1 now fits (a1 and b1 gave their GPUs back; a2 holds half of one)
        self.wait_state(d1, "RUNNING")
        self.stored_reason(d2, "Resources")
        for f in (a2_flag, b2_flag, c1_flag, d1_flag, d2_flag):
            open(f, "w").close()
        for jid in (a2, b2, c1, d1, d2):
            self.wait_state(jid, "COMPLETED")

    def test_user_quota_from_config_file(self):
        """A user quota (by login) given in the configuration file."""
        login = pwd.getpwuid(os.geteuid()).pw_name
        conf = os.path.join(self.tmp, "loomd.conf")
        with open(conf, "w") as f:
            f.write(f"# one job at a time for {login}\nquota = user:{login}=running=1\n")
        d = Loomd(extra_args=["--config", conf, "--executor", "local", "--grace", "500ms",
                              "--node", "name=n1,cpus=4,memory=2GiB"]).start()
        try:
            c = d.client()
            flags = [os.path.join(self.tmp, f"u{i}.done") for i in range(2)]
            ids = [c.submit(f"u{i}", WAIT.format(flag=flags[i]), options={"workdir": self.tmp})
                   ["id"] for i in range(2)]
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and c.get(ids[0])["state"] != "RUNNING":
                time.sleep(0.05)
            time.sleep(0.5)  # a few steps: the second must not start
            j = c.get(ids[1])
            self.assertEqual((j["state"], j["reason"]), ("PENDING", "QuotaLimit"))
            open(flags[0], "w").close()
            while time.monotonic() < deadline and c.get(ids[1])["state"] != "RUNNING":
                time.sleep(0.05)
            self.assertEqual(c.get(ids[1])["state"], "RUNNING")
            self.assertEqual(c.get(ids[0])["state"], "COMPLETED")
            open(flags[1], "w").close()
            while time.monotonic() < deadline and c.get(ids[1])["state"] != "COMPLETED":
                time.sleep(0.05)
            self.assertEqual(c.get(ids[1])["state"], "COMPLETED")
        finally:
            d.cleanup()

    def test_bad_quota_refused_at_start(self):
        for spec, says in (("account:x=gpus=1.2345", "gpus '1.2345'"),
                           ("account:x=gpus=-1", "gpus '-1'"),
                           ("*=running=many", "running"),
                           ("user:y=cpus=3", "unknown limit")):
            p = subprocess.run([LOOMD, "--state-dir", os.path.join(self.tmp, "bad"),
                                "--executor", "none", "--quota", spec],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(says, p.stderr)
            self.assertIn(spec, p.stderr)


if __name__ == "__main__":
    unittest.main()
