"""The loom CLI against a real loomd: submit, jobs, show, cancel, info;
human and --json output; --help; exit codes of docs/cli.md; the default
address (the Unix socket in $LOOM_STATE_DIR) and TCP with the token file."""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")


class Cli(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd().start()
        cls.tmp = tempfile.mkdtemp(prefix="loom-cli-")
        cls.script = os.path.join(cls.tmp, "train.sh")
        with open(cls.script, "w") as f:
            f.write("#!/bin/bash\npython train.py --epochs 3\n")
        cls.yaml = os.path.join(cls.tmp, "job.yaml")
        with open(cls.yaml, "w") as f:
            f.write("apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n"
                    "      containers:\n      - name: main\n        command: [python, train.py]\n")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def loom(self, *args, env=None, stdin=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        if env:
            e.update(env)
        p = subprocess.run([LOOM] + list(args), capture_output=True, text=True, env=e,
                           input=stdin, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def test_submit_show_jobs_cancel(self):
        rc, out, err = self.loom("submit", self.script, "--gpus", "2", "--cpus", "8", "--mem",
                                 "16GiB", "--time", "1h30m", "--label", "team=vision",
                                 "--priority", "3")
        self.assertEqual(rc, 0, err)
        self.assertRegex(out, r"^Submitted job \d+\n$")
        jid = int(out.split()[-1])
        rc, out, err = self.loom("show", str(jid))
        self.assertEqual(rc, 0, err)
        self.assertIn("name:        train.sh", out)
        self.assertIn("state:       PENDING", out)
        self.assertIn("memory:      16GiB", out)
        self.assertIn("time limit:  1h30m", out)
        self.assertIn("label:       team=vision", out)
        self.assertIn("| python train.py --epochs 3", out)
        rc, out, _ = self.loom("show", str(jid), "--json")
        j = json.loads(out)
        self.assertEqual(j["resources"]["gpus"], 2)
        self.assertEqual(j["resources"]["cpus"], 8)
        self.assertEqual(j["priority"], 3)
        self.assertTrue(j["submit_id"].startswith("cli-"))
        # YAML by extension, share of a GPU, explicit name, stdin.
        rc, out, err = self.loom("submit", self.yaml, "--gpu-share", "0.25", "--name", "yy",
                                 "--json")
        self.assertEqual(rc, 0, err)
        y = json.loads(out)
        self.assertTrue(y["created"])
        rc, out, err = self.loom("show", str(y["id"]), "--json")
        y = json.loads(out)
        self.assertEqual((y["format"], y["resources"]["gpu_share"], y["name"]), ("yaml", 250, "yy"))
        rc, out, err = self.loom("submit", "-", "--gpu-share", "500m", stdin="echo hi\n")
        self.assertEqual(rc, 0, err)
        # submit-id: the second submission returns the first job.
        rc, out1, _ = self.loom("submit", self.script, "--submit-id", "same-1")
        rc2, out2, _ = self.loom("submit", self.script, "--submit-id", "same-1")
        self.assertEqual((rc, rc2), (0, 0))
        first = int(out1.split()[-1])
        self.assertIn(f"Job {first} already exists", out2)
        # jobs: table and JSON.
        rc, out, err = self.loom("jobs", "--format", "id,name,state,gpus")
        self.assertEqual(rc, 0, err)
        lines = out.strip().split("\n")
        self.assertTrue(lines[0].startswith("ID"))
        self.assertIn("train.sh", out)
        self.assertIn("0.25", out)
        rc, out, _ = self.loom("jobs", "--json", "--limit", "2")
        data = json.loads(out)
        self.assertEqual(len(data["jobs"]), 2)
        self.assertIsNotNone(data["next_cursor"])
        # cancel: one ok, one already cancelled, one missing.
        rc, out, err = self.loom("cancel", str(jid))
        self.assertEqual(rc, 0, err)
        self.assertIn(f"Cancelled job {jid}", out)
        rc, out, err = self.loom("cancel", str(jid))
        self.assertEqual(rc, 1)
        self.assertIn("already CANCELLED", err)
        rc, out, err = self.loom("cancel", str(first), "999999")
        self.assertEqual(rc, 4)
        self.assertIn(f"Cancelled job {first}", out)
        self.assertIn("999999", err)
        rc, out, _ = self.loom("jobs", "--state", "cancelled", "--json")
        self.assertEqual(sorted(j["id"] for j in json.loads(out)["jobs"]), sorted([jid, first]))
        rc, out, err = self.loom("show", "999999")
        self.assertEqual(rc, 4)
        self.assertIn("not found", err)

    def test_terminal_text_escaped(self):
        """Issue 30 finding 10: text loomd hands back that a client set
        (here options a job file may carry: comment, env, output) reaches
        the terminal escaped in loom show, and --json escapes the same
        characters as \\uXXXX; loom logs is left alone (the job's bytes)."""
        c = self.d.client()
        hostile = "x\x1b]0;pwned\x07 \u202eevil\x9b2J"
        r = c.call("job.submit", {"name": "esc", "script": "true", "options": {
            "comment": hostile, "env": ["A=" + hostile], "output": "/tmp/" + hostile}})
        jid = r["id"]
        raw = [b"\x1b", b"\x07", "\u202e".encode(), "\x9b".encode()]
        p = subprocess.run([LOOM, "show", str(jid)], capture_output=True, timeout=60,
                           env={"LOOM_STATE_DIR": self.d.state_dir, "PATH": os.environ["PATH"]})
        self.assertEqual(p.returncode, 0, p.stderr)
        for b in raw:
            self.assertNotIn(b, p.stdout)
        self.assertIn(b"x\\x1b]0;pwned\\x07 \\u202eevil\\u009b2J", p.stdout)
        p = subprocess.run([LOOM, "show", str(jid), "--json"], capture_output=True, timeout=60,
                           env={"LOOM_STATE_DIR": self.d.state_dir, "PATH": os.environ["PATH"]})
        for b in raw:
            self.assertNotIn(b, p.stdout)
        self.assertEqual(json.loads(p.stdout)["options"]["comment"], hostile)  # the same text
        c.call("job.cancel", {"id": jid})

    def test_info_and_transports(self):
        rc, out, err = self.loom("info")
        self.assertEqual(rc, 0, err)
        self.assertIn("loomd", out)
        self.assertIn("durability:  normal", out)
        rc, out, err = self.loom("--url", self.d.url, "info", "--json")  # TCP, token file
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out)["name"], "loomd")
        rc, out, err = self.loom("info", env={"LOOM_URL": self.d.url, "LOOM_TOKEN": self.d.token})
        self.assertEqual(rc, 0, err)
        rc, out, err = self.loom("info", env={"LOOM_URL": self.d.url, "LOOM_TOKEN": "0" * 64})
        self.assertEqual(rc, 3)
        self.assertIn("401", err)

    def test_usage_and_errors(self):
        for cmd in ["submit", "jobs", "show", "cancel", "info"]:
            rc, out, err = self.loom(cmd, "--help")
            self.assertEqual(rc, 0, cmd)
            self.assertIn("usage: loom " + cmd, out)
        self.assertEqual(self.loom("submit")[0], 2)
        self.assertEqual(self.loom("submit", self.script, "--cpus", "zero")[0], 2)
        self.assertEqual(self.loom("submit", self.script, "--gpu-share", "2")[0], 2)
        self.assertEqual(self.loom("submit", self.script, "--mem", "lots")[0], 2)
        self.assertEqual(self.loom("submit", self.script, "--label", "novalue")[0], 2)
        self.assertEqual(self.loom("jobs", "--state", "DONE")[0], 2)
        self.assertEqual(self.loom("show", "abc")[0], 2)
        self.assertEqual(self.loom("cancel")[0], 2)
        rc, _, err = self.loom("submit", os.path.join(self.tmp, "missing.sh"))
        self.assertEqual(rc, 5)
        self.assertIn("missing.sh", err)
        binf = os.path.join(self.tmp, "bin")
        with open(binf, "wb") as f:
            f.write(b"\xff\xfe\x00binary")
        self.assertEqual(self.loom("submit", binf)[0], 5)
        # The server's validation comes back as a failure naming the field.
        rc, _, err = self.loom("submit", self.script, "--name", "x" * 300)
        self.assertNotEqual(rc, 0)
        self.assertIn("name", err)
        # Nothing listening: exit 3.
        rc, _, err = self.loom("--url", "unix:/nonexistent/loomd.sock", "jobs")
        self.assertEqual(rc, 3)
        self.assertIn("cannot reach loomd", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
