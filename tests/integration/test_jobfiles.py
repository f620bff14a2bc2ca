"""Job files end to end: `loom submit` reads #SBATCH / #LOOM directives and
Kubernetes Job manifests, the command line overrides them, and loomd's
local executor runs the job in the submit directory with output to
loom-ID.out there (or where -o/-e say). Also: warnings for what loom
cannot honour, --strict, errors naming file and line, and requests no
node can ever hold refused at submission (docs/jobfiles.md)."""

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
NODE = "name=n1,cpus=16,memory=16GiB,gpus=4,gpu_type=virtual"


class JobFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd(extra_args=["--executor", "local", "--node", NODE, "--grace",
                                  "500ms"]).start()
        cls.tmp = tempfile.mkdtemp(prefix="loom-jobfiles-")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def loom(self, *args, cwd=None):
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        p = subprocess.run([LOOM] + list(args), capture_output=True, text=True, env=e,
                           cwd=cwd or self.tmp, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def write(self, name, text):
        path = os.path.join(self.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def submit(self, *args, cwd=None):
        rc, out, err = self.loom("submit", "--json", *args, cwd=cwd)
        self.assertEqual(rc, 0, err)
        return json.loads(out)["id"], err

    def job(self, jid):
        rc, out, err = self.loom("show", str(jid), "--json")
        self.assertEqual(rc, 0, err)
        return json.loads(out)

    def finished(self, jid, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            j = self.job(jid)
            if j["state"] not in ("PENDING", "RUNNING"):
                return j
            time.sleep(0.1)
        self.fail(f"job {jid} did not end: {j['state']}")

    def test_sbatch_directives_run_in_submit_dir(self):
        sub = os.path.join(self.tmp, "work")
        os.makedirs(sub, exist_ok=True)
        path = self.write("train.sh", "#!/bin/bash\n"
                          "#SBATCH --job-name=mytrain --cpus-per-task=4 --gres=gpu:2\n"
                          "#SBATCH --time=00:00:30 --mem=1G\n"
                          "#SBATCH --partition=gpu\n"
                          "#SBATCH --export=LR=0.1\n"
                          "echo \"pwd=$(pwd) lr=$LR gpus=$CUDA_VISIBLE_DEVICES\"\n"
                          "echo oops >&2\n")
        jid, err = self.submit(path, cwd=sub)
        self.assertIn("train.sh:4: #SBATCH --partition: not supported by loom", err)
        j = self.finished(jid)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertEqual(j["name"], "mytrain")
        self.assertEqual((j["resources"]["cpus"], j["resources"]["gpus"]), (4, 2))
        # 00:00:30 is stored as Slurm stores it: a whole minute.
        self.assertEqual((j["resources"]["memory"], j["time_limit"]), (1 << 30, 60))
        self.assertEqual(j["options"]["workdir"], sub)
        out = os.path.join(sub, f"loom-{jid}.out")
        with open(out) as f:
            text = f.read()
        self.assertIn(f"pwd={sub} lr=0.1 gpus=", text)
        self.assertIn("oops", text)  # error merged into output, as sbatch

    def test_output_patterns_and_overrides(self):
        path = self.write("pat.sh", "#!/bin/bash\n#SBATCH -J pat -o logs/%x-%j.out\n"
                          "#SBATCH -e logs/%x-%j.err -c 2\necho out; echo err >&2\n")
        os.makedirs(os.path.join(self.tmp, "logs"), exist_ok=True)
        # The command line wins over the file: name and CPUs.
        jid, _ = self.submit(path, "--name", "cli", "--cpus", "3")
        j = self.finished(jid)
        self.assertEqual((j["name"], j["resources"]["cpus"]), ("cli", 3))
        with open(os.path.join(self.tmp, "logs", f"cli-{jid}.out")) as f:
            self.assertEqual(f.read(), "out\n")
        with open(os.path.join(self.tmp, "logs", f"cli-{jid}.err")) as f:
            self.assertEqual(f.read(), "err\n")
        # -D on the command line, relative to the current directory.
        os.makedirs(os.path.join(self.tmp, "d2"), exist_ok=True)
        jid, _ = self.submit(path, "-D", "d2", "-o", "x.out", "-e", "x.out")
        j = self.finished(jid)
        self.assertEqual(j["options"]["workdir"], os.path.join(self.tmp, "d2"))
        with open(os.path.join(self.tmp, "d2", "x.out")) as f:
            self.assertEqual(sorted(f.read().split()), ["err", "out"])

    def test_carried_options_warned(self):
        path = self.write("arr.sh", "#!/bin/bash\n#SBATCH --array=0-9%2 -d afterok:1 --hold\n"
                          "#SBATCH --nice=5 --begin=now+1hour -A lab --comment=hi\ntrue\n")
        jid, err = self.submit(path)
        self.assertIn("--nice", err)
        for what in ("--array", "--dependency", "--hold", "--begin"):  # acted on: no warning
            self.assertNotIn(what, err)
        self.assertIn("not acted on yet", err)
        o = self.job(jid)["options"]
        self.assertEqual((o["array"], o["dependency"], o["hold"], o["nice"]),
                         ("0-9%2", "afterok:1", True, 5))
        self.assertEqual((o["account"], o["comment"], o["begin"]), ("lab", "hi", "now+1hour"))
        rc, out, err = self.loom("show", str(jid))
        self.assertIn("array:       0-9%2\n", out)
        self.assertIn("hold:        yes\n", out)
        self.assertIn("dependency:  afterok:1\n", out)
        self.assertIn(f"workdir:     {self.tmp}", out)

    def test_errors_name_file_and_line(self):
        path = self.write("bad.sh", "#!/bin/bash\n#SBATCH -J ok\n#SBATCH -c lots\ntrue\n")
        rc, _, err = self.loom("submit", path)
        self.assertEqual(rc, 5)
        self.assertIn("bad.sh:3: -c: CPUs per task 'lots': expected an integer", err)
        path = self.write("part.sh", "#!/bin/bash\n#SBATCH --partition=gpu\ntrue\n")
        rc, _, err = self.loom("submit", "--strict", path)
        self.assertEqual(rc, 5)
        self.assertIn("part.sh:2: #SBATCH --partition: not supported by loom (--strict)", err)
        rc, _, err = self.loom("submit", path, "--cpus", "0")
        self.assertEqual(rc, 2)
        self.assertIn("--cpus", err)

    def test_kubernetes_job(self):
        path = self.write("hello.yaml", "apiVersion: batch/v1\nkind: Job\n"
                          "metadata:\n  name: hello\nspec:\n  activeDeadlineSeconds: 40\n"
                          "  backoffLimit: 0\n  template:\n    spec:\n"
                          "      restartPolicy: Never\n      containers:\n"
                          "      - name: main\n        image: busybox\n"
                          "        command: [sh, -c, 'echo k8s $GREETING']\n"
                          "        env: [{name: GREETING, value: hi}]\n"
                          "        resources:\n          limits: {cpu: \"3\", memory: 512Mi,"
                          " nvidia.com/gpu: 2}\n")
        jid, err = self.submit(path)
        self.assertIn("containers[0].image busybox", err)
        j = self.finished(jid)
        self.assertEqual(j["state"], "COMPLETED", j["reason"])
        self.assertEqual(j["name"], "hello")
        self.assertEqual((j["resources"]["cpus"], j["resources"]["gpus"]), (3, 2))
        self.assertEqual((j["resources"]["memory"], j["time_limit"]), (512 << 20, 40))
        with open(os.path.join(self.tmp, f"loom-{jid}.out")) as f:
            self.assertEqual(f.read(), "k8s hi\n")

    def test_infeasible_refused(self):
        path = self.write("big.sh", "#!/bin/bash\ntrue\n")
        cases = [
            (["--gpus", "8"], "resources.gpus: 8 GPUs requested, but the largest node (n1) has 4"),
            (["--gpus", "1", "--gpu-type", "A100"],
             "resources.gpu_type: no node has GPUs of type 'A100'"),
            (["--cpus", "64"], "resources.cpus: 64 CPUs requested, but the largest node (n1) "
                               "has 16"),
            (["--mem", "64GiB"], "resources.memory: 65536 MiB requested, but the largest node "
                                 "(n1) has 16384"),
        ]
        for args, msg in cases:
            rc, out, err = self.loom("submit", path, *args)
            self.assertEqual(rc, 1, (args, out, err))
            self.assertIn("loom submit: " + msg, err)
        # --hold keeps it (for a cluster that will grow): it is stored and
        # stays held; released, no node can hold it: unschedulable.
        jid, err = self.submit(path, "--gpus", "8", "--hold")
        self.d.client().wait_steps(3)  # a few steps: a held job stays pending
        j = self.job(jid)
        self.assertEqual((j["state"], j["reason"]), ("PENDING", "JobHeld"))
        rc, _, err = self.loom("release", str(jid))
        self.assertEqual(rc, 0, err)
        j = self.finished(jid)
        self.assertIn("unschedulable", j["reason"])
        # What fits is accepted.
        jid, _ = self.submit(path, "--gpus", "4", "--gpu-type", "virtual", "--cpus", "16")
        self.assertEqual(self.finished(jid)["state"], "COMPLETED")
        # job.submit asks the runtime's own test (loom_sched_feasible): one of
        # two types runs (loomd's former check refused it), and 1 KiB more than
        # the node's memory is refused (it was accepted, rounded down, then
        # rejected by the runtime, which rounds up).
        jid, _ = self.submit(path, "--gpus", "1", "--gpu-type", "A100|virtual")
        self.assertEqual(self.finished(jid)["state"], "COMPLETED")
        rc, out, err = self.loom("submit", path, "--mem", "16777217KiB")
        self.assertEqual(rc, 1, (out, err))
        self.assertIn("loom submit: resources.memory: 16385 MiB requested, but the largest node "
                      "(n1) has 16384", err)

    # ------------------------------------------------------ issue 31

    def test_time_is_minutes_everywhere(self):
        """`loom submit -t 30` is 30 minutes, as sbatch and as #SBATCH -t 30
        (it was 30 seconds); an array's tasks get the same limit."""
        path = self.write("t.sh", "#!/bin/bash\ntrue\n")
        cases = [(["-t", "30"], 1800), (["--time=30"], 1800), (["--time", "30"], 1800),
                 (["-t", "7:30"], 480), (["-t", "1-2"], 93600), (["-t", "2:00:00"], 7200),
                 (["-t", "UNLIMITED"], 0), (["--time", "1h30m"], 5400), (["-t", "90s"], 90)]
        for args, want in cases:
            jid, _ = self.submit("--hold", *args, path)
            self.assertEqual(self.job(jid)["time_limit"], want, args)
        jid, _ = self.submit("--hold", self.write("t30.sh", "#!/bin/bash\n#SBATCH -t 30\ntrue\n"))
        self.assertEqual(self.job(jid)["time_limit"], 1800)
        rc, out, err = self.loom("submit", "--json", "--hold", "--array=0-19%4", "-t", "10", path)
        self.assertEqual(rc, 0, err)
        arr = json.loads(out)["array"]
        self.assertEqual(arr["tasks"], 20)
        for tid in range(arr["job_id"], arr["job_id"] + 20):
            j = self.job(tid)
            self.assertEqual((j["options"]["array_job_id"], j["time_limit"]),
                             (arr["job_id"], 600))

    def test_export_and_slurm_variables(self):
        """--export as sbatch (default ALL: the submitter's environment, so
        an activated venv's PATH reaches the job), and Slurm's job
        variables set."""
        path = self.write("env.sh", "#!/bin/bash\n#SBATCH -J envjob -c 3\n"
                          "for v in MYVAR OTHER X PATH SLURM_JOB_ID SLURM_JOBID SLURM_CPUS_PER_TASK \\\n"
                          "  SLURM_JOB_NAME \\\n"
                          "  SLURM_NTASKS SLURM_SUBMIT_DIR SLURM_JOB_NUM_NODES SLURM_JOB_NODELIST \\\n"
                          "  SLURM_GPUS LOOM_JOB_ID LOOM_URL LOOM_TOKEN; do echo \"$v=${!v-unset}\"; done\n")
        venv = os.path.join(self.tmp, "venv", "bin")

        def run(*args, env=None):
            e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
            e.update(env or {}, LOOM_STATE_DIR=self.d.state_dir, LOOM_TOKEN="not-for-jobs",
                     MYVAR="hello", OTHER="o", PATH=venv + ":" + os.environ["PATH"],
                     SLURM_JOB_ID="999999")  # a stale one (submitted from a job)
            p = subprocess.run([LOOM, "submit", "--json"] + list(args) + [path],
                               capture_output=True, text=True, env=e, cwd=self.tmp, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            jid = json.loads(p.stdout)["id"]
            self.assertEqual(self.finished(jid)["state"], "COMPLETED")
            with open(os.path.join(self.tmp, f"loom-{jid}.out")) as f:
                return jid, dict(l.split("=", 1) for l in f.read().splitlines()), p.stderr

        jid, v, _ = run()  # sbatch's default: ALL
        self.assertEqual((v["MYVAR"], v["OTHER"], v["X"]), ("hello", "o", "unset"))
        self.assertTrue(v["PATH"].startswith(venv + ":"), v["PATH"])
        want = {"SLURM_JOB_ID": str(jid), "SLURM_JOBID": str(jid), "SLURM_CPUS_PER_TASK": "3",
                "SLURM_JOB_NAME": "envjob", "SLURM_NTASKS": "1", "SLURM_SUBMIT_DIR": self.tmp,
                "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "n1", "SLURM_GPUS": "unset",
                "LOOM_JOB_ID": str(jid), "LOOM_URL": "unset", "LOOM_TOKEN": "unset"}
        self.assertEqual({k: v[k] for k in want}, want)
        _, v, _ = run("--export=ALL")
        self.assertEqual(v["MYVAR"], "hello")
        _, v, _ = run("--export=NONE")
        self.assertEqual((v["MYVAR"], v["OTHER"]), ("unset", "unset"))
        self.assertFalse(v["PATH"].startswith(venv), v["PATH"])
        _, v, err = run("--export=MYVAR,NOSUCH")
        self.assertEqual((v["MYVAR"], v["OTHER"]), ("hello", "unset"))
        self.assertIn("--export=NOSUCH: not set in the environment", err)
        _, v, _ = run("--export=ALL,X=1,MYVAR=given")
        self.assertEqual((v["MYVAR"], v["OTHER"], v["X"]), ("given", "o", "1"))
        _, v, _ = run("--gpus", "2")
        self.assertEqual(v["SLURM_GPUS"], "2")
        _, _, err = run(env={"BIG%d" % i: "x" for i in range(300)})
        self.assertIn("variables of the environment not passed", err)

    def test_output_dir_missing_reason(self):
        """No logs/ for --output=logs/%x-%j.out: FAILED with the reason in
        loom show, and loom logs says it (exit 1), not an empty rc 0."""
        path = self.write("nologs.sh", "#!/bin/bash\n#SBATCH -J x\n"
                          "#SBATCH --output=logs/%x-%j.out\necho hi\n")
        jid, _ = self.submit(path)
        j = self.finished(jid)
        want = f"cannot open output '{self.tmp}/logs/x-{jid}.out': No such file or directory"
        self.assertEqual(j["state"], "FAILED")
        self.assertEqual(j["reason"], "exit code 126: " + want)  # said once (walk of issue 31)
        rc, out, err = self.loom("show", str(jid))
        self.assertIn(want, out)
        rc, out, err = self.loom("logs", str(jid))
        self.assertEqual((rc, out), (1, ""), err)
        self.assertIn(want, err)

    def test_kubernetes_indexed_job(self):
        """completionMode: Indexed: each task's JOB_COMPLETION_INDEX."""
        path = self.write("idx.yaml", "apiVersion: batch/v1\nkind: Job\n"
                          "metadata: {name: idx, labels: {team: nlp}}\nspec:\n"
                          "  completions: 3\n  completionMode: Indexed\n  template:\n"
                          "    spec:\n      restartPolicy: Never\n      containers:\n"
                          "      - name: main\n"
                          "        command: [sh, -c, 'echo index=$JOB_COMPLETION_INDEX']\n")
        jid, err = self.submit(path)
        self.assertNotIn("retries", err)
        self.assertEqual(self.job(jid)["labels"].get("team"), "nlp")
        for k in range(3):
            self.assertEqual(self.finished(jid + k)["state"], "COMPLETED")
            with open(os.path.join(self.tmp, f"loom-{jid}_{k}.out")) as f:
                self.assertEqual(f.read(), f"index={k}\n")

    def test_dash_url_with_rpc_path(self):
        """loom dash through http://HOST:PORT/rpc prints a login URL that
        works (it 404ed: .../rpc/login?code=...)."""
        import urllib.error
        import urllib.request
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e.update(LOOM_URL=self.d.url.rstrip("/") + "/rpc", LOOM_TOKEN=self.d.token)
        p = subprocess.run([LOOM, "dash"], capture_output=True, text=True, env=e, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        url = [w for w in p.stdout.split() if w.startswith("http://")][0]
        self.assertNotIn("/rpc/", url)

        class NoRedirect(urllib.request.HTTPRedirectHandler):
            def redirect_request(self, *a, **k):
                return None
        try:
            status = urllib.request.build_opener(NoRedirect).open(url, timeout=10).status
        except urllib.error.HTTPError as err:
            status = err.code
        self.assertIn(status, (200, 302, 303), url)

    def test_cancelled_output_says_so(self):
        """A cancelled (or timed out) job's output ends with Slurm's line."""
        path = self.write("long.sh", "#!/bin/bash\necho started\nsleep 60\n")
        jid, _ = self.submit(path)
        out = os.path.join(self.tmp, f"loom-{jid}.out")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not (os.path.exists(out) and open(out).read()):
            time.sleep(0.1)
        rc, _, err = self.loom("cancel", str(jid))
        self.assertEqual(rc, 0, err)
        self.assertEqual(self.finished(jid)["state"], "CANCELLED")
        with open(out) as f:
            text = f.read()
        self.assertRegex(text, r"^started\nloom-shepherd: error: \*\*\* JOB %d ON n1 CANCELLED "
                         r"AT \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d \*\*\*\n$" % jid)
        jid, _ = self.submit("--time", "1s", path)
        self.assertEqual(self.finished(jid)["state"], "TIMEOUT")
        with open(os.path.join(self.tmp, f"loom-{jid}.out")) as f:
            self.assertRegex(f.read(), r"\*\*\* JOB %d ON n1 CANCELLED AT \S+ DUE TO TIME "
                             r"LIMIT \*\*\*\n$" % jid)

    def test_submit_command_line_habits(self):
        """--wrap, one-line option errors, an honest --help."""
        jid, _ = self.submit("--wrap", "echo wrapped $((6*7))")
        j = self.finished(jid)
        self.assertEqual((j["state"], j["name"]), ("COMPLETED", "wrap"))
        with open(os.path.join(self.tmp, f"loom-{jid}.out")) as f:
            self.assertEqual(f.read(), "wrapped 42\n")
        rc, out, err = self.loom("submit", "--bogus", "x.sh")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "loom submit: unknown option '--bogus'; try 'loom submit --help'\n")
        rc, out, err = self.loom("submit", "x.sh", "--time")
        self.assertEqual(rc, 2)
        self.assertEqual(err, "loom submit: option '--time' needs a value; "
                         "try 'loom submit --help'\n")
        rc, out, err = self.loom("submit", "--help")
        self.assertEqual(rc, 0)
        for line in out.splitlines():
            if "not acted on yet" in line:
                for acted in ("--array", "--dependency", "--begin", "--hold"):
                    self.assertNotIn(acted, line)
        self.assertIn("a bare number is minutes", out)

    def test_jobs_user_me_since_limit(self):
        """loom jobs -u USER / --me, and --since before --limit."""
        me = __import__("pwd").getpwuid(os.getuid()).pw_name
        path = self.write("h.sh", "#!/bin/bash\ntrue\n")
        ids = [self.submit("--hold", "--name", "lim", path)[0] for _ in range(3)]
        rc, out, err = self.loom("jobs", "--all", "--name", "lim", "--limit", "2", "--json")
        self.assertEqual(rc, 0, err)
        got = [j["id"] for j in json.loads(out)["jobs"]]
        self.assertEqual(got, ids[:2])  # the first 2 of those named lim, not of all jobs
        rc, out, err = self.loom("jobs", "--all", "--since", "1h", "--limit", "1", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(len(json.loads(out)["jobs"]), 1)
        for args in (["-u", me], ["--user", me], ["--me"]):
            rc, out, err = self.loom("jobs", *args, "--name", "lim")
            self.assertEqual(rc, 0, err)
            self.assertIn(str(ids[0]), out, args)
        rc, out, err = self.loom("jobs", "-u", "nosuchuser", "--name", "lim")
        self.assertNotIn(str(ids[0]), out)
        # an array's row id fits the ID column
        rc, out, err = self.loom("submit", "--json", "--hold", "--array=0-9,100-101", "--name",
                                 "arrcol", path)
        aid = json.loads(out)["array"]["job_id"]
        rc, out, err = self.loom("jobs", "--name", "arrcol")
        lines = out.splitlines()
        col = lines[0].index("NAME")
        row = [l for l in lines if "arrcol" in l][0]
        self.assertEqual((row[:col].rstrip(), row[col - 1], row[col:col + 6]),
                         (f"{aid}_[0-9,100-101]", " ", "arrcol"), out)


if __name__ == "__main__":
    unittest.main(verbosity=2)
