"""loomd against a hostile client and a hostile state directory (issue 18).

One test per finding that needs a whole loomd; the HTTP-level findings
(lock-out, framing) are in tests/unit/test_rpc_hostile.c, response budgets
in tests/unit/test_methods.c, YAML in tests/unit/test_yaml_job.c, the
shepherd's inheritance in tests/unit/test_exec_local.c. Every wait here is
for something that must happen (an answer, an exit); none asserts speed.
Each test says what today's (pre-fix) code did, i.e. why it would fail."""

import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, Client, RpcError, build_dir  # noqa: E402


def loomd_exe():
    return os.path.join(build_dir(), "loomd")


def run_loomd(state_dir, *args, timeout=20):
    """Runs loomd expecting it to refuse to start; returns (rc, output)."""
    p = subprocess.run([loomd_exe(), "--listen", "127.0.0.1:0", "--state-dir", state_dir,
                        "--executor", "none", "--log-level", "warn"] + list(args),
                       capture_output=True, timeout=timeout)
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def chunks(data, n=4):
    """Every n-byte piece of data that is printable text (to look for in errors)."""
    text = data.decode("latin-1")
    return {text[i:i + n] for i in range(len(text) - n + 1)
            if text[i:i + n].isprintable() and text[i:i + n].strip() == text[i:i + n]}


class HostileClient(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd().start()
        cls.c = cls.d.client()
        cls.c.timeout = 15

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.stop()
        cls.d.cleanup()

    def submit_model(self, path, device=None):
        model = {"path": path, "batch": 1}
        if device:
            model["device"] = device
        return self.c.submit("m", "true", resources={"gpus": 1}, model=model)

    def test_fifo_as_model_path(self):
        """Finding 3: open() of a FIFO blocked a request thread for ever (and
        SIGTERM then took 129 s). Now refused at once as not a regular file."""
        fifo = os.path.join(tempfile.mkdtemp(prefix="loom-fifo-"), "model.onnx")
        os.mkfifo(fifo)
        try:
            with self.assertRaises(RpcError) as cm:
                self.submit_model(fifo)
            self.assertEqual(cm.exception.code, -32006)
            self.assertIn("not a regular file", cm.exception.message)
            with self.assertRaises(RpcError) as cm:
                self.submit_model("/etc/hostname", device=fifo)
            self.assertIn("not a regular file", cm.exception.message)
        finally:
            shutil.rmtree(os.path.dirname(fifo))

    def test_file_bytes_not_echoed(self):
        """Finding 10: model.device="/etc/shadow" answered "invalid token near
        'root'"; the token file as the device showed a character of the token."""
        targets = [p for p in ("/etc/shadow", "/etc/passwd") if os.access(p, os.R_OK)]
        targets.append(os.path.join(self.d.state_dir, "token"))
        for path in targets:
            with open(path, "rb") as f:
                secret = chunks(f.read())
            for kw in ({"device": path}, {}):
                model_path = path if not kw else "/nonexistent/m.onnx"
                with self.assertRaises(RpcError) as cm:
                    self.submit_model(model_path, **kw)
                text = cm.exception.message + repr(cm.exception.data)
                text = text.replace(path, "").replace(model_path, "")
                leaked = [s for s in secret if s in text]
                self.assertEqual(leaked, [], f"{path} ({kw}): {text}")

    def test_text_rules(self):
        """Finding 14: names with U+0085, U+009B, U+202E and a cancel reason
        with a newline were accepted (while \\n, \\t, DEL, ESC in names were
        refused): one rule now."""
        for name in ["a\u0085b", "a\u009bb", "a\u202eb", "a\u2066b", "a\tb", "a\x1bb", "a\x7fb"]:
            with self.assertRaises(RpcError, msg=repr(name)) as cm:
                self.c.submit(name, "true")
            self.assertEqual(cm.exception.code, -32602)
            self.assertIn("name", cm.exception.message)
        job = self.c.submit("fine name é 漢", "true")
        for reason in ["two\nlines", "bell\x07", "over\u202eride"]:
            with self.assertRaises(RpcError, msg=repr(reason)) as cm:
                self.c.cancel(job["id"], reason)
            self.assertEqual(cm.exception.code, -32602)
            self.assertIn("reason", cm.exception.message)
        self.assertEqual(self.c.cancel(job["id"], "plain reason")["state"], "CANCELLED")


class HostileStateDir(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="loom-hostile-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_lock_survives_unlink(self):
        """Finding 13: `rm loomd.lock` let a second loomd open the same
        database. The lock is now on the directory itself."""
        d = Loomd(state_dir=self.dir).start()
        try:
            lock = os.path.join(self.dir, "loomd.lock")
            if os.path.exists(lock):
                os.unlink(lock)
            rc, out = run_loomd(self.dir)
            self.assertNotEqual(rc, 0, out)
            self.assertIn("another loomd is running", out)
            self.assertTrue(d.alive())
        finally:
            d.stop()

    def test_loose_modes_repaired(self):
        """Finding 9: a state directory of mode 0777 (so loom.db, 0644, was
        world-readable) was accepted as it was."""
        d = Loomd(state_dir=self.dir).start()
        d.stop()
        os.chmod(self.dir, 0o777)
        os.chmod(os.path.join(self.dir, "loom.db"), 0o644)
        d = Loomd(state_dir=self.dir).start()
        try:
            self.assertEqual(os.stat(self.dir).st_mode & 0o777, 0o700)
            self.assertEqual(os.stat(os.path.join(self.dir, "loom.db")).st_mode & 0o777, 0o600)
            self.assertIn("state_dir_mode_repaired", d.read_log())
        finally:
            d.stop()

    @unittest.skipUnless(os.geteuid() == 0, "needs root to give a file to another user")
    def test_foreign_token_refused(self):
        """Finding 9: a token file owned by another user was accepted."""
        d = Loomd(state_dir=self.dir).start()
        d.stop()
        token = os.path.join(self.dir, "token")
        os.chown(token, 65534, 65534)
        rc, out = run_loomd(self.dir)
        self.assertNotEqual(rc, 0)
        self.assertIn("owned by uid 65534", out)

    def test_orphaned_job_dirs(self):
        """Finding 8: with loom.db* deleted, loomd started empty and new job 1
        appended to the old jobs/1/ output ("OLD SECRET OUTPUT\\nNEW")."""
        d = Loomd(state_dir=self.dir, extra_args=["--executor", "local"]).start()
        c = d.client()
        jid = c.submit("old", "echo OLD SECRET OUTPUT")["id"]
        deadline = time.monotonic() + 60
        while c.get(jid)["state"] != "COMPLETED" and time.monotonic() < deadline:
            time.sleep(0.05)
        c.close()
        d.stop()
        for name in os.listdir(self.dir):
            if name.startswith("loom.db"):
                os.unlink(os.path.join(self.dir, name))
        rc, out = run_loomd(self.dir)
        self.assertNotEqual(rc, 0)
        self.assertIn("--move-orphaned-jobs", out)
        d = Loomd(state_dir=self.dir, extra_args=["--executor", "local",
                                                  "--move-orphaned-jobs"]).start()
        try:
            c = d.client()
            jid = c.submit("new", "echo NEW")["id"]
            deadline = time.monotonic() + 60
            while c.get(jid)["state"] != "COMPLETED" and time.monotonic() < deadline:
                time.sleep(0.05)
            with open(os.path.join(self.dir, "jobs", str(jid), "stdout")) as f:
                self.assertEqual(f.read(), "NEW\n")
            aside = [n for n in os.listdir(self.dir) if n.startswith("jobs.orphaned-")]
            self.assertEqual(len(aside), 1)
            c.close()
        finally:
            d.stop()

    def run_job(self, c, script):
        jid = c.submit("j", script)["id"]
        deadline = time.monotonic() + 60
        while c.get(jid)["state"] != "COMPLETED" and time.monotonic() < deadline:
            time.sleep(0.05)
        return jid

    def test_restored_database(self):
        """Finding 8, the other way to reuse ids: a loom.db restored from an
        older copy knows fewer jobs than jobs/ holds; the next job would take
        the id (and output file) of one it forgot."""
        args = ["--executor", "local"]
        d = Loomd(state_dir=self.dir, extra_args=args).start()
        c = d.client()
        self.run_job(c, "echo one")
        c.close()
        d.stop()
        backup = os.path.join(self.dir, "..", os.path.basename(self.dir) + ".bak")
        os.makedirs(backup)
        for n in os.listdir(self.dir):
            if n.startswith("loom.db"):
                shutil.copy(os.path.join(self.dir, n), backup)
        d = Loomd(state_dir=self.dir, extra_args=args).start()
        c = d.client()
        second = self.run_job(c, "echo two")
        c.close()
        d.stop()
        for n in os.listdir(self.dir):
            if n.startswith("loom.db"):
                os.unlink(os.path.join(self.dir, n))
        for n in os.listdir(backup):
            shutil.copy(os.path.join(backup, n), self.dir)
        shutil.rmtree(backup)
        rc, out = run_loomd(self.dir)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("restored from an older copy", out)
        d = Loomd(state_dir=self.dir, extra_args=args + ["--move-orphaned-jobs"]).start()
        try:
            aside = [n for n in os.listdir(self.dir) if n.startswith("jobs.orphaned-")]
            self.assertEqual(len(aside), 1)
            self.assertTrue(os.path.isdir(os.path.join(self.dir, aside[0], str(second))))
            self.assertTrue(os.path.isdir(os.path.join(self.dir, "jobs", "1")))
        finally:
            d.stop()

    def test_damaged_database_refused(self):
        """Finding 7: with three 4 KiB pages of a 5,020-job database
        overwritten, loomd started, said 0 jobs and accepted submissions.
        Now PRAGMA quick_check at open refuses it, naming the recovery."""
        d = Loomd(state_dir=self.dir).start()
        c = d.client()
        c.batch([("job.submit", {"name": f"j{i}", "script": "x" * 2000}) for i in range(400)])
        c.close()
        d.stop()
        db = os.path.join(self.dir, "loom.db")
        pages = os.path.getsize(db) // 4096
        self.assertGreater(pages, 50)
        with open(db, "r+b") as f:
            for page in (2, pages // 3, pages // 2, 2 * pages // 3):
                f.seek(page * 4096)
                f.write(bytes((page * 7 + i * 13) % 256 for i in range(4096)))
        rc, out = run_loomd(self.dir)
        self.assertNotEqual(rc, 0, out)
        self.assertIn("the database is damaged", out)
        self.assertIn(".recover", out)


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare"),
                     "needs root and unshare for a small private tmpfs")
class FullDisk(unittest.TestCase):
    """Finding 6: a state directory on a 2 MB tmpfs and a job writing 3 MB:
    shepherds could not write status.json, nothing retried, and a job that
    had exited 0 was recorded FAILED "lost". Now the shepherd retries, the
    store releases its reserve for loom's own records, and once space is
    freed the job is recorded COMPLETED, without a restart."""

    def setUp(self):
        probe = tempfile.mkdtemp(prefix="loom-full-probe-")
        try:
            r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c",
                                f"mount -t tmpfs -o size=1m tmpfs {probe}"],
                               capture_output=True, timeout=20)
        finally:
            os.rmdir(probe)
        if r.returncode != 0:  # a container without CAP_SYS_ADMIN
            self.skipTest("cannot mount a private tmpfs here: " + r.stderr.decode()[:200])

    def test_full_disk_recovers(self):
        base = tempfile.mkdtemp(prefix="loom-full-")
        script = (f"mount -t tmpfs -o size=3m tmpfs {base} && exec {loomd_exe()} "
                  f"--listen 127.0.0.1:0 --state-dir {base}/state --executor local "
                  f"--store-reserve 512KiB --log-level warn")
        log = open(os.path.join(tempfile.gettempdir(), f"loom-full-{os.getpid()}.log"), "wb")
        p = subprocess.Popen(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                             stdout=log, stderr=log)
        try:
            root = f"/proc/{p.pid}/root{base}/state"
            deadline = time.monotonic() + 30
            url = None
            while time.monotonic() < deadline and not url:
                try:
                    with open(root + "/loomd.url") as f:
                        url = f.read().strip()
                except OSError:
                    time.sleep(0.05)
            self.assertTrue(url, "loomd did not start")
            with open(root + "/token") as f:
                c = Client(url, f.read().strip(), timeout=30)
            jid = c.submit("filler", "head -c 4000000 /dev/zero; exit 0")["id"]
            out = f"{root}/jobs/{jid}/stdout"
            while time.monotonic() < deadline + 30:
                if os.path.exists(out) and os.statvfs(root).f_bavail == 0:
                    break
                time.sleep(0.05)
            time.sleep(1.5)  # the job has ended; its shepherd cannot record it
            more = c.submit("while full", "true")  # the reserve keeps loom's records going
            self.assertTrue(more["created"])
            os.unlink(out)  # space comes back
            state = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                state = c.get(jid)
                if state["state"] not in ("PENDING", "RUNNING"):
                    break
                time.sleep(0.1)
            self.assertEqual(state["state"], "COMPLETED", state)
            c.close()
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(30)
            except subprocess.TimeoutExpired:
                p.kill()
            log.close()
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
