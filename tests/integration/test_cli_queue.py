"""The CLI's queue habits against a real loomd with the local executor:
`loom jobs` (active jobs by default, --all, --state, --name), `loom logs
[-f] [--stderr]` and `loom wait` (long-poll job.logs / job.wait, exit
status from the jobs' result), `loom --version`, `loom help [COMMAND]`,
errors as `loom COMMAND: message`."""

import json
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")


class Queue(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd(extra_args=["--executor", "local", "--node",
                                  "name=n1,cpus=4,memory=4GiB", "--grace", "500ms"]).start()
        cls.tmp = tempfile.mkdtemp(prefix="loom-queue-")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def loom(self, *args, timeout=60):
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        p = subprocess.run([LOOM] + list(args), capture_output=True, text=True, env=e,
                           cwd=self.tmp, timeout=timeout)
        return p.returncode, p.stdout, p.stderr

    def submit(self, name, text, *args):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        rc, out, err = self.loom("submit", "--json", path, *args)
        self.assertEqual(rc, 0, err)
        return json.loads(out)["id"]

    def test_logs_follow_and_wait(self):
        jid = self.submit("slow.sh", "#!/bin/bash\n#SBATCH -e err-%j.txt\n"
                          "for i in 1 2 3; do echo line $i; sleep 0.3; done\n"
                          "echo bad >&2\nexit 3\n")
        t0 = time.monotonic()
        rc, out, err = self.loom("logs", "-f", str(jid))
        self.assertEqual((rc, out), (0, "line 1\nline 2\nline 3\n"), err)
        self.assertLess(time.monotonic() - t0, 15)  # pushed at the end, not at a timeout
        rc, out, err = self.loom("logs", str(jid), "--stderr")
        self.assertEqual((rc, out), (0, "bad\n"), err)
        rc, out, err = self.loom("logs", str(jid), "--json")
        got = json.loads(out)
        self.assertEqual((got["data"], got["next_offset"], got["state"]),
                         ("line 1\nline 2\nline 3\n", 21, "FAILED"))
        rc, out, err = self.loom("wait", str(jid))
        self.assertEqual(rc, 3, err)  # the job's own exit code
        self.assertEqual(out, f"{jid} FAILED exit code 3\n")
        ok = self.submit("ok.sh", "#!/bin/bash\nsleep 0.5\n")
        rc, out, err = self.loom("wait", "--json", str(ok), str(jid))
        self.assertEqual(rc, 3, err)
        got = json.loads(out)
        self.assertEqual([j["state"] for j in got], ["COMPLETED", "FAILED"])
        self.assertEqual(got[1]["exit_code"], 3)
        rc, out, err = self.loom("wait", str(ok))
        self.assertEqual(rc, 0, err)
        rc, _, err = self.loom("wait", "999999")
        self.assertEqual(rc, 4)
        self.assertEqual(err, "loom wait: job 999999 not found\n")
        rc, _, err = self.loom("logs", "999999")
        self.assertEqual((rc, err), (4, "loom logs: job 999999 not found\n"))

    def test_jobs_active_by_default(self):
        done = self.submit("done.sh", "#!/bin/bash\ntrue\n", "--name", "finished-one")
        self.assertEqual(self.loom("wait", str(done))[0], 0)
        run = self.submit("long.sh", "#!/bin/bash\nsleep 30\n", "--name", "still-running")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            rc, out, err = self.loom("jobs")
            self.assertEqual(rc, 0, err)
            if " RUNNING " in out:
                break
            time.sleep(0.1)
        lines = out.splitlines()
        self.assertEqual(lines[0].split(), ["ID", "NAME", "USER", "STATE", "ELAPSED",
                                            "TIME_LIMIT", "NODE/GPUS", "REASON"])
        row = [line for line in lines if "still-running" in line][0].split()
        self.assertEqual(row[0], str(run))
        self.assertEqual((row[3], row[5], row[6]), ("RUNNING", "UNLIMITED", "n1"))
        self.assertRegex(row[4], r"^\d+:\d\d$")
        self.assertNotIn("finished-one", out)
        rc, out, _ = self.loom("jobs", "--all", "--format", "id,state,cpus")
        self.assertEqual(out.splitlines()[0].split(), ["ID", "STATE", "CPUS"])
        self.assertIn(f"{done} ", out)
        rc, out, _ = self.loom("jobs", "--all", "--since", "2099-01-01", "--json")
        self.assertEqual(json.loads(out)["jobs"], [])
        rc, out, _ = self.loom("jobs", "--all", "--since", "1h", "--json")
        self.assertIn(done, [j["id"] for j in json.loads(out)["jobs"]])
        # --watch redraws until interrupted (not a terminal here: no escape codes).
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        try:
            subprocess.run([LOOM, "jobs", "--watch=1"], capture_output=True, text=True,
                           env=e, timeout=2.5)
            self.fail("--watch ended by itself")
        except subprocess.TimeoutExpired as t:
            shown = t.stdout.decode() if isinstance(t.stdout, bytes) else (t.stdout or "")
            self.assertGreaterEqual(shown.count("ID       NAME"), 2, shown)
            self.assertNotIn("\033[", shown)
        rc, _, err = self.loom("jobs", "--watch", "--json")
        self.assertEqual(rc, 2)
        rc, _, err = self.loom("jobs", "--format", "id,bogus")
        self.assertEqual(rc, 2)
        self.assertIn("loom jobs: --format: 'bogus'", err)
        rc, out, _ = self.loom("jobs", "--all")
        self.assertIn("finished-one", out)
        rc, out, _ = self.loom("jobs", "--all", "--name", "finished", "--json")
        self.assertEqual([j["id"] for j in json.loads(out)["jobs"]], [done])
        rc, out, _ = self.loom("jobs", "--state", "completed", "--json")
        self.assertIn(done, [j["id"] for j in json.loads(out)["jobs"]])
        self.loom("cancel", str(run))

    def test_version_and_help(self):
        rc, out, _ = self.loom("--version")
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"^loom \d+\.\d+\.\d+\n$")
        rc, out, _ = self.loom("help")
        self.assertEqual(rc, 0)
        self.assertIn("wait", out)
        for cmd in ("submit", "jobs", "logs", "wait"):
            rc, out, _ = self.loom("help", cmd)
            self.assertEqual(rc, 0, cmd)
            self.assertTrue(out.startswith("usage: loom " + cmd), out)
        rc, out, _ = self.loom("version", "--json")
        self.assertEqual(json.loads(out)["name"], "loom")
        rc, _, err = self.loom("cancel", "999999")
        self.assertEqual((rc, err), (4, "loom cancel: job 999999 not found\n"))
        rc, _, err = self.loom("help", "nope")
        self.assertEqual((rc, err), (2, "loom help: unknown command 'nope' (see 'loom --help')\n"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
