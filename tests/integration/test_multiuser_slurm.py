"""Multi-user loomd with the Slurm executor (docs/security.md, docs/slurm.md):
loomd as root submits each job to Slurm as its owner, as Slurm's own users
do, so that MUNGE names the owner and Slurm runs the job as that user.

A real Slurm (scripts/slurm/cluster.sh, one node on loopback, ports of our
own), the machine's munged (scripts/munge-up.sh), loomd as root with
--multi-user --executor slurm, and two accounts the test creates (useradd;
removed at the end). Shows:
- the first account's job runs under Slurm with its uid and gid (`id -u`,
  `id -g` in its output), in its submit directory; the output file lies
  there and belongs to it; squeue and scontrol name the account as the
  job's user; sbatch ran in the submit directory (SLURM_SUBMIT_DIR) and got
  nothing of loomd's environment;
- the second account can cancel it neither through loom (exit 6, the
  documented permission error) nor with scancel (Slurm's own check: the
  job is the first account's);
- the owner cancels a running job through loom: Slurm's job is CANCELLED
  (loomd, root, ran scancel);
- loomd killed (SIGKILL) while the owner's job runs: restarted, it follows
  the same Slurm job to its end;
- a job without a working directory fails with a reason saying so (the
  job directory is closed to its owner); root's own jobs are refused.

Needs root (useradd; loomd dropping to the job's owner before sbatch),
slurm-wlm and munge (scripts/deps/); without root it is skipped, saying so.
Run it alone: `flock /work/notes/slurm.lock ctest ...` (see tests.cmake)."""

import json
import os
import pwd
import random
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Client, Loomd, RpcError, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
SRC = os.environ.get("LOOM_SOURCE_DIR", os.getcwd())
CLUSTER = os.path.join(SRC, "scripts", "slurm", "cluster.sh")
TAG = "%d" % (os.getpid() % 100000)
USER1, USER2 = "loomslurm1t" + TAG, "loomslurm2t" + TAG
MARKER = "LOOMD_ONLY_MARKER"  # set in loomd's environment, must not reach jobs

PROBE = """#!/bin/bash
#SBATCH --job-name=probe
echo "uid=$(id -u) gid=$(id -g) user=$(id -un) cwd=$(pwd)"
echo "marker=${%s:-absent} slurm_user=${SLURM_JOB_USER:-} loom_job=${LOOM_JOB_ID:-}"
echo "submit_dir=${SLURM_SUBMIT_DIR:-}"
touch made-by-job
for i in $(seq 1200); do [ -e go ] && break; sleep 0.1; done
echo finished
""" % MARKER


def sh(*args, check=True, env=None):
    return subprocess.run(list(args), capture_output=True, text=True, check=check, env=env)


def wait_until(pred, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    raise AssertionError("timed out after %ss waiting for %s" % (timeout, what))


@unittest.skipUnless(os.geteuid() == 0, "needs root: creates accounts and runs loomd as root")
class MultiUserSlurm(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cdir = tempfile.mkdtemp(prefix="loom-muslurm-")
        os.chmod(cls.cdir, 0o755)
        cls.d = None
        # Ports of our own, below the ephemeral range (as test_gen_slurm.sh).
        base = 20000 + random.randrange(12000)
        env = dict(os.environ, SLURM_CTLD_PORT=str(base), SLURM_SLURMD_PORT=str(base + 1))
        up = sh(CLUSTER, "up", cls.cdir + "/cluster", "1", "2", check=False, env=env)
        if up.returncode != 0:
            raise RuntimeError("cluster did not start: " + up.stderr)
        for line in up.stdout.splitlines():
            if line.startswith("export SLURM_CONF="):
                os.environ["SLURM_CONF"] = line.split("=", 1)[1]
        try:
            cls.setup_accounts()
            os.environ[MARKER] = "loomd-" + TAG
            cls.sock = os.path.join(cls.cdir, "loomd.sock")
            cls.d = Loomd(extra_args=["--multi-user", "--socket", cls.sock, "--executor",
                                      "slurm", "--log-level", "info"]).start()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def setup_accounts(cls):
        cls.pw, cls.work = {}, {}
        for u in (USER1, USER2):
            sh("useradd", "-m", "-U", "-s", "/bin/bash", u)
            pw = pwd.getpwnam(u)
            # The submit directory: the account's own, closed to others.
            w = os.path.join(pw.pw_dir, "work")
            os.makedirs(w, exist_ok=True)
            os.chown(w, pw.pw_uid, pw.pw_gid)
            os.chmod(pw.pw_dir, 0o700)
            for name, text in (("probe.sh", PROBE), ("sleep.sh", "#!/bin/bash\nsleep 300\n")):
                with open(os.path.join(w, name), "w") as f:
                    f.write(text)
            cls.pw[u], cls.work[u] = pw, w

    @classmethod
    def tearDownClass(cls):
        if os.environ.get("SLURM_CONF"):
            for u in (USER1, USER2, "root"):
                subprocess.run(["scancel", "-u", u], capture_output=True)
        if cls.d is not None:
            if os.environ.get("LOOM_KEEP"):
                print(cls.d.read_log(), file=sys.stderr)
            cls.d.cleanup()
        subprocess.run([CLUSTER, "down", cls.cdir + "/cluster"], capture_output=True)
        for u in (USER1, USER2):
            subprocess.run(["pkill", "-KILL", "-u", u], capture_output=True)
            subprocess.run(["userdel", "-r", "-f", u], capture_output=True)
        os.environ.pop(MARKER, None)
        if not os.environ.get("LOOM_KEEP"):
            shutil.rmtree(cls.cdir, ignore_errors=True)

    # ------------------------------------------------------------ helpers

    def as_user(self, user, args):
        pw = self.pw[user]
        env = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user,
               "LOOM_URL": "unix:" + self.sock, "SLURM_CONF": os.environ["SLURM_CONF"]}
        p = subprocess.run(args, capture_output=True, text=True, env=env, cwd=self.work[user],
                           user=pw.pw_uid, group=pw.pw_gid,
                           extra_groups=os.getgrouplist(user, pw.pw_gid), timeout=60)
        return p.returncode, p.stdout, p.stderr

    def job(self, jid):
        c = self.d.client()
        try:
            return c.get(jid)
        finally:
            c.close()

    def submit(self, user, script):
        rc, out, err = self.as_user(user, [LOOM, "submit", "--json", script])
        self.assertEqual(rc, 0, err)
        return json.loads(out)["id"]

    def slurm_id(self, jid):
        """The Slurm job id once loom has placed the job."""
        def placed():
            j = self.job(jid)
            self.assertIn(j["state"], ("PENDING", "RUNNING"), j.get("reason"))
            return (j.get("run") or {}).get("slurm_job_id")
        return wait_until(placed, 60, "job %d to reach Slurm" % jid)

    def scontrol(self, sid):
        out = sh("scontrol", "--oneliner", "show", "job", sid).stdout
        return dict(f.split("=", 1) for f in out.split() if "=" in f)

    def finished(self, jid, timeout=90):
        return wait_until(lambda: (lambda j: j if j["state"] not in ("PENDING", "RUNNING")
                                   else None)(self.job(jid)), timeout, "job %d to end" % jid)

    # -------------------------------------------------------------- tests

    def test_job_runs_as_its_owner(self):
        pw, work = self.pw[USER1], self.work[USER1]
        rc, o, err = self.as_user(USER1, ["rm", "-f", "go", "made-by-job"])
        self.assertEqual(rc, 0, err)
        jid = self.submit(USER1, "probe.sh")
        sid = self.slurm_id(jid)
        out = os.path.join(work, "loom-%d.out" % jid)
        wait_until(lambda: os.path.exists(os.path.join(work, "made-by-job")), 60,
                   "the job to start under Slurm")

        # Slurm's view: the account is the job's user, in its directory.
        row = sh("squeue", "-h", "-j", sid, "-o", "%u|%U|%T|%Z").stdout.strip()
        self.assertEqual(row, "%s|%d|RUNNING|%s" % (USER1, pw.pw_uid, work))
        sc = self.scontrol(sid)
        self.assertEqual(sc["UserId"], "%s(%d)" % (USER1, pw.pw_uid))
        self.assertEqual(sc["GroupId"], "%s(%d)" % (USER1, pw.pw_gid))
        self.assertEqual(sc["StdOut"], out)

        # The other account can cancel it neither through loom nor Slurm.
        rc, o, err = self.as_user(USER2, [LOOM, "cancel", str(jid)])
        self.assertEqual(rc, 6, (o, err))
        self.assertIn("permission denied: job %d belongs to another user (%s)" % (jid, USER1),
                      err)
        rc, o, err = self.as_user(USER2, ["scancel", sid])
        self.assertNotEqual(rc, 0, (o, err))
        self.assertRegex(err.lower(), "denied|not permitted")
        self.assertEqual(sh("squeue", "-h", "-j", sid, "-o", "%T").stdout.strip(), "RUNNING")
        self.assertEqual(self.job(jid)["state"], "RUNNING")

        # Let it finish; its output is its owner's, in its submit directory.
        rc, o, err = self.as_user(USER1, ["touch", "go"])
        self.assertEqual(rc, 0, err)
        j = self.finished(jid)
        with open(out) as f:
            text = f.read()
        self.assertEqual(j["state"], "COMPLETED", j["reason"] + "\n" + text)
        self.assertEqual(j["owner"]["user"], USER1)
        lines = text.splitlines()
        self.assertEqual(lines[0], "uid=%d gid=%d user=%s cwd=%s" %
                         (pw.pw_uid, pw.pw_gid, USER1, work), text)
        self.assertEqual(lines[1], "marker=absent slurm_user=%s loom_job=%d" % (USER1, jid), text)
        self.assertEqual(lines[2], "submit_dir=" + work, text)
        self.assertEqual(lines[-1], "finished", text)
        for path in (out, os.path.join(work, "made-by-job")):
            st = os.stat(path)
            self.assertEqual((st.st_uid, st.st_gid), (pw.pw_uid, pw.pw_gid), path)
        self.assertEqual(os.path.dirname(out), work)
        self.assertEqual(self.scontrol(sid)["JobState"], "COMPLETED")

    def test_owner_cancels_through_loom(self):
        jid = self.submit(USER1, "sleep.sh")
        sid = self.slurm_id(jid)
        wait_until(lambda: sh("squeue", "-h", "-j", sid, "-o", "%T").stdout.strip() == "RUNNING",
                   60, "Slurm job %s to run" % sid)
        self.assertEqual(sh("squeue", "-h", "-j", sid, "-o", "%u").stdout.strip(), USER1)
        rc, o, err = self.as_user(USER1, [LOOM, "cancel", str(jid)])
        self.assertEqual(rc, 0, (o, err))
        self.assertEqual(self.finished(jid)["state"], "CANCELLED")
        wait_until(lambda: self.scontrol(sid)["JobState"] == "CANCELLED", 30,
                   "Slurm job %s to be cancelled" % sid)

    def test_restart_follows_owners_job(self):
        # loomd killed while the owner's job runs under Slurm: the restarted
        # loomd (root) finds it again in Slurm and records how it ended.
        work = self.work[USER1]
        rc, o, err = self.as_user(USER1, ["rm", "-f", "go", "made-by-job"])
        self.assertEqual(rc, 0, err)
        jid = self.submit(USER1, "probe.sh")
        sid = self.slurm_id(jid)
        wait_until(lambda: os.path.exists(os.path.join(work, "made-by-job")), 60,
                   "the job to start under Slurm")
        self.d.kill9()
        self.d.start()
        self.assertEqual(self.job(jid)["run"]["slurm_job_id"], sid)
        rc, o, err = self.as_user(USER1, ["touch", "go"])
        self.assertEqual(rc, 0, err)
        j = self.finished(jid)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertEqual(self.scontrol(sid)["UserId"], "%s(%d)" % (USER1, self.pw[USER1].pw_uid))

    def test_no_working_directory(self):
        # job.submit by hand, without options.workdir: loom cannot place the
        # job's files in its own job directory, closed to the owner.
        code = ("import sys, json; sys.path.insert(0, %r)\n"
                "from loomd_client import Client\n"
                "print(Client('unix:' + %r).submit('nowd', '#!/bin/bash\\ntrue\\n')['id'])\n") % (
                    os.path.dirname(os.path.abspath(__file__)), self.sock)
        rc, out, err = self.as_user(USER1, ["/usr/bin/python3", "-c", code])
        self.assertEqual(rc, 0, err)
        j = self.finished(int(out))
        self.assertEqual(j["state"], "FAILED")
        self.assertIn("a job run as its owner needs a working directory", j["reason"])

    def test_root_jobs_refused(self):
        c = Client("unix:" + self.sock)
        with self.assertRaises(RpcError) as cm:
            c.submit("r", "true")
        c.close()
        self.assertIn("jobs of root are refused", cm.exception.message)


if __name__ == "__main__":
    unittest.main(verbosity=2)
