"""bench/slurm (run through bench/slurm.sh): loomd -> Slurm versus plain sbatch.

The same JOBS jobs (mixed GPU demands 1, 1, 2, 4, 8 and a half share, each
`true`) go to one real three-node Slurm (4, 4 and 8 fake GPUs), twice:

- plain sbatch: one sbatch per job (sequential, as a user script does),
  Slurm's own scheduler places them; measured: submissions per second
  (sbatch returned) and jobs completed per second (until Slurm reports all
  of them COMPLETED);
- through loomd (--executor slurm, fgd placement): the jobs are submitted to
  loomd in one RPC batch; loomd places each job with its policy and submits
  it with sbatch pinned to the chosen node as GPUs free; measured:
  placements per second (first submission to the last job handed to Slurm)
  and jobs completed per second (until loomd records all of them ended).

Placement through loomd is bound by the GPUs that free up (loom only hands
Slurm a job that fits now), plain sbatch only by slurmctld's submission
path, so their placement rates measure different things; completions per
second compare the whole path on the same cluster.
"""

import datetime
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
import shutil

src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(src, "tests", "integration"))
from loomd_client import Loomd  # noqa: E402

build, njobs, out_md = sys.argv[1], int(sys.argv[2]), sys.argv[3]
os.environ["LOOM_BUILD_DIR"] = build
script = os.path.join(src, "scripts", "slurm", "netns-cluster.sh")


def slurm(cdir, *args, check=True):
    r = subprocess.run([script, "exec", cdir] + list(args), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{args}: {r.stderr}")
    return r.stdout


def workload():
    rng = random.Random(11)
    out = []
    for i in range(njobs):
        kind = rng.choice(["1", "1", "2", "4", "8", "share"])
        out.append((i, 1 if kind == "share" else int(kind), kind == "share"))
    return out


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    ver = subprocess.run(["sinfo", "--version"], capture_output=True, text=True).stdout.strip()
    return (f"{model}, {os.cpu_count()} CPUs online, Linux {platform.release()}, {ver}; "
            f"load average at start {os.getloadavg()[0]:.2f}")


def main():
    tmp = tempfile.mkdtemp(prefix="loom-bench-slurm-")
    cdir = tmp + "/cluster"
    d = None
    try:
        up = subprocess.run([script, "up", cdir], capture_output=True, text=True)
        if up.returncode != 0:
            raise RuntimeError("cluster did not start: " + up.stderr)
        env = dict(line.split(" ", 1)[1].split("=", 1) for line in up.stdout.splitlines()
                   if line.startswith("export "))
        os.environ["SLURM_CONF"] = env["SLURM_CONF"]
        ns = env["LOOM_SLURM_NETNS"]
        jobs = workload()

        # Plain sbatch.
        os.makedirs(tmp + "/sb")
        t0 = time.monotonic()
        for i, g, _ in jobs:
            slurm(cdir, "sbatch", "--parsable", "--no-requeue", "--job-name=bench-sb",
                  f"--gres=gpu:{g}", "--cpus-per-task=1", f"--output={tmp}/sb/{i}.out",
                  "--wrap", "true")
        t_sub = time.monotonic() - t0
        while slurm(cdir, "squeue", "-h", "-n", "bench-sb", "-t", "PD,R,CG,CF", "-o", "%i").strip():
            time.sleep(0.1)
        t_done_sb = time.monotonic() - t0
        states = slurm(cdir, "squeue", "-h", "-n", "bench-sb", "-t", "all", "-o", "%T").split()
        ok_sb = states.count("COMPLETED")

        # Through loomd.
        d = Loomd(state_dir=tmp + "/loomd",
                  extra_args=["--executor", "slurm", "--placement", "fgd"],
                  wrapper=["nsenter", f"--net=/run/netns/{ns}"])
        os.makedirs(d.state_dir)
        d.start()
        c = d.client(unix=True)
        calls = []
        for i, g, share in jobs:
            res = {"cpus": 1}
            if share:
                res["gpu_share"] = 500
            else:
                res["gpus"] = g
            calls.append(("job.submit", {"name": f"bench-loom-{i}", "script": "#!/bin/bash\ntrue\n",
                                         "resources": res, "submit_id": f"bench-{i}"}))
        t0 = time.monotonic()
        t0_real = time.time()
        ids = [r[1]["id"] for r in c.batch(calls)]
        while True:
            listed = c.list_all()
            if all(j["state"] not in ("PENDING", "RUNNING") for j in listed if j["id"] in ids):
                break
            time.sleep(0.1)
        t_done_loom = time.monotonic() - t0
        last_place = 0.0
        ok_loom = 0
        for i in ids:
            j = c.get(i)
            ok_loom += j["state"] == "COMPLETED"
            for e in j["events"]:
                if e["to"] == "RUNNING":
                    t = datetime.datetime.strptime(e["time"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                        tzinfo=datetime.timezone.utc).timestamp()
                    last_place = max(last_place, t - t0_real)
        d.stop()
        d = None

        now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        rows = [
            ("plain sbatch (sequential), Slurm places", f"{njobs / t_sub:.1f} submitted/s "
             f"({t_sub:.2f} s)", f"{njobs / t_done_sb:.1f} ({t_done_sb:.2f} s)", ok_sb),
            ("loomd --executor slurm --placement fgd", f"{njobs / last_place:.1f} placed/s "
             f"({last_place:.2f} s to the last placement)",
             f"{njobs / t_done_loom:.1f} ({t_done_loom:.2f} s)", ok_loom),
        ]
        with open(out_md, "w") as f:
            f.write("# bench/slurm\n\n")
            f.write(__doc__.split("\n", 2)[2].strip() + "\n\n")
            f.write(f"- command: `bash bench/slurm.sh build {njobs}` (also run by `make bench`)\n")
            f.write(f"- machine: {machine()}\n")
            f.write("- cluster: scripts/slurm/netns-cluster.sh: slurmctld and three slurmd, each "
                    "slurmd in its own network namespace, all on this one VM\n")
            f.write(f"- date: {now}\n\n")
            f.write("| path | submissions / placements | jobs completed per second | COMPLETED |\n")
            f.write("|---|---|---|---|\n")
            for r in rows:
                f.write(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]} / {njobs} |\n")
            f.write(
                f"\nRatio of completions per second, loomd / plain sbatch: "
                f"{(njobs / t_done_loom) / (njobs / t_done_sb):.2f}. The gap was not split "
                "into its parts by measurement; the likely ones: Slurm starts a queued job inside slurmctld the moment resources "
                "free up, while loomd hands Slurm the next job only after it has seen the "
                "previous one end (one squeue per runner step, at most 100 ms apart, after "
                "Slurm's COMPLETING phase), and then runs sbatch once per placement, one "
                "after another in the runner's thread. Each job here is `true`, so these "
                "fixed costs dominate; with jobs of minutes they vanish. An earlier version "
                "passed the job's variables with `--export=ALL,K=V,...`, which made every job "
                "about 0.7 s slower inside Slurm (1.8 completions/s for loomd on 200 jobs); "
                "they now go in sbatch's environment.\n")
        with open(out_md) as f:
            print(f.read())
    finally:
        if d is not None:
            d.cleanup()
        subprocess.run([script, "down", cdir])
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
