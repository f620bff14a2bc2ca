"""Running quotas and stored pending reasons against a real loomd (local
executor, single-user mode, one node of 4 virtual GPUs), with account
quotas (`--quota account:NAME=gpus=G,running=N`): a job whose start would
pass its account's running GPUs or jobs stays PENDING with reason
QuotaLimit while jobs behind it start, and starts once its account's
running job ends. Each pending job's reason (QuotaLimit, Resources,
Priority) is written to the store itself: the test reads loom.db with
SQLite, not only job.get. A user quota (the test's own login) from the
configuration file holds a second job until the first ends. Bad quota
text is refused by loomd at start. As root, two real accounts (useradd
loomq1t<pid>, loomq2t<pid>, removed at the end) against a --multi-user
loomd: one account's running quota holds its own job only (skipped, saying
so, when not root)."""

import json
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
            self.assertEqual("quota" in j, why == "QuotaLimit")
        # which limit holds each: qa's GPUs, qb's running jobs
        self.assertEqual(self.c.get(a2)["quota"], {"on": "account", "limit": "gpus",
                                                   "used": 1000, "asks": 500, "allowed": 1000})
        self.assertEqual(self.c.get(b2)["quota"], {"on": "account", "limit": "running",
                                                   "used": 1, "asks": 1, "allowed": 1})
        listed = {j["id"]: j for j in self.c.list_all()}
        self.assertEqual(listed[a2]["quota"]["limit"], "gpus")
        # squeue's view: the reason column of loom jobs
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        out = subprocess.run([LOOM, "jobs", "--format", "id,state,reason"], env=e,
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        rows = {ln.split()[0]: ln.split()[1:] for ln in out.stdout.splitlines()[1:]}
        self.assertEqual(rows[str(a2)], ["PENDING", "QuotaLimit"])
        self.assertEqual(rows[str(d1)], ["PENDING", "Resources"])
        out = subprocess.run([LOOM, "show", str(a2)], env=e, capture_output=True, text=True,
                             timeout=60)
        self.assertIn("  reason:      QuotaLimit\n  quota:       its account's running GPUs: "
                      "1 in use + 0.5 asked > 1 allowed\n", out.stdout)
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
            c.wait_steps(3)  # a few steps: the second must not start
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


TAG = "%d" % (os.getpid() % 100000)
QUSER1, QUSER2 = "loomq1t" + TAG, "loomq2t" + TAG


@unittest.skipUnless(os.geteuid() == 0, "needs root: creates accounts and runs loomd as root")
class MultiUserQuota(unittest.TestCase):
    """Two real accounts (useradd, removed at the end), loomd as root with
    --multi-user: the first account may run one job at a time
    (`user:NAME=running=1`); its second job waits with QuotaLimit while the
    other account's job behind it starts, and starts as its first ends."""

    @classmethod
    def setUpClass(cls):
        for u in (QUSER1, QUSER2):
            subprocess.run(["useradd", "-m", "-U", "-s", "/bin/bash", u], check=True,
                           capture_output=True)
        cls.pw = {u: pwd.getpwnam(u) for u in (QUSER1, QUSER2)}
        cls.sockdir = tempfile.mkdtemp(prefix="loom-mq-sock-")
        os.chmod(cls.sockdir, 0o755)
        cls.sock = os.path.join(cls.sockdir, "loomd.sock")
        cls.d = Loomd(extra_args=["--multi-user", "--socket", cls.sock, "--executor", "local",
                                  "--node", "name=n1,cpus=8,memory=4GiB,gpus=2",
                                  "--grace", "500ms", "--quota", f"user:{QUSER1}=running=1",
                                  "--quota", f"account:{QUSER2}=gpus=2"]).start()
        cls.c = cls.d.client()

    @classmethod
    def tearDownClass(cls):
        for j in cls.c.list_all():
            if j["state"] in ("PENDING", "RUNNING"):
                cls.c.cancel(j["id"])
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.sockdir])
        for u in (QUSER1, QUSER2):
            subprocess.run(["pkill", "-KILL", "-u", u], capture_output=True)
            subprocess.run(["userdel", "-r", "-f", u], capture_output=True)

    def submit_as(self, user, name):
        """loom submit run as the account, in its home; returns (id, flag)."""
        pw = self.pw[user]
        flag = os.path.join(pw.pw_dir, name + ".done")
        script = os.path.join(pw.pw_dir, name + ".sh")
        with open(script, "w") as f:
            f.write(WAIT.format(flag=flag))
        os.chown(script, pw.pw_uid, pw.pw_gid)
        env = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user,
               "LOOM_URL": "unix:" + self.sock}
        p = subprocess.run([LOOM, "submit", "--json", "--gpus", "1", script],
                           capture_output=True, text=True, env=env, cwd=pw.pw_dir,
                           user=pw.pw_uid, group=pw.pw_gid, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)["id"], flag

    def wait_state(self, jid, state, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            j = self.c.get(jid)
            if j["state"] == state:
                return j
            time.sleep(0.05)
        self.fail(f"job {jid} is {j['state']} (reason {j.get('reason')}), not {state}")

    def test_user_quota_holds_one_user_only(self):
        a1, a1_flag = self.submit_as(QUSER1, "a1")
        j = self.wait_state(a1, "RUNNING")
        self.assertEqual(j["owner"]["user"], QUSER1)
        a2, a2_flag = self.submit_as(QUSER1, "a2")  # one running already
        b1, b1_flag = self.submit_as(QUSER2, "b1")  # behind it: starts
        self.wait_state(b1, "RUNNING")
        j = self.c.get(a2)
        self.assertEqual((j["state"], j["reason"]), ("PENDING", "QuotaLimit"))
        open(b1_flag, "w").close()  # QUSER2's job ends: QUSER1's quota still holds a2
        self.wait_state(b1, "COMPLETED")
        self.c.wait_steps(3)  # a few steps after b1 ended: a2 must still wait
        self.assertEqual(self.c.get(a2)["reason"], "QuotaLimit")
        open(a1_flag, "w").close()  # QUSER1's running job ends: a2 starts
        self.wait_state(a1, "COMPLETED")
        j = self.wait_state(a2, "RUNNING")
        self.assertEqual(j["owner"]["user"], QUSER1)
        open(a2_flag, "w").close()
        self.wait_state(a2, "COMPLETED")


if __name__ == "__main__":
    unittest.main()
