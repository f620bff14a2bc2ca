"""Multi-user loomd end to end (docs/security.md): two real accounts that the
test creates (useradd, removed at the end), the machine's real munged, and
loomd as root with --multi-user.

- The first account's job runs with its uid, gid and groups, in its submit
  directory; its output file belongs to it; the token, the database and the
  state directory fail with EACCES; its environment and descriptors hold
  nothing of loomd's; it has no capabilities and no_new_privs set.
- The second account sees the job in job.list (without options and paths)
  but can neither cancel it, nor read it (job.get: script, environment,
  output paths), nor its output file: -32008 naming the owner, CLI exit 6.
- Over TCP: a MUNGE credential names the caller; forged, expired and
  replayed credentials and none at all are refused with 401, and the
  refused submission leaves no job behind.
- Root's own jobs are refused unless --allow-root-jobs.

Needs root (useradd, loomd dropping to the job's owner) and munge (scripts/
deps/test-auth.txt); without root it is skipped, saying so."""

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import onnx_tiny  # noqa: E402
from loomd_client import Client, HttpError, Loomd, RpcError, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
NODE = "name=n1,cpus=8,memory=8GiB,gpus=2,gpu_type=virtual"
TAG = "%d" % (os.getpid() % 100000)
USER1, USER2, EXTRA = "loomu1t" + TAG, "loomu2t" + TAG, "loomgt" + TAG

JOB = r"""#!/bin/bash
#SBATCH --job-name=probe
exec /usr/bin/python3 - <<'EOF'
import errno, json, os
r = {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "egid": os.getegid(),
     "groups": sorted(os.getgroups()), "cwd": os.getcwd()}
for name in ("token", "loom.db", ""):
    p = os.path.join(os.environ["PROBE_STATE"], name)
    try:
        (os.listdir if name == "" else lambda q: open(q, "rb").read(1))(p)
        r["open " + (name or "state dir")] = "ok"
    except OSError as e:
        r["open " + (name or "state dir")] = errno.errorcode[e.errno]
with open("/proc/self/environ", "rb") as f:
    r["environ"] = [v.decode() for v in f.read().split(b"\0") if v]
r["fds"] = {}
for fd in os.listdir("/proc/self/fd"):
    try:
        r["fds"][fd] = os.readlink("/proc/self/fd/" + fd)
    except FileNotFoundError:  # the listing's own descriptor, closed by now
        pass
with open("/proc/self/status") as f:
    r["status"] = dict(l.rstrip("\n").split(":\t", 1) for l in f if ":\t" in l)
with open("made-by-job", "w") as f:
    f.write("x")
print("PROBE " + json.dumps(r), flush=True)
EOF
"""


def sh(*args, check=True):
    return subprocess.run(list(args), capture_output=True, text=True, check=check)


def munged_socket():
    """The machine's munged, started by scripts/munge-up.sh (as make test and
    the Slurm clusters do) when it does not answer. Returns its socket path."""
    src = os.environ.get("LOOM_SOURCE_DIR", os.getcwd())
    sh(os.path.join(src, "scripts", "munge-up.sh"))
    return "/run/munge/munge.socket.2"


@unittest.skipUnless(os.geteuid() == 0, "needs root: creates accounts and runs loomd as root")
class MultiUser(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        munged_socket()
        sh("groupadd", EXTRA)
        sh("useradd", "-m", "-U", "-G", EXTRA, "-s", "/bin/bash", USER1)
        sh("useradd", "-m", "-U", "-s", "/bin/bash", USER2)
        cls.pw = {u: __import__("pwd").getpwnam(u) for u in (USER1, USER2)}
        cls.extra_gid = __import__("grp").getgrnam(EXTRA).gr_gid
        cls.sockdir = tempfile.mkdtemp(prefix="loom-mu-sock-")
        os.chmod(cls.sockdir, 0o755)
        cls.sock = os.path.join(cls.sockdir, "loomd.sock")
        cls.d = Loomd(extra_args=["--multi-user", "--socket", cls.sock, "--executor", "local",
                                  "--node", NODE, "--grace", "500ms"]).start()
        # Each account's submit directory, closed to the other account.
        cls.work = {}
        for u in (USER1, USER2):
            w = os.path.join(cls.pw[u].pw_dir, "work")
            os.makedirs(w, exist_ok=True)
            os.chown(w, cls.pw[u].pw_uid, cls.pw[u].pw_gid)
            os.chmod(cls.pw[u].pw_dir, 0o700)
            cls.work[u] = w
            for name, text in (("probe.sh", JOB), ("sleep.sh", "#!/bin/bash\nsleep 30\n"),
                               ("true.sh", "#!/bin/bash\ntrue\n")):
                with open(os.path.join(w, name), "w") as f:
                    f.write(text)

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        shutil.rmtree(cls.sockdir, ignore_errors=True)
        for u in (USER1, USER2):
            subprocess.run(["pkill", "-KILL", "-u", u], capture_output=True)
            subprocess.run(["userdel", "-r", "-f", u], capture_output=True)
        subprocess.run(["groupdel", EXTRA], capture_output=True)

    # ------------------------------------------------------------ helpers

    def as_user(self, user, args, url=None, cwd=None):
        pw = self.pw[user]
        env = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user,
               "LOOM_URL": url or "unix:" + self.sock}
        groups = os.getgrouplist(user, pw.pw_gid)
        p = subprocess.run(args, capture_output=True, text=True, env=env,
                           cwd=cwd or self.work[user], user=pw.pw_uid, group=pw.pw_gid,
                           extra_groups=groups, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def loom(self, user, *args, url=None):
        return self.as_user(user, [LOOM] + list(args), url=url)

    def credential(self, user, ttl=None, payload="loomd"):
        args = ["munge"] + (["-s", payload] if payload else ["-n"]) + \
            (["-t", str(ttl)] if ttl else [])
        rc, out, err = self.as_user(user, args)
        self.assertEqual(rc, 0, err)
        return out.strip()

    def job(self, jid):
        c = self.d.client()
        try:
            return c.get(jid)
        finally:
            c.close()

    def finished(self, jid, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            j = self.job(jid)
            if j["state"] not in ("PENDING", "RUNNING"):
                return j
            time.sleep(0.1)
        self.fail("job %d did not end" % jid)

    def submit_probe(self, user):
        rc, out, err = self.loom(user, "submit", "--json", "--export",
                                 "PROBE_STATE=" + self.d.state_dir, "probe.sh")
        self.assertEqual(rc, 0, err)
        return json.loads(out)["id"]

    # -------------------------------------------------------------- tests

    def test_job_runs_as_its_owner(self):
        jid = self.submit_probe(USER1)
        j = self.finished(jid)
        out = os.path.join(self.work[USER1], "loom-%d.out" % jid)
        with open(out) as f:
            text = f.read()
        self.assertEqual(j["state"], "COMPLETED", j["reason"] + "\n" + text)
        pw = self.pw[USER1]
        self.assertEqual(j["owner"]["uid"], pw.pw_uid)
        self.assertEqual(j["owner"]["user"], USER1)
        self.assertEqual(j["owner"]["account"], USER1)  # the primary group (-U)
        line = [l for l in text.splitlines() if l.startswith("PROBE ")]
        self.assertTrue(line, text)
        r = json.loads(line[0][6:])
        self.assertEqual((r["uid"], r["euid"]), (pw.pw_uid, pw.pw_uid))
        self.assertEqual((r["gid"], r["egid"]), (pw.pw_gid, pw.pw_gid))
        self.assertEqual(set(r["groups"]), {pw.pw_gid, self.extra_gid})
        self.assertEqual(r["cwd"], self.work[USER1])
        for name in ("open token", "open loom.db", "open state dir"):
            self.assertEqual(r[name], "EACCES", name)
        # Its files are its owner's.
        for path in (out, os.path.join(self.work[USER1], "made-by-job")):
            st = os.stat(path)
            self.assertEqual((st.st_uid, st.st_gid), (pw.pw_uid, pw.pw_gid), path)
        # Nothing of loomd's in its environment or descriptors.
        env = dict(v.split("=", 1) for v in r["environ"])
        self.assertEqual(env.get("HOME"), pw.pw_dir)
        self.assertEqual(env.get("USER"), USER1)
        self.assertNotIn(self.d.token, "\n".join(r["environ"]))
        self.assertFalse([k for k in env if k.startswith("LOOM_") and
                          k not in ("LOOM_JOB_ID", "LOOM_JOB_NAME", "LOOM_GPU_SHARE_MILLI")], env)
        self.assertEqual(env.get("LOOM_JOB_ID"), str(jid))
        for fd, target in r["fds"].items():
            if fd in ("0", "1", "2"):
                continue
            # python's own listing of /proc/self/fd, and the job's own
            # script that bash reads through /dev/fd/3 (docs/security.md)
            ok = target.startswith("/proc/") or target.endswith("/jobs/%d/script.sh" % jid)
            self.assertTrue(ok, "fd %s -> %s" % (fd, target))
            self.assertNotIn("socket:", target)
        self.assertEqual(r["fds"]["1"], out)
        self.assertEqual(r["status"]["CapEff"].strip("0"), "")
        self.assertEqual(r["status"]["CapPrm"].strip("0"), "")
        self.assertEqual(r["status"]["CapBnd"].strip("0"), "")
        self.assertEqual(r["status"]["NoNewPrivs"], "1")

    def test_other_user_cannot_act(self):
        rc, out, err = self.loom(USER1, "submit", "--json", "sleep.sh")
        self.assertEqual(rc, 0, err)
        jid = json.loads(out)["id"]
        # Everyone lists it, without its options and paths.
        rc, out, err = self.loom(USER2, "jobs", "--json")
        self.assertEqual(rc, 0, err)
        seen = [j for j in json.loads(out)["jobs"] if j["id"] == jid]
        self.assertEqual(len(seen), 1, out)
        self.assertEqual(seen[0]["owner"]["user"], USER1)
        self.assertNotIn("options", seen[0])
        # where it runs, as squeue shows it; nothing of its handle or files
        self.assertLessEqual(set(seen[0].get("run", {})), {"node", "gpus", "gpu_share"}, out)
        rc, out, err = self.loom(USER2, "jobs")
        self.assertEqual(rc, 0, err)
        row = [l.split() for l in out.splitlines() if l.split()[:1] == [str(jid)]]
        self.assertEqual(row[0][1:3], ["sleep.sh", USER1], out)
        # Neither cancel nor read it, nor hold, release, requeue or rename it
        # (issue 30 finding 2: these four succeeded on another user's job).
        for args in (("cancel", str(jid)), ("show", str(jid)), ("hold", str(jid)),
                     ("release", str(jid)), ("requeue", str(jid)),
                     ("update", str(jid), "--name", "bobs", "--priority", "-1000000")):
            rc, out, err = self.loom(USER2, *args)
            self.assertEqual(rc, 6, (args, out, err))
            self.assertIn("permission denied: job %d belongs to another user (%s)" %
                          (jid, USER1), err)
        j = self.job(jid)
        self.assertEqual((j["name"], j["priority"]), ("sleep.sh", 0), j)
        self.assertNotIn("hold", j.get("options", {}))
        # Over the socket by hand: the documented error with its data.
        rc, out, err = self.as_user(USER2, ["/usr/bin/python3", "-c", (
            "import sys, json; sys.path.insert(0, %r)\n"
            "from loomd_client import Client, RpcError\n"
            "c = Client('unix:' + %r)\n"
            "try:\n    c.cancel(%d)\nexcept RpcError as e:\n"
            "    print(json.dumps([e.code, e.data]))\n") % (
                os.path.dirname(os.path.abspath(__file__)), self.sock, jid)])
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), [-32008, {"id": jid, "owner": USER1}])
        # The output file: the other account cannot read it.
        rc, _, err = self.as_user(USER2, ["cat", os.path.join(self.work[USER1],
                                                             "loom-%d.out" % jid)],
                                  cwd=self.work[USER2])
        self.assertNotEqual(rc, 0)
        self.assertIn("Permission denied", err)
        self.assertEqual(self.job(jid)["state"] in ("PENDING", "RUNNING"),
                         True)
        # The owner can.
        rc, out, err = self.loom(USER1, "cancel", str(jid))
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.finished(jid)["state"], "CANCELLED")

    def tcp(self, auth):
        c = Client(self.d.url)
        return c, {"Authorization": auth} if auth else {}

    def jobs_now(self):
        c = self.d.client()
        try:
            return len(c.list_all())
        finally:
            c.close()

    def test_munge_over_tcp(self):
        cred = self.credential(USER1)
        c, h = self.tcp("Munge " + cred)
        req = {"jsonrpc": "2.0", "method": "server.info", "id": 1}
        info = c.post(req, headers=h, auth=False)["result"]["auth"]
        self.assertEqual(info["mode"], "multi-user")
        self.assertEqual(info["caller"]["user"], USER1)
        self.assertEqual(info["caller"]["scheme"], "munge")
        self.assertFalse(info["caller"]["operator"])
        # The same credential again on the same connection: that connection
        # was proven with it.
        self.assertIn("result", c.post(req, headers=h, auth=False))
        c.close()
        before = self.jobs_now()
        submit = {"jsonrpc": "2.0", "method": "job.submit", "id": 2,
                  "params": {"name": "x", "script": "true"}}
        expired = self.credential(USER1, ttl=1)
        time.sleep(2.5)
        forged = cred[:len(cred) // 2] + ("A" if cred[len(cred) // 2] != "A" else "B") + \
            cred[len(cred) // 2 + 1:]
        cases = {"replayed": "Munge " + cred, "forged": "Munge " + forged,
                 "expired": "Munge " + expired, "none": None,
                 "wrong token": "Bearer " + "0" * 64,
                 # issue 30, finding 12: a credential made for another
                 # audience (munge -n, another service) was accepted
                 "no audience": "Munge " + self.credential(USER1, payload=None),
                 "another audience": "Munge " + self.credential(USER1, payload="slurmctld")}
        for what, auth in cases.items():
            c, h = self.tcp(auth)
            with self.assertRaises(HttpError, msg=what) as cm:
                c.post(submit, headers=h, auth=False)
            self.assertEqual(cm.exception.status, 401, what)
            if "audience" in what:
                self.assertIn(b"not made for loomd", cm.exception.body, what)
                self.assertNotIn(b"slurmctld", cm.exception.body, what)
            c.close()
        self.assertEqual(self.jobs_now(), before)
        status, headers, body = Client(self.d.url).request(
            "POST", "/rpc", json.dumps(submit).encode(), auth=False)
        self.assertEqual(status, 401)
        self.assertEqual(headers["www-authenticate"], 'Munge realm="loom", Bearer realm="loom"')
        self.assertIn(b"no credential", body)
        # The CLI gets its own credential over TCP.
        rc, out, err = self.loom(USER1, "submit", "--json", "true.sh", url=self.d.url)
        self.assertEqual(rc, 0, err)
        jid = json.loads(out)["id"]
        self.assertEqual(self.job(jid)["owner"]["user"], USER1)
        # The operator token still works, as an operator.
        info = self.d.client().info()["auth"]["caller"]
        self.assertTrue(info["operator"])
        self.assertEqual(info["scheme"], "token")

    def submit_model(self, user, path):
        """job.submit naming a model, as user over the socket: [code, message]
        of the error, or [0, the estimate's model path]."""
        rc, out, err = self.as_user(user, ["/usr/bin/python3", "-c", (
            "import sys, json; sys.path.insert(0, %r)\n"
            "from loomd_client import Client, RpcError\n"
            "c = Client('unix:' + %r)\n"
            "try:\n"
            "    j = c.submit('m', '#!/bin/sh\\ntrue\\n', resources={'gpu_share': 300},\n"
            "                 model={'path': %r, 'batch': 2}, options={'hold': True})\n"
            "    print(json.dumps([0, c.get(j['id'])['estimate']['model']['path']]))\n"
            "except RpcError as e:\n    print(json.dumps([e.code, e.message]))\n") % (
                os.path.dirname(os.path.abspath(__file__)), self.sock, path)])
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    def test_model_opened_as_the_caller(self):
        mine = os.path.join(self.work[USER1], "small.onnx")
        onnx_tiny.mlp(mine, 256, 256, 10)
        os.chown(mine, self.pw[USER1].pw_uid, self.pw[USER1].pw_gid)
        os.chmod(mine, 0o600)
        # Its owner's model: estimated, and the record keeps the path given.
        self.assertEqual(self.submit_model(USER1, mine), [0, mine])
        # Another's, which loomd (root) could read but the caller cannot: the
        # same words as a missing file (no oracle), naming the path as given.
        code, msg = self.submit_model(USER2, mine)
        self.assertEqual(code, -32006, msg)
        self.assertIn("'%s': no such file, or not readable by user %s" % (mine, USER2), msg)
        missing = os.path.join(self.work[USER1], "absent.onnx")
        code2, msg2 = self.submit_model(USER2, missing)
        self.assertEqual((code2, msg2.replace(missing, mine)), (code, msg))
        self.assertNotIn("/proc/self/fd", msg)

    def test_usage_survives_restart(self):
        with open(os.path.join(self.work[USER2], "gpu.sh"), "w") as f:
            f.write("#!/bin/bash\n#SBATCH --gres=gpu:1\nsleep 1\n")
        rc, out, err = self.loom(USER2, "submit", "--json", "gpu.sh")
        self.assertEqual(rc, 0, err)
        j = self.finished(json.loads(out)["id"])
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        rc, out, err = self.loom(USER1, "usage", "--user", USER2, "--json")
        self.assertEqual(rc, 0, err)
        rows = json.loads(out)["rows"]
        self.assertEqual([(r["user"], r["account"]) for r in rows], [(USER2, USER2)])
        r = rows[0]
        self.assertGreaterEqual(r["jobs"], 1)
        self.assertGreaterEqual(r["wall_seconds"], 1.0)
        self.assertGreaterEqual(r["gpu_seconds"], 1.0)
        self.assertLessEqual(r["gpu_seconds"], r["wall_seconds"])
        # From the jobs table: the same after a restart (every job has ended).
        self.d.stop()
        self.d.start()
        rc, out2, err = self.loom(USER1, "usage", "--user", USER2, "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out2)["rows"], rows)
        rc, out, err = self.loom(USER1, "usage", "--since", "1s")
        self.assertEqual(rc, 0, err)
        self.assertIn("GPU-HOURS", out)

    def test_root_jobs_refused(self):
        c = Client("unix:" + self.sock)
        with self.assertRaises(RpcError) as cm:
            c.submit("r", "true")
        self.assertIn("jobs of root are refused", cm.exception.message)

    def test_account(self):
        rc, out, err = self.loom(USER1, "submit", "--json", "--account", EXTRA, "--hold",
                                 "true.sh")
        self.assertEqual(rc, 0, err)
        jid = json.loads(out)["id"]
        self.assertEqual(self.job(jid)["owner"]["account"], EXTRA)
        rc, out, err = self.loom(USER2, "submit", "--json", "--account", EXTRA, "true.sh")
        self.assertNotEqual(rc, 0)
        self.assertIn("is not a group of user", err)

    # ---------------------------------------------- issue 31: first steps

    def sdk(self, user, code, cwd=None):
        """Python code run as user with the SDK (a world-readable copy)."""
        return self.as_user(user, ["/usr/bin/python3", "-c",
                                   "import sys; sys.path.insert(0, %r)\n" % self.sdk_dir + code,
                                   "unix:" + self.sock], cwd=cwd)

    @classmethod
    def sdk_copy(cls):
        cls.sdk_dir = os.path.join(cls.sockdir, "sdk")
        if not os.path.isdir(cls.sdk_dir):
            src = os.path.join(os.path.dirname(__file__), "..", "..", "python", "loom")
            shutil.copytree(src, os.path.join(cls.sdk_dir, "loom"),
                            ignore=shutil.ignore_patterns("__pycache__"))
            for root, dirs, files in os.walk(cls.sdk_dir):
                for n in dirs + files:
                    os.chmod(os.path.join(root, n), 0o755)

    def test_sdk_without_workdir(self):
        """Client.submit and loom.Executor without workdir= (issue 31: FAILED
        126, the output path under root's state directory)."""
        self.sdk_copy()
        rc, out, err = self.sdk(USER1, "import loom; c = loom.Client(sys.argv[1]); "
                                "print(c.submit('#!/bin/sh\\necho sdk-ok\\n').id)")
        self.assertEqual(rc, 0, err)
        jid = int(out)
        j = self.finished(jid)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        with open(os.path.join(self.work[USER1], "loom-%d.out" % jid)) as f:
            self.assertEqual(f.read(), "sdk-ok\n")
        # A raw job.submit without options: the owner's home directory.
        rc, out, err = self.sdk(USER1, "import loom; c = loom.Client(sys.argv[1]); "
                                "print(c.submit('#!/bin/sh\\npwd\\n', workdir=False).id)")
        self.assertEqual(rc, 0, err)
        jid = int(out)
        j = self.finished(jid)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        home = self.pw[USER1].pw_dir
        with open(os.path.join(home, "loom-%d.out" % jid)) as f:
            self.assertEqual(f.read(), home + "\n")
        rc, out, err = self.sdk(USER1, "import loom\nwith loom.Executor(url=sys.argv[1], time=60) "
                                "as ex:\n    print(ex.submit(pow, 2, 10).result(timeout=60))")
        self.assertEqual((rc, out.strip()), (0, "1024"), err)

    def test_others_jobs_as_squeue_shows_them(self):
        """Issue 31: another user's running job showed NODE/GPUS '-' in loom
        jobs --all, and another's array one row per task; squeue shows the
        node and groups the array for everyone. Its paths and environment
        stay private."""
        rc, out, err = self.loom(USER1, "submit", "--json", "--gres=gpu:1", "-J", "runs",
                                 "--export", "SECRET_VAR=hush", "sleep.sh")
        self.assertEqual(rc, 0, err)
        run = json.loads(out)["id"]
        rc, out, err = self.loom(USER1, "submit", "--json", "--hold", "--array=0-3", "-J",
                                 "arr", "true.sh")
        self.assertEqual(rc, 0, err)
        arr = json.loads(out)["id"]
        deadline = time.monotonic() + 30
        while self.job(run)["state"] == "PENDING" and time.monotonic() < deadline:
            time.sleep(0.1)
        mine = self.job(run)
        self.assertEqual(mine["state"], "RUNNING", mine)
        where = "%s:%s" % (mine["run"]["node"], ",".join(str(g) for g in mine["run"]["gpus"]))
        try:
            views = {}
            for user in (USER1, USER2):
                rc, out, err = self.loom(user, "jobs", "--all")
                self.assertEqual(rc, 0, err)
                rows = {l.split()[0]: l.split() for l in out.splitlines()[1:] if l.strip()}
                self.assertIn(str(run), rows, out)
                self.assertIn(where, rows[str(run)], (user, out))
                self.assertIn("%d_[0-3]" % arr, rows, (user, out))
                self.assertFalse([k for k in rows if k.startswith("%d_" % arr) and
                                  k != "%d_[0-3]" % arr], (user, out))
                # the same rows for the owner and the other user (but the
                # elapsed time, which ticks)
                rc, views[user], err = self.loom(user, "jobs", "--all", "--format",
                                                 "id,name,user,state,nodes,gpus,reason")
                self.assertEqual(rc, 0, err)
            self.assertEqual(views[USER1], views[USER2])
            rc, out, err = self.loom(USER2, "jobs", "--all", "--json")
            self.assertEqual(rc, 0, err)
            self.assertNotIn("hush", out)
            self.assertNotIn(self.work[USER1], out)
            self.assertNotIn(self.d.state_dir, out)
        finally:
            self.loom(USER1, "cancel", str(run), *[str(arr + k) for k in range(4)])

    def test_start_error_reaches_the_owner(self):
        """#SBATCH --output=logs/%x-%j.out without logs/: the reason is in
        the job (loom show) and loom logs says it with a non-zero status."""
        with open(os.path.join(self.work[USER1], "nologs.sh"), "w") as f:
            f.write("#!/bin/bash\n#SBATCH -J x\n#SBATCH --output=logs/%x-%j.out\necho hi\n")
        rc, out, err = self.loom(USER1, "submit", "--json", "nologs.sh")
        self.assertEqual(rc, 0, err)
        jid = json.loads(out)["id"]
        j = self.finished(jid)
        want = "cannot open output '%s/logs/x-%d.out': No such file or directory" % (
            self.work[USER1], jid)
        self.assertEqual(j["state"], "FAILED")
        self.assertEqual(j["reason"], "exit code 126: " + want)  # said once (walk of issue 31)
        rc, out, err = self.loom(USER1, "show", str(jid))
        self.assertEqual(rc, 0, err)
        self.assertIn(want, out)
        rc, out, err = self.loom(USER1, "logs", str(jid))
        self.assertEqual(rc, 1, out + err)
        self.assertIn(want, err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
