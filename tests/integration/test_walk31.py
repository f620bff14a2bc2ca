"""What the walk of issue 31's first day (its closing note) still found
wrong on main 54450d4, against a real loomd and the real `loom`:

- `loom sacct` printed ExitCode `-1:15` for a job cancelled while it ran and
  `-1:0` for one cancelled while pending; sacct prints `0:15` and `0:0`
  (a wrapper that splits the field reads the exit code first).
- `loom submit --warm-start` with no stored model similar enough exited 1;
  docs/cli.md and docs/zoo.md say 4 (a named object does not exist).
- An unknown option was one line only for `loom submit` and the Slurm
  front: `loom jobs -j 5` printed "jobs: invalid option -- 'j'" and the
  whole help (25 lines; `loom gen`'s 54, `loom sim`'s 62), as did every
  other command (docs/slurm.md says loom's message is one line, "as loom's
  other commands").
"""

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
SRC = os.environ.get("LOOM_SOURCE_DIR",
                     os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODEL = os.path.join(SRC, "tests", "fuzz", "corpus", "zoo_onnx", "mlp-64.onnx")


class Walk31(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd(extra_args=["--executor", "local", "--node",
                                  "name=n1,cpus=4,memory=4GiB,gpus=2", "--grace",
                                  "500ms"]).start()
        cls.tmp = tempfile.mkdtemp(prefix="loom-walk31-")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def loom(self, *args):
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        p = subprocess.run([LOOM] + list(args), capture_output=True, text=True, env=e,
                           cwd=self.tmp, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def state(self, jid):
        rc, out, err = self.loom("show", str(jid), "--json")
        self.assertEqual(rc, 0, err)
        return json.loads(out)["state"]

    def until(self, jid, states, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            s = self.state(jid)
            if s in states:
                return s
            time.sleep(0.1)
        self.fail(f"job {jid} is {s}, not {states}")

    def test_sacct_exit_code_of_cancelled_jobs(self):
        rc, out, err = self.loom("sbatch", "--parsable", "--wrap", "sleep 60")
        self.assertEqual(rc, 0, err)
        ran = int(out)
        rc, out, err = self.loom("sbatch", "--parsable", "--hold", "--wrap", "true")
        self.assertEqual(rc, 0, err)
        held = int(out)
        self.until(ran, {"RUNNING"})
        rc, _, err = self.loom("scancel", str(ran), str(held))
        self.assertEqual(rc, 0, err)
        self.until(ran, {"CANCELLED"})
        self.until(held, {"CANCELLED"})
        # the cancel is stored at once; the process's end (its signal) a
        # moment later, when the executor has reaped it
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            rc, out, err = self.loom("show", str(ran), "--json")
            self.assertEqual(rc, 0, err)
            if (json.loads(out).get("run") or {}).get("outcome"):
                break
            time.sleep(0.1)
        rc, out, err = self.loom("sacct", "-n", "-P", "-o", "JobID,State,ExitCode,DerivedExitCode",
                                 "-j", f"{ran},{held}")
        self.assertEqual(rc, 0, err)
        self.assertEqual(out.splitlines(),
                         [f"{ran}|CANCELLED|0:15|0:15", f"{held}|CANCELLED|0:0|0:0"])

    def test_warm_start_without_parent_is_exit_4(self):
        script = os.path.join(self.tmp, "train.sh")
        with open(script, "w") as f:
            f.write("#!/bin/bash\necho train\n")
        before = self.count()
        rc, out, err = self.loom("submit", script, "--model", MODEL, "--batch", "1", "--gpus",
                                 "1", "--warm-start", "--warm-task", "nothing-stored")
        self.assertIn("no stored model of this task is similar enough", err)
        self.assertEqual(rc, 4, err)
        self.assertEqual(self.count(), before)  # nothing submitted

    def test_unknown_option_is_one_line(self):
        for cmd in ["submit", "jobs", "show", "cancel", "logs", "wait", "hold", "release",
                    "requeue", "update", "info", "nodes", "usage", "dash", "gen", "sim",
                    "estimate", "prof", "mon", "render", "catalog", "sbatch", "squeue",
                    "scancel", "sacct", "sinfo", "slurm-links"]:
            rc, out, err = self.loom(cmd, "--bogus")
            self.assertEqual((rc, out, err), (2, "", f"loom {cmd}: unknown option '--bogus'; "
                                                    f"try 'loom {cmd} --help'\n"))
        rc, _, err = self.loom("zoo", "list", "--bogus")
        self.assertEqual((rc, err), (2, "loom zoo: unknown option '--bogus'; try 'loom zoo --help'\n"))
        rc, _, err = self.loom("estimate", "calibrate", "--bogus")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "loom estimate calibrate: unknown option '--bogus'; try 'loom "
                              "estimate calibrate --help'\n")
        rc, _, err = self.loom("jobs", "-j", "5")  # squeue's -j: loom squeue -j
        self.assertEqual((rc, err), (2, "loom jobs: unknown option '-j'; try 'loom jobs --help'\n"))
        rc, _, err = self.loom("jobs", "--limit")
        self.assertEqual((rc, err), (2, "loom jobs: option '--limit' needs a value; try 'loom "
                                        "jobs --help'\n"))
        rc, _, err = self.loom("submit", "-W", "x.sh")  # sbatch's --wait, not submit's
        self.assertEqual((rc, err), (2, "loom submit: unknown option '-W'; try 'loom submit "
                                        "--help'\n"))

    def count(self):
        rc, out, err = self.loom("jobs", "--all", "--limit", "0", "--json")
        self.assertEqual(rc, 0, err)
        return len(json.loads(out)["jobs"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
