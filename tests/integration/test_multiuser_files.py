"""Files a client names, in multi-user loomd (issue 30; docs/security.md,
"Files a client names"): two real accounts (useradd, removed at the end),
the machine's munged, loomd as root with --multi-user.

- A 200 MiB ONNX model given to job.submit and truncated by its owner 5-15 ms
  later, ten times: loomd stays up (it mapped the file and died of SIGBUS).
- A FIFO as model, device file or zoo weights: refused at once, and zoo.list
  answers other users meanwhile (a blocking open held the request and the
  zoo's mutex).
- zoo.match on the state directory's token file: the same error as a missing
  file, naming the path only (it quoted the token's first byte as root).
- /dev/zero as zoo weights: refused at once, loomd's RSS stays bounded (it
  grew by 1.9 GB in 1.4 s).
- The zoo has owners: bob can neither remove alice's entry nor see or
  warm-start from her private one; her shared entry he can use.

Needs root and munge, as test_multiuser.py; skipped without root."""

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import onnx_tiny  # noqa: E402
from loomd_client import Loomd  # noqa: E402
from test_multiuser import munged_socket, sh  # noqa: E402

NODE = "name=n1,cpus=8,memory=8GiB,gpus=2,gpu_type=virtual"
TAG = "%d" % (os.getpid() % 100000)
ALICE, BOB = "loomfat" + TAG, "loomfbt" + TAG
RSS_LIMIT = 1 << 30  # loomd killed by the test past it (it is the test's child)

# Runs as a user: CALLS is a list of [method, params]; prints, for each,
# [0, result] or [code, message] and the seconds it took.
CLIENT = r"""
import json, sys, time
sys.path.insert(0, %(here)r)
from loomd_client import Client, RpcError
out = []
for method, params in json.loads(sys.argv[1]):
    c = Client("unix:" + %(sock)r, timeout=%(timeout)r)
    t0 = time.monotonic()
    try:
        r = [0, c.call(method, params)]
    except RpcError as e:
        r = [e.code, e.message]
    except OSError as e:
        r = ["timeout", str(e)]
    out.append(r + [time.monotonic() - t0])
    c.close()
print(json.dumps(out))
"""


def big_onnx(path, mib):
    """An MLP with mib MiB of extra 4 KiB initializers spread through the file,
    so that reading the model walks all of it (a truncation lands mid-read)."""
    extra = [onnx_tiny._initializer("c%d" % i, [1024]) + onnx_tiny._bytes(9, bytes(4096))
             for i in range(mib * 256)]
    data = onnx_tiny._model(
        [onnx_tiny._node("MatMul", "fc1", ["x", "w1"], ["h"]),
         onnx_tiny._node("Relu", "act", ["h"], ["a"]),
         onnx_tiny._node("MatMul", "fc2", ["a", "w2"], ["y"])],
        extra + [onnx_tiny._initializer("w1", [64, 64]), onnx_tiny._initializer("w2", [64, 10])],
        [onnx_tiny._value_info("x", [None, 64])], [onnx_tiny._value_info("y", [None, 10])])
    with open(path, "wb") as f:
        f.write(data)


def rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


@unittest.skipUnless(os.geteuid() == 0, "needs root: creates accounts and runs loomd as root")
class MultiUserFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.pw, cls.d, cls.sockdir = {}, None, None
        try:
            cls.set_up()
        except BaseException:
            cls.tearDownClass()  # the accounts made so far
            raise

    @classmethod
    def set_up(cls):
        munged_socket()
        for u in (ALICE, BOB):
            sh("useradd", "-m", "-U", "-s", "/bin/bash", u)
            cls.pw[u] = __import__("pwd").getpwnam(u)
            os.chmod(cls.pw[u].pw_dir, 0o700)
        cls.sockdir = tempfile.mkdtemp(prefix="loom-muf-sock-")
        os.chmod(cls.sockdir, 0o755)
        cls.sock = os.path.join(cls.sockdir, "loomd.sock")
        cls.d = Loomd(extra_args=["--multi-user", "--socket", cls.sock, "--executor", "local",
                                  "--node", NODE, "--grace", "500ms"]).start()
        import numpy as np
        import loom.warmstart as ws
        for u in (ALICE, BOB):
            h = cls.pw[u].pw_dir
            onnx_tiny.mlp(os.path.join(h, "m.onnx"), 8, 16, 4)
            rng = np.random.default_rng(1)
            ws.save({"w1": rng.standard_normal((8, 16)), "w2": rng.standard_normal((16, 4))},
                    os.path.join(h, "m.lw"))
            os.mkfifo(os.path.join(h, "fifo"))
            for name in ("m.onnx", "m.lw", "fifo"):
                os.chown(os.path.join(h, name), cls.pw[u].pw_uid, cls.pw[u].pw_gid)
            os.chmod(os.path.join(h, "m.onnx"), 0o600)
            os.chmod(os.path.join(h, "m.lw"), 0o600)

    @classmethod
    def tearDownClass(cls):
        if cls.d:
            cls.d.cleanup()
        if cls.sockdir:
            shutil.rmtree(cls.sockdir, ignore_errors=True)
        for u in (ALICE, BOB):
            subprocess.run(["pkill", "-KILL", "-u", u], capture_output=True)
            subprocess.run(["userdel", "-r", "-f", u], capture_output=True)

    def setUp(self):
        if not self.d.alive():  # a test before this one killed it (unfixed loomd)
            self.d.start()

    def as_user(self, user, args, timeout=120):
        pw = self.pw[user]
        env = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "USER": user}
        return subprocess.run(args, capture_output=True, text=True, env=env, cwd=pw.pw_dir,
                              user=pw.pw_uid, group=pw.pw_gid, timeout=timeout)

    def calls(self, user, calls, timeout=30):
        """[[code or 0, message or result, seconds], ...] of calls made by user."""
        code = CLIENT % {"here": HERE, "sock": self.sock, "timeout": timeout}
        p = self.as_user(user, ["/usr/bin/python3", "-c", code, json.dumps(calls)])
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def call(self, user, method, params, timeout=30):
        return self.calls(user, [[method, params]], timeout)[0]

    def home(self, user, name):
        return os.path.join(self.pw[user].pw_dir, name)

    def assert_up(self):
        self.assertTrue(self.d.alive(), "loomd died:\n" + self.d.read_log()[-2000:])
        c = self.d.client()
        try:
            self.assertIn("version", c.info())
        finally:
            c.close()

    def submit_params(self, model):
        return {"name": "m", "script": "#!/bin/sh\ntrue\n", "resources": {"gpu_share": 300},
                "model": model, "options": {"hold": True}}

    # ------------------------------------------------------------- tests

    def test_onnx_truncated_while_estimating(self):
        master = self.home(ALICE, "big.master")
        big_onnx(master, 200)
        os.chown(master, self.pw[ALICE].pw_uid, self.pw[ALICE].pw_gid)
        path = self.home(ALICE, "big.onnx")
        script = r"""
import json, random, shutil, sys, threading, time
sys.path.insert(0, %r)
from loomd_client import Client, RpcError
master, path, sock, params = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
out = []
for i in range(10):
    shutil.copyfile(master, path)
    res = {}
    def submit():
        c = Client("unix:" + sock, timeout=60)
        try:
            res["r"] = c.call("job.submit", params)["id"]
        except RpcError as e:
            res["r"] = e.code
        except OSError as e:
            res["r"] = "lost: %%s" %% e
    t = threading.Thread(target=submit)
    t.start()
    time.sleep(random.uniform(0.005, 0.04))
    with open(path, "r+b") as f:
        f.truncate(4096)
    t.join()
    out.append(res["r"])
print(json.dumps(out))
""" % HERE
        p = self.as_user(ALICE, ["/usr/bin/python3", "-c", script, master, path, self.sock,
                                 json.dumps(self.submit_params({"path": path, "batch": 2}))],
                         timeout=400)
        self.assertEqual(p.returncode, 0, p.stderr)
        outcomes = json.loads(p.stdout)
        lost = [r for r in outcomes if isinstance(r, str)]
        self.d.proc.poll()
        if lost:
            self.fail("loomd died (exit status %s) at try %d of 10: %s" % (
                self.d.proc.returncode, len(outcomes) - len(lost) + 1, outcomes))
        self.assert_up()
        os.unlink(master)
        os.unlink(path)

    def test_fifo_refused_at_once(self):
        fifo, model = self.home(ALICE, "fifo"), self.home(ALICE, "m.onnx")
        weights = self.home(ALICE, "m.lw")
        done = threading.Event()
        answers = []

        def list_meanwhile():  # bob's zoo.list, while alice's calls run
            while not done.is_set():
                answers.append(self.call(BOB, "zoo.list", {}, timeout=5)[0])

        t = threading.Thread(target=list_meanwhile)
        t.start()
        try:
            res = self.calls(ALICE, [
                ["job.submit", self.submit_params({"path": fifo, "batch": 2})],
                ["job.submit", self.submit_params({"path": model, "batch": 2, "device": fifo})],
                ["zoo.add", {"model": model, "weights": fifo, "task": "t",
                             "metric": {"name": "accuracy", "value": 0.5}}],
                ["zoo.add", {"model": fifo, "weights": weights, "task": "t",
                             "metric": {"name": "accuracy", "value": 0.5}}],
                ["zoo.match", {"model": fifo, "task": "t"}]], timeout=10)
        finally:
            done.set()
            t.join()
        for code, msg, secs in res:
            self.assertNotEqual(code, 0, msg)
            self.assertNotEqual(code, "timeout", "a FIFO hung the call: %s" % msg)
            self.assertIn(fifo, msg)
            self.assertIn("not a regular file", msg)
            self.assertLess(secs, 5, msg)
        self.assertTrue(answers and all(a == 0 for a in answers), answers)
        self.assert_up()

    def test_token_file_reveals_nothing(self):
        token = os.path.join(self.d.state_dir, "token")
        missing = os.path.join(self.d.state_dir, "no-such-file")
        code_t, msg_t, _ = self.call(BOB, "zoo.match", {"model": token, "task": "t"})
        code_m, msg_m, _ = self.call(BOB, "zoo.match", {"model": missing, "task": "t"})
        self.assertEqual(code_t, -32020, msg_t)
        self.assertEqual(code_m, -32020, msg_m)
        self.assertEqual(msg_t.replace(token, "P"), msg_m.replace(missing, "P"))
        with open(token) as f:
            secret = f.read().strip()
        self.assertNotIn(secret[:2], msg_t.replace(token, "P").replace(BOB, "U"))
        self.assertNotIn("wire type", msg_t)

    def test_dev_zero_weights_bounded(self):
        pid = self.d.proc.pid
        before, peak = rss(pid), [0]
        done = threading.Event()

        def watch():  # never let loomd take the machine: kill it past RSS_LIMIT
            while not done.is_set():
                peak[0] = max(peak[0], rss(pid))
                if peak[0] > before + RSS_LIMIT:
                    self.d.kill9()
                    return
                time.sleep(0.01)

        t = threading.Thread(target=watch)
        t.start()
        try:
            code, msg, secs = self.call(ALICE, "zoo.add", {
                "model": self.home(ALICE, "m.onnx"), "weights": "/dev/zero", "task": "t",
                "metric": {"name": "accuracy", "value": 0.5}}, timeout=30)
        finally:
            done.set()
            t.join()
        growth = peak[0] - before
        sys.stderr.write("/dev/zero: %s in %.3f s; RSS %d -> peak %d (+%d KiB)\n" % (
            code, secs, before, peak[0], growth >> 10))
        self.assertLess(growth, RSS_LIMIT, "loomd grew by %d bytes reading /dev/zero" % growth)
        self.assertNotEqual(code, 0, msg)
        self.assertIn("'/dev/zero': not a regular file", msg)
        self.assertLess(secs, 5)
        self.assert_up()

    def test_zoo_owners(self):
        add = {"model": self.home(ALICE, "m.onnx"), "weights": self.home(ALICE, "m.lw"),
               "task": "owners", "metric": {"name": "accuracy", "value": 0.9}}
        code, priv, _ = self.call(ALICE, "zoo.add", dict(add, name="private"))
        self.assertEqual(code, 0, priv)
        priv = priv["id"]
        bob_model = self.home(BOB, "m.onnx")
        # bob: not his to remove, not visible, no warm start from it
        code, msg, _ = self.call(BOB, "zoo.remove", {"id": priv})
        self.assertEqual(code, -32020, msg)  # as if absent: her private entry is no oracle
        code, msg, _ = self.call(BOB, "zoo.get", {"id": priv})
        self.assertEqual(code, -32020, msg)
        code, lst, _ = self.call(BOB, "zoo.list", {"task": "owners"})
        self.assertEqual(lst, {"entries": []})
        code, msg, _ = self.call(BOB, "zoo.warm", {"model": bob_model, "task": "owners",
                                                   "out": self.home(BOB, "no.lw")})
        self.assertEqual(code, -32020, msg)
        code, m, _ = self.call(BOB, "zoo.match", {"model": bob_model, "task": "owners"})
        self.assertEqual((code, m["candidates"]), (0, []), m)
        # alice: hers to see, warm-start from
        code, m, _ = self.call(ALICE, "zoo.match", {"model": self.home(ALICE, "m.onnx"),
                                                    "task": "owners"})
        self.assertEqual((code, m["parent"]), (0, priv), m)
        code, e, _ = self.call(ALICE, "zoo.get", {"id": priv})
        self.assertEqual((e["owner"], e["shared"]), (ALICE, False), e)
        # shared on purpose: bob may use it, still not remove it
        code, shared, _ = self.call(ALICE, "zoo.add", dict(add, name="shared", shared=True))
        self.assertEqual(code, 0, shared)
        code, m, _ = self.call(BOB, "zoo.match", {"model": bob_model, "task": "owners"})
        self.assertEqual((code, m["parent"]), (0, shared["id"]), m)
        self.check_warm_out(bob_model)
        code, msg, _ = self.call(BOB, "zoo.remove", {"id": shared["id"]})
        self.assertNotEqual(code, 0)
        self.assertIn("only its owner or an operator may remove it", msg)
        code, e, _ = self.call(ALICE, "zoo.get", {"id": shared["id"]})
        self.assertEqual(code, 0, e)
        # the operator (token) may remove either
        c = self.d.client()
        try:
            c.call("zoo.remove", {"id": priv})
            c.call("zoo.remove", {"id": shared["id"]})
        finally:
            c.close()

    def check_warm_out(self, bob_model):
        """zoo.warm's "out" (walk 31, item 1): the weights file is created as
        the caller, so bob's job (running as bob) can read it; before, they
        went to STATE/zoo/warm/ as root (0600 in a 0700 directory): EACCES."""
        warm = {"model": bob_model, "task": "owners"}
        out = self.home(BOB, "warm.lw")
        code, w, _ = self.call(BOB, "zoo.warm", dict(warm, out=out))
        self.assertEqual(code, 0, w)
        self.assertEqual(w["weights"], out)
        st = os.stat(out)
        self.assertEqual((st.st_uid, st.st_gid, st.st_mode & 0o777),
                         (self.pw[BOB].pw_uid, self.pw[BOB].pw_gid, 0o600))
        p = self.as_user(BOB, ["/usr/bin/head", "-c", "8", out])
        self.assertEqual((p.returncode, p.stdout), (0, "LOOMWTS1"), p.stderr)
        # bob's job, run as bob, reads it (the line loom submit --warm-start adds)
        script = ("#!/bin/sh\nexport LOOM_WARM_START='%s'\n"
                  "head -c 8 \"$LOOM_WARM_START\" > warm-read.txt\n") % out
        code, j, _ = self.call(BOB, "job.submit", {"name": "warmread", "script": script,
                                                   "options": {"workdir": self.pw[BOB].pw_dir}})
        self.assertEqual(code, 0, j)
        c = self.d.client()
        try:
            for _ in range(300):
                j = c.get(j["id"])
                if j["state"] not in ("PENDING", "RUNNING"):
                    break
                time.sleep(0.1)
        finally:
            c.close()
        self.assertEqual(j["state"], "COMPLETED", j.get("reason"))
        with open(self.home(BOB, "warm-read.txt")) as f:
            self.assertEqual(f.read(), "LOOMWTS1")
        # no "out" from a user: refused (he could not read a file in STATE)
        code, msg, _ = self.call(BOB, "zoo.warm", warm)
        self.assertEqual(code, -32602, msg)
        self.assertIn("params.out: required on a multi-user loomd", msg)
        # relative, too long, existing, a link, a directory bob cannot write
        # (alice's 0700 home: loomd is root, the file is created as bob)
        os.symlink("/etc/passwd-loom-nonexistent", self.home(BOB, "link.lw"))
        cases = [("warm.lw", "expected an absolute path"),
                 ("/" + "x" * 300, "expected an absolute path of at most 256 bytes"),
                 (out, "'%s': exists; expected a new file" % out),
                 (self.home(BOB, "link.lw"), "exists; expected a new file"),
                 (self.home(ALICE, "stolen.lw"),
                  "'%s': cannot be created by user %s" % (self.home(ALICE, "stolen.lw"), BOB)),
                 ("/etc/loom-warm-test.lw", "cannot be created by user %s" % BOB)]
        for path, want in cases:
            code, msg, _ = self.call(BOB, "zoo.warm", dict(warm, out=path))
            self.assertEqual(code, -32602, (path, msg))
            self.assertIn(want, msg)
        self.assertFalse(os.path.exists(self.home(ALICE, "stolen.lw")))
        self.assertFalse(os.path.exists("/etc/loom-warm-test.lw"))
        self.assertFalse(os.path.exists("/etc/passwd-loom-nonexistent"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
