"""Conformance of loom's #SBATCH reading against a real Slurm.

Realistic batch scripts written for Slurm (single-GPU training, DDP over
several GPUs, arrays for sweeps, a singleton dependency, every output
pattern, every time format) are submitted to loom (loomd with no executor:
the job is only stored) and, held, to the test Slurm of
scripts/slurm/cluster.sh, both from the same directory. For each script,
what loom stored must equal what `scontrol show job` reports: the name,
CPUs, memory, GPUs, time limit, output and error paths (loom's patterns
expanded with Slurm's job id, as loom would expand them with its own),
working directory, and the array's indices and throttle.

Known, documented differences are not compared: loom's default output is
loom-%j.out where Slurm's is slurm-%j.out (compared with the prefix
swapped), and loom runs a job on one node (NumNodes is not compared).
"""

import json
import os
import pwd
import re
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")
SRC = os.environ.get("LOOM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
CLUSTER = os.path.join(SRC, "scripts", "slurm", "cluster.sh")
# Ports of their own, so that this Slurm does not meet another test's.
PORTS = {"SLURM_CTLD_PORT": "6927", "SLURM_SLURMD_PORT": "6928"}
# One node declared large enough for every script (jobs are only held).
NODE = {"SLURM_NODE_CPUS": "64", "SLURM_NODE_MEM_MB": "262144"}

HEAD = "#!/bin/bash\n"
SCRIPTS = {
    # single-GPU training
    "train1.sh": HEAD + "#SBATCH --job-name=resnet50\n#SBATCH --gres=gpu:1\n"
                 "#SBATCH --cpus-per-task=8\n#SBATCH --mem=32G\n#SBATCH --time=04:00:00\n"
                 "python train.py --arch resnet50\n",
    "train2.sh": HEAD + "#SBATCH -J bert -G 1 -c 4 --mem=16000 -t 90\npython bert.py\n",
    "train3.sh": HEAD + "#SBATCH --job-name bert-large\n#SBATCH --gpus 1\n"
                 "#SBATCH --mem-per-cpu=4G -c 6\n#SBATCH --time 2-00:00:00\npython bert.py\n",
    # DDP over several GPUs of one node
    "ddp4.sh": HEAD + "#SBATCH -J ddp4\n#SBATCH -N 1\n#SBATCH --ntasks=4\n"
               "#SBATCH --cpus-per-task=4\n#SBATCH --gres=gpu:4\n#SBATCH --mem=128G\n"
               "#SBATCH -t 1-12\nsrun python -m torch.distributed.run train.py\n",
    "ddp8.sh": HEAD + "#SBATCH -J ddp8 -N 1 --ntasks-per-node=8 -c 2\n#SBATCH --gpus-per-node=8\n"
               "#SBATCH --mem-per-cpu=2048\n#SBATCH --time=12:30:00\nsrun python train.py\n",
    "ddp2.sh": HEAD + "#SBATCH -J ddp2 -n 2 --gpus-per-task=1 -c 3 --mem=20G -t 45:30\n"
               "srun python train.py\n",
    "torchrun.sh": HEAD + "#SBATCH --job-name=torchrun\n#SBATCH --gres=gpu:2\n"
                   "#SBATCH --cpus-per-task=16 --mem=64G\n#SBATCH --time=1-00:30\n"
                   "torchrun --nproc_per_node=2 train.py\n",
    # arrays for sweeps
    "sweep1.sh": HEAD + "#SBATCH -J lr-sweep\n#SBATCH --array=0-99%8\n#SBATCH --gres=gpu:1\n"
                 "#SBATCH -c 2 --mem=8G -t 30\n#SBATCH -o sweep-%A_%a.out\n"
                 "python train.py --lr-index $SLURM_ARRAY_TASK_ID\n",
    "sweep2.sh": HEAD + "#SBATCH -J seeds -a 1,3,5-7 -G 1 -t 1:00:00\n"
                 "#SBATCH --output=seeds/%x_%A_%a.log --error=seeds/%x_%A_%a.err\n"
                 "python train.py --seed $SLURM_ARRAY_TASK_ID\n",
    "sweep3.sh": HEAD + "#SBATCH -J step -a 0-15:4%2 -c 1 --time=5\npython train.py\n",
    "sweep4.sh": HEAD + "#SBATCH --array 10-12\n#SBATCH --job-name=bs\ntrue\n",
    # a dependency Slurm accepts without other jobs
    "single.sh": HEAD + "#SBATCH -J nightly --dependency=singleton -t 10:00\npython eval.py\n",
    # every output pattern
    "pat1.sh": HEAD + "#SBATCH -J pat1 -o out-%j.txt -e err-%j.txt\ntrue\n",
    "pat2.sh": HEAD + "#SBATCH -J pat2 -o %x.%u.%A.%a.log\ntrue\n",
    "pat3.sh": HEAD + "#SBATCH -J pat3 --output=job%8j_%%.out -e e%4j.err\ntrue\n",
    "pat4.sh": HEAD + "#SBATCH -J pat4 -o logs/%x/%j.out -D sub\ntrue\n",
    "pat5.sh": HEAD + "#SBATCH -J pat5 -e only-err-%j.log\ntrue\n",
    # every time format
    "t1.sh": HEAD + "#SBATCH -J t-minutes -t 5\ntrue\n",
    "t2.sh": HEAD + "#SBATCH -J t-min-sec -t 7:30\ntrue\n",
    "t3.sh": HEAD + "#SBATCH -J t-hms --time=03:02:01\ntrue\n",
    "t4.sh": HEAD + "#SBATCH -J t-dh --time=2-5\ntrue\n",
    "t5.sh": HEAD + "#SBATCH -J t-dhm --time=1-2:03\ntrue\n",
    "t6.sh": HEAD + "#SBATCH -J t-dhms --time=3-04:05:06\ntrue\n",
    "t7.sh": HEAD + "#SBATCH -J t-unlimited --time=UNLIMITED\ntrue\n",
    # defaults: no directive at all
    "plain.sh": HEAD + "echo hello\n",
}


def seconds(limit):
    if limit in ("UNLIMITED", "Partition_Limit"):
        return 0
    days, _, hms = limit.rpartition("-")
    h, m, s = (int(x) for x in hms.split(":"))
    return int(days or 0) * 86400 + h * 3600 + m * 60 + s


def size_bytes(text):
    m = re.fullmatch(r"([\d.]+)([KMGT]?)", text)
    return int(float(m.group(1)) * 1024 ** " KMGT".index(m.group(2) or " "))


def indices(spec):
    """Array indices of "0-99%8", "1,3,5-7", "0-15:4" (Slurm's or loom's)."""
    out = set()
    for part in spec.split("%")[0].split(","):
        rng, _, step = part.partition(":")
        a, _, b = rng.partition("-")
        out.update(range(int(a), int(b or a) + 1, int(step or 1)))
    return out


def swap(path, old, new):
    """The default file name's prefix swapped (slurm-%j.out, loom-%j.out)."""
    d, b = os.path.split(path)
    return os.path.join(d, new + b[len(old):]) if b.startswith(old) else path


def expand(pattern, job_id, name, user, array):
    """A loom output pattern as loom's executor expands it, with Slurm's id."""
    def one(m):
        width, letter = m.group(1), m.group(2)
        val = {"j": str(job_id), "A": str(job_id), "x": name, "u": user, "%": "%",
               "a": "4294967294"}[letter]
        if letter in "jAa" and width:
            val = val.zfill(min(int(width), 10))
        return val
    return re.sub(r"%(\d*)([jAaxu%])", one, pattern)


class SlurmJobFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="loom-slurmjf-")
        cls.env = dict(os.environ, **PORTS, **NODE)
        up = subprocess.run([CLUSTER, "up", cls.tmp + "/cluster", "1", "8"], env=cls.env,
                            capture_output=True, text=True)
        if up.returncode != 0:
            raise RuntimeError("test Slurm did not start: " + up.stderr)
        cls.env["SLURM_CONF"] = cls.tmp + "/cluster/slurm.conf"
        cls.d = Loomd().start()  # no executor: loom only stores the jobs
        cls.work = os.path.join(cls.tmp, "work")
        os.makedirs(os.path.join(cls.work, "sub", "logs", "pat4"))

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        subprocess.run([CLUSTER, "down", cls.tmp + "/cluster"], env=cls.env)
        subprocess.run(["rm", "-rf", cls.tmp])

    def run_in_work(self, args):
        e = {k: v for k, v in self.env.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        p = subprocess.run(args, capture_output=True, text=True, env=e, cwd=self.work, timeout=60)
        self.assertEqual(p.returncode, 0, f"{args}: {p.stderr}")
        return p.stdout

    def loom_job(self, path):
        jid = json.loads(self.run_in_work([LOOM, "submit", "--json", path]))["id"]
        return json.loads(self.run_in_work([LOOM, "show", "--json", str(jid)]))

    def slurm_job(self, path):
        sid = self.run_in_work(["sbatch", "--hold", "--parsable", path]).strip().split(";")[0]
        line = self.run_in_work(["scontrol", "show", "job", "-o", sid]).strip()
        fields = dict(kv.split("=", 1) for kv in line.split(" ") if "=" in kv)
        return int(sid), fields

    def wait_done(self, sid, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.run_in_work(["scontrol", "show", "job", "-o", str(sid)])
            if re.search(r"JobState=(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL)", line):
                return
            time.sleep(0.2)
        self.fail(f"Slurm job {sid} did not end")

    def slurm_gpus(self, s):
        total = 0
        for key, mult in (("TresPerJob", 1), ("TresPerNode", 1),
                          ("TresPerTask", int(s["NumTasks"]))):
            m = re.search(r"gres:gpu:(\d+)", s.get(key, ""))
            if m:
                total = max(total, int(m.group(1)) * mult)
        return total

    def compare(self, name, text):
        path = os.path.join(self.work, name)
        with open(path, "w") as f:
            f.write(text)
        j = self.loom_job(path)
        sid, s = self.slurm_job(path)
        opts, res = j["options"], j["resources"]
        self.assertEqual(j["name"], s["JobName"], name)
        self.assertEqual(res["cpus"], int(s["NumCPUs"]), name)
        if "--mem" in text:
            tres = dict(kv.split("=") for kv in s["TRES"].split(","))
            self.assertEqual(res["memory"], size_bytes(tres["mem"]), name)
        self.assertEqual(res["gpus"] if "gpu" in text.lower() or "-G" in text else 0,
                         self.slurm_gpus(s), name)
        self.assertEqual(j["time_limit"], seconds(s["TimeLimit"]), name)
        self.assertEqual(opts["workdir"], s["WorkDir"], name)
        user = pwd.getpwuid(os.geteuid()).pw_name
        default = "loom-%A_%a.out" if "array" in opts else "loom-%j.out"
        out = expand(opts.get("output", default), sid, j["name"], user, opts.get("array"))
        err = expand(opts["error"], sid, j["name"], user, None) if "error" in opts else out
        resolve = lambda p: p if p.startswith("/") else os.path.join(opts["workdir"], p)  # noqa
        slurm_out = swap(s["StdOut"], "slurm-", "loom-") if "output" not in opts \
            else s["StdOut"]
        slurm_err = swap(s["StdErr"], "slurm-", "loom-") if "output" not in opts \
            and "error" not in opts else s["StdErr"]
        if name.startswith("pat"):
            # scontrol shows some patterns unexpanded (%%, widths): run the
            # job and look at the files Slurm really made.
            self.run_in_work(["scontrol", "release", str(sid)])
            self.wait_done(sid)
            as_slurm = lambda p, given: p if given else swap(p, "loom-", "slurm-")  # noqa
            for path, given in ((resolve(out), "output" in opts),
                                (resolve(err), "output" in opts or "error" in opts)):
                path = as_slurm(path, given)
                self.assertTrue(os.path.exists(path),
                                (name, path, os.listdir(os.path.dirname(path))))
        else:
            self.assertEqual(resolve(out), slurm_out, name)
            self.assertEqual(resolve(err), slurm_err, name)
        if "array" in opts:
            self.assertEqual(indices(opts["array"]), indices(s["ArrayTaskId"]), name)
            cap = opts["array"].partition("%")[2]
            self.assertEqual(cap or None, s.get("ArrayTaskThrottle"), name)
        else:
            self.assertNotIn("ArrayTaskId", s, name)

    def test_slurm_executor_runs_in_submit_dir(self):
        """loomd's Slurm executor honours the working directory and -o too."""
        saved = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = self.env["SLURM_CONF"]
        try:
            d = Loomd(extra_args=["--executor", "slurm"]).start()
        finally:
            if saved is None:
                del os.environ["SLURM_CONF"]
            else:
                os.environ["SLURM_CONF"] = saved
        try:
            path = os.path.join(self.work, "sub", "viaslurm.sh")
            with open(path, "w") as f:
                f.write(HEAD + "#SBATCH -J viaslurm -o got-%x-%j.txt --export=ALL,LR=0.5\n"
                        "pwd; echo lr=$LR\n")
            e = {k: v for k, v in self.env.items() if not k.startswith("LOOM_")}
            e["LOOM_STATE_DIR"] = d.state_dir
            run = lambda *a: subprocess.run([LOOM] + list(a), capture_output=True, text=True,  # noqa
                                            env=e, cwd=os.path.dirname(path), timeout=120)
            p = run("submit", "--json", path)
            self.assertEqual(p.returncode, 0, p.stderr)
            jid = json.loads(p.stdout)["id"]
            p = run("wait", str(jid))
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            with open(os.path.join(self.work, "sub", f"got-viaslurm-{jid}.txt")) as f:
                self.assertEqual(f.read(), os.path.join(self.work, "sub") + "\nlr=0.5\n")
        finally:
            d.cleanup()

    def test_scripts(self):
        self.assertGreaterEqual(len(SCRIPTS), 20)
        for name, text in SCRIPTS.items():
            with self.subTest(script=name):
                self.compare(name, text)


if __name__ == "__main__":
    unittest.main(verbosity=2)
