"""bench/vs_slurm (run through bench/vs_slurm.sh): one workload through a
real Slurm, through loomd and through `loom sim`.

The workload (bench/vs_slurm.jsonl, written once by `workload` and
committed, so that every run replays exactly the same jobs) is drawn,
seeded, from the Alibaba GPU trace 2023 (workloads/traces/alibaba-gpu-2023):

- each job's request is a GPU pod of the multi-GPU pod list
  (openb_pod_list_multigpu50: 1, 2, 4 or 8 GPUs; a GPU-sharing pod asks one
  whole GPU, as Slurm's GRES gives whole GPUs); its CPUs and memory are the
  pod's scaled to the bench's nodes (an openb 8-GPU node has 96 CPUs and
  384 GiB, the bench's 8-GPU node 8 CPUs and 16 GiB: CPUs / 12, memory / 24);
- its run time is that of a GPU pod of the default pod list (deletion minus
  scheduled time; the multi-GPU list has no times), two minutes of the
  trace made a second, kept within 5-120 s: a sleep job;
- its time limit overestimates the run time as users do: uniform 1-3x,
  rounded up to whole minutes (Slurm's -t); loom gets the same limit;
- arrivals are a Poisson process whose rate offers 1.2 times the cluster's
  16 GPUs over the arrival span (the trace's 150 days compressed), so that
  a queue forms.

The cluster is scripts/slurm/netns-cluster.sh's: loom1 and loom2 with 4 GPUs,
loom3 with 8, each 8 CPUs and 16 GiB. Slurm runs on it (sched/backfill,
select/cons_tres, GPUs as GRES); loomd (local executor) gets the same nodes
with --node; `loom sim --mode dynamic` the same nodes as a node list.

    python3 bench/vs_slurm.py workload OUT.jsonl [JOBS] [SEED]
    python3 bench/vs_slurm.py run BUILD WORKLOAD OUT.md [JOBS] [--parts sim,loomd,slurm]
                                 [--speed X]   (sim and loomd: arrivals and run times / X)
"""

import datetime
import gzip
import csv
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time

src = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(src, "tests", "integration"))
TRACES = os.path.join(src, "workloads", "traces", "alibaba-gpu-2023")
# name, CPUs, memory MiB, GPUs: as scripts/slurm/netns-cluster.sh
NODES = [("loom1", 8, 16384, 4), ("loom2", 8, 16384, 4), ("loom3", 8, 16384, 8)]
GPUS = sum(n[3] for n in NODES)
LOAD = 1.2          # offered GPU load over the arrival span
TIME_SCALE = 120.0  # two minutes of the trace are a second here
DUR_MIN, DUR_MAX = 5, 120
# Tiresias' published threshold (3200 GPU-seconds) scaled as the run times are.
TIRESIAS = f"tiresias:thresholds={round(3200 / TIME_SCALE)},knob=2"
# loom's rows: label, queue policy, backfill, placement
ROWS = [
    ("FIFO + EASY backfill, firstfit", "fifo", "easy", "firstfit"),
    ("FIFO + EASY backfill, FGD", "fifo", "easy", "fgd"),
    # Slurm's sched/backfill plans a start for every job it tests (up to
    # bf_max_job_test, 500): conservative backfill is the like-for-like row.
    ("FIFO + conservative backfill, firstfit", "fifo", "conservative", "firstfit"),
    ("FIFO + conservative backfill, FGD", "fifo", "conservative", "fgd"),
    ("Tiresias, firstfit", TIRESIAS, "greedy", "firstfit"),
    ("Tiresias, FGD", TIRESIAS, "greedy", "fgd"),
]


def read_csv_gz(name):
    with gzip.open(os.path.join(TRACES, name), "rt", newline="") as f:
        return list(csv.DictReader(f))


def make_workload(out, njobs, seed):
    rng = random.Random(seed)
    shapes = [p for p in read_csv_gz("openb_pod_list_multigpu50.csv.gz") if int(p["num_gpu"]) >= 1]
    runs = [int(p["deletion_time"]) - int(p["scheduled_time"])
            for p in read_csv_gz("openb_pod_list_default.csv.gz")
            if int(p["num_gpu"]) >= 1 and p["deletion_time"] and p["scheduled_time"]]
    jobs = []
    for k in range(njobs):
        p = rng.choice(shapes)
        run = rng.choice(runs)
        dur = min(DUR_MAX, max(DUR_MIN, round(run / TIME_SCALE)))
        limit_min = math.ceil(dur * rng.uniform(1.0, 3.0) / 60.0)
        gpus = int(p["num_gpu"])
        cpus = min(8, max(1, math.ceil(int(p["cpu_milli"]) / 12000)))
        mem = min(16384, max(256, math.ceil(int(p["memory_mib"]) / 24 / 256) * 256))
        jobs.append({"id": f"j{k + 1:03d}", "pod": p["name"], "gpus": gpus, "cpus": cpus,
                     "mem_mib": mem, "duration_s": dur, "time_limit": limit_min * 60})
    work = sum(j["gpus"] * j["duration_s"] for j in jobs)
    span = work / (LOAD * GPUS)  # arrival span that offers LOAD x the GPUs
    rate = njobs / span
    t = 0.0
    for j in jobs:
        j["due_s"] = round(t, 3)
        t += rng.expovariate(rate)
    with open(out, "w") as f:
        for j in jobs:
            f.write(json.dumps({"id": j["id"], "due_s": j["due_s"], "duration_s": j["duration_s"],
                                "time_limit": j["time_limit"],
                                "resources": {"cpus": j["cpus"], "mem_mib": j["mem_mib"],
                                              "gpus": j["gpus"]},
                                "pod": j["pod"]}) + "\n")
    print(f"{out}: {njobs} jobs, seed {seed}, {work} GPU-seconds, arrivals over "
          f"{jobs[-1]['due_s']:.0f} s (target {span:.0f} s)")


def load_workload(path, njobs=None):
    jobs = []
    with open(path) as f:
        for line in f:
            if line.strip():
                jobs.append(json.loads(line))
    return jobs[:njobs] if njobs else jobs


# ---- metrics -------------------------------------------------------------

def metrics(recs):
    """recs: dicts with submit, start, end (seconds, one clock), gpus, busy
    (GPU-held seconds; default end - start), state. The simulator's
    definitions (src/sim/dynamic.c): wait = first start - submit,
    JCT = end - submit, makespan = last end - first submit, allocation =
    GPU-seconds held / (GPUs x makespan), p99 = sorted[floor(0.99 (n - 1))]."""
    done = [r for r in recs if r.get("end") is not None and r.get("start") is not None]
    waits = sorted(r["start"] - r["submit"] for r in done)
    jcts = [r["end"] - r["submit"] for r in done]
    first = min(r["submit"] for r in recs)
    last = max(r["end"] for r in done)
    held = sum(r["gpus"] * r.get("busy", r["end"] - r["start"]) for r in done)
    wide = [r["start"] - r["submit"] for r in done if r["gpus"] >= 4]
    return {"n": len(recs), "completed": sum(1 for r in recs if r.get("state") == "COMPLETED"),
            "mean_wait": sum(waits) / len(waits), "p99_wait": waits[math.floor(0.99 * (len(waits) - 1))],
            "wide_max_wait": max(wide) if wide else None, "mean_jct": sum(jcts) / len(jcts),
            "alloc_pct": 100.0 * held / (GPUS * (last - first)), "makespan": last - first}


# ---- loom sim -------------------------------------------------------------

def write_nodes_csv(path):
    with open(path, "w") as f:
        f.write("sn,cpu_milli,memory_mib,gpu,model\n")
        for name, cpus, mem, gpus in NODES:
            f.write(f"{name},{cpus * 1000},{mem},{gpus},virtual\n")


def run_sim(build, wl_path, tmp, row):
    _label, queue, backfill, placement = row
    nodes = os.path.join(tmp, "nodes.csv")
    write_nodes_csv(nodes)
    cmd = [os.path.join(build, "loom"), "sim", "--nodes", nodes, "--pods", wl_path,
           "--policy", placement, "--mode", "dynamic", "--queue", queue, "--backfill", backfill,
           "--ties", "first", "--json", "--jobs", "1"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    r = json.loads(out)[placement]
    # Per-job first starts (loom sim reports means only) from the same
    # simulation through bench_vs_slurm_sim, for the wide jobs' longest wait.
    helper = [os.path.join(build, "bench_vs_slurm_sim"), nodes, wl_path, queue, backfill, placement]
    starts = {}
    for line in subprocess.run(helper, check=True, capture_output=True, text=True).stdout.splitlines():
        name, arr, st = line.split()
        starts.setdefault(name, float(st) - float(arr))
    gpus = {j["id"]: j["resources"]["gpus"] for j in load_workload(wl_path)}
    wide = [w for n, w in starts.items() if gpus[n] >= 4]
    mean = sum(starts.values()) / len(starts)
    if abs(mean - r["mean_wait_s"]) > 1e-3:
        raise RuntimeError(f"bench_vs_slurm_sim's mean wait {mean} differs from loom sim's {r['mean_wait_s']}")
    return {"n": None, "completed": r["completed"], "mean_wait": r["mean_wait_s"],
            "p99_wait": r["p99_wait_s"], "wide_max_wait": max(wide) if wide else None,
            "mean_jct": r["mean_jct_s"], "alloc_pct": r["mean_util_pct"],
            "makespan": r["makespan_s"]}, " ".join(cmd[1:])


# ---- loomd ----------------------------------------------------------------

def ts(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def job_script(dur):
    """A sleep of `dur` seconds of running time, in slices of at most a
    tenth of a second, each a `read -t` on a pipe nobody writes (a bash
    builtin: no fork per slice), timed with $EPOCHREALTIME. A slice that
    took half a second longer than asked was stopped (Tiresias suspends a
    job with SIGSTOP, and a plain sleep would count the suspension as run
    time): it counts as its asked length, so a suspension costs the job at
    most 0.1 s it did not run (1 s with the whole-second slices of the
    first run); the others count as measured."""
    return ("#!/bin/bash\n"
            f"left={round(dur * 1000000)}\n"
            "exec 3<> <(:)\n"
            "while ((left > 0)); do\n"
            "  s=$((left > 100000 ? 100000 : left))\n"
            "  t0=${EPOCHREALTIME/./}\n"
            "  printf -v f %06d $s\n"
            "  read -t 0.$f -u 3\n"
            "  dt=$((${EPOCHREALTIME/./} - t0))\n"
            "  ((dt > s + 500000)) && dt=$s\n"
            "  left=$((left - dt))\n"
            "done\n")


def run_loomd(build, jobs, tmp, row, result):
    from loomd_client import Loomd
    os.environ["LOOM_BUILD_DIR"] = build
    _label, queue, backfill, placement = row
    args = ["--executor", "local", "--queue-policy", queue, "--backfill", backfill,
            "--placement", placement, "--log-level", "warn"]
    for name, cpus, mem, gpus in NODES:
        args += ["--node", f"name={name},cpus={cpus},memory={mem}MiB,gpus={gpus},gpu_type=virtual"]
    d = Loomd(state_dir=tempfile.mkdtemp(prefix="loomd-", dir=tmp), extra_args=args)
    try:
        d.start()
        c = d.client(unix=True)
        ids = {}
        gpus_of = {j["id"]: j["resources"]["gpus"] for j in jobs}
        samples, suspended, stop = [], set(), threading.Event()

        def sample():
            # job.get's events do not record suspensions: GPUs held are
            # sampled once a second (running, not suspended jobs).
            cs = d.client(unix=True)
            while not stop.wait(1.0):
                held = 0
                for x in cs.list_all(state="RUNNING"):
                    if (x.get("run") or {}).get("suspended"):
                        suspended.add(x["id"])
                    else:
                        held += gpus_of.get(x["name"], 0)
                samples.append((time.time(), held))

        sampler = threading.Thread(target=sample)
        sampler.start()
        t0 = time.monotonic()
        late = 0.0
        for j in jobs:
            wait = t0 + j["due_s"] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            r = j["resources"]
            ids[j["id"]] = c.call("job.submit", {
                "name": j["id"], "script": job_script(j["duration_s"]),
                "time_limit": j["time_limit"],
                "resources": {"cpus": r["cpus"], "memory": f"{r['mem_mib']}MiB", "gpus": r["gpus"]}})["id"]
            late = max(late, time.monotonic() - t0 - j["due_s"])
        result["late"] = late
        while True:
            listed = {x["id"]: x["state"] for x in c.list_all()}
            if all(listed.get(i) not in ("PENDING", "RUNNING", None) for i in ids.values()):
                break
            time.sleep(0.5)
        stop.set()
        sampler.join()
        recs = []
        for j in jobs:
            g = c.get(ids[j["id"]])
            recs.append(loomd_record(g, j["resources"]["gpus"]))
        m = metrics(recs)
        first = min(r["submit"] for r in recs)
        last = max(r["end"] for r in recs)
        inside = [h for t, h in samples if first <= t <= last]
        m["alloc_pct"] = 100.0 * sum(inside) / len(inside) / GPUS if inside else None
        result["metrics"] = m
        result["states"] = sorted({r["state"] for r in recs})
        result["preemptions"] = len(suspended)
    except Exception as e:  # reported in the table's row
        result["error"] = repr(e)
        try:
            result["log"] = d.read_log()[-2000:]
        except Exception:
            pass
    finally:
        d.cleanup()


def loomd_record(g, gpus):
    ev = g["events"]
    submit = ts(ev[0]["time"])
    start = end = None
    busy, run_since, suspends = 0.0, None, 0
    for e in ev:
        t = ts(e["time"])
        frm, to, why = e.get("from"), e.get("to"), e.get("reason") or ""
        if to == "RUNNING" and frm != "RUNNING":
            start = t if start is None else start
            run_since = t
        elif to == "RUNNING" and frm == "RUNNING":  # suspended ("preempted by job N"), resumed
            if why == "resumed" and run_since is None:
                run_since = t
            elif why and why != "resumed" and run_since is not None:
                suspends += 1
                busy += t - run_since
                run_since = None
        elif to not in ("PENDING", "RUNNING"):
            end = t
            if run_since is not None:
                busy += t - run_since
                run_since = None
    return {"submit": submit, "start": start, "end": end, "gpus": gpus, "busy": busy,
            "state": g["state"], "suspends": suspends}


# ---- Slurm ----------------------------------------------------------------

SLURM_SCHED = "batch_sched_delay=0,sched_min_interval=0,bf_interval=1"


def run_slurm(jobs, tmp):
    script = os.path.join(src, "scripts", "slurm", "netns-cluster.sh")
    cdir = os.path.join(tmp, "cluster")
    env = dict(os.environ, LOOM_SLURM_SCHED_PARAMS=SLURM_SCHED)
    up = subprocess.run([script, "up", cdir], capture_output=True, text=True, env=env)
    if up.returncode != 0:
        raise RuntimeError("cluster did not start: " + up.stderr)
    try:
        conf = open(os.path.join(cdir, "slurm.conf")).read()

        def slurm(*args):
            r = subprocess.run([script, "exec", cdir] + list(args), capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{args}: {r.stderr}")
            return r.stdout

        shown = slurm("scontrol", "show", "config")
        ids = {}
        t0 = time.monotonic()
        late = 0.0
        for j in jobs:
            wait = t0 + j["due_s"] - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            late = max(late, -wait)
            r = j["resources"]
            out = slurm("sbatch", "--parsable", "--no-requeue", f"--job-name={j['id']}",
                        f"--time={j['time_limit'] // 60}", f"--gres=gpu:{r['gpus']}",
                        f"--cpus-per-task={r['cpus']}", f"--mem={r['mem_mib']}M",
                        "--output=/dev/null", "--wrap", f"sleep {j['duration_s']}")
            ids[out.strip().split(";")[0]] = j
        log = os.path.join(cdir, "log", "jobcomp.log")
        while True:
            done = parse_jobcomp(log)
            if all(i in done for i in ids):
                break
            time.sleep(1)
        recs = []
        for i, j in ids.items():
            f = done[i]
            recs.append({"submit": f["SubmitTime"], "start": f["StartTime"], "end": f["EndTime"],
                         "gpus": j["resources"]["gpus"], "state": f["JobState"]})
        keys = ("SchedulerType", "SchedulerParameters", "SelectType", "SelectTypeParameters",
                "PriorityType", "GresTypes")
        sched_lines = [line for line in conf.splitlines()
                       if line.split("=", 1)[0] in keys or line.startswith(("NodeName", "PartitionName"))]
        sched_lines += ["# scontrol show config: " + " ".join(line.split()) for line in shown.splitlines()
                        if line.split(" ", 1)[0] in ("SchedulerType", "PriorityType", "bf_interval")]
        return metrics(recs), sorted({r["state"] for r in recs}), sched_lines, late
    finally:
        subprocess.run([script, "down", cdir])


def parse_jobcomp(path):
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            kv = dict(x.split("=", 1) for x in line.split() if "=" in x)
            if "JobId" not in kv:
                continue
            rec = {"JobState": kv.get("JobState")}
            for k in ("SubmitTime", "StartTime", "EndTime"):
                rec[k] = datetime.datetime.strptime(kv[k], "%Y-%m-%dT%H:%M:%S").timestamp()
            out[kv["JobId"]] = rec
    return out


# ---- report ---------------------------------------------------------------

def fmt(m):
    def f(x, p=1):
        return "—" if x is None else f"{x:.{p}f}"
    return (f"{f(m['mean_wait'])} | {f(m['p99_wait'])} | {f(m['wide_max_wait'])} | "
            f"{f(m['mean_jct'])} | {f(m['alloc_pct'])} | {f(m['makespan'])}")


def machine():
    model = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"{model}, {os.cpu_count()} CPUs online, Linux {platform.release()}"


def slurm_part(jobs, tmp, out):
    import fcntl
    try:
        print("slurm: waiting for /tmp/loom-slurm.lock", flush=True)
        with open("/tmp/loom-slurm.lock", "a") as lk:
            t_lock = time.monotonic()
            fcntl.flock(lk, fcntl.LOCK_EX)
            out["lock_s"] = time.monotonic() - t_lock
            out["result"] = run_slurm(jobs, tmp)
    except Exception as e:
        out["error"] = repr(e)


def main_run(argv):
    build, wl_path, out_md = os.path.abspath(argv[0]), os.path.abspath(argv[1]), argv[2]
    rest = argv[3:]
    parts = {"sim", "loomd", "slurm"}
    if "--parts" in rest:
        k = rest.index("--parts")
        parts = set(rest[k + 1].split(","))
        rest = rest[:k] + rest[k + 2:]
    speed = 1.0
    if "--speed" in rest:  # the smoke test's: arrivals and run times / X (not for Slurm)
        k = rest.index("--speed")
        speed = float(rest[k + 1])
        rest = rest[:k] + rest[k + 2:]
        if speed != 1.0 and "slurm" in parts:
            raise SystemExit("vs_slurm: --speed is for the sim and loomd parts only")
    njobs = int(rest[0]) if rest else None
    jobs = load_workload(wl_path, njobs)
    for j in jobs:
        j["due_s"] = round(j["due_s"] / speed, 3)
        j["duration_s"] = round(j["duration_s"] / speed, 3)
    tmp = tempfile.mkdtemp(prefix="loom-vs-slurm-")
    wl = os.path.join(tmp, "workload.jsonl")
    with open(wl, "w") as f:
        for j in jobs:
            f.write(json.dumps(j) + "\n")
    commit = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    load0 = os.getloadavg()
    rows, notes = [], []
    try:
        if "sim" in parts:
            for row in ROWS:
                m, cmd = run_sim(build, wl, tmp, row)
                rows.append(("loom sim", row[0], m, ""))
                print("sim", row[0], fmt(m), flush=True)
            notes.append(f"loom sim: `loom {cmd}` (one per row)")
        slurm_out = {}
        slurm_thread = None
        if "slurm" in parts:
            slurm_thread = threading.Thread(target=slurm_part, args=(jobs, tmp, slurm_out))
            slurm_thread.start()
        if "loomd" in parts:
            results = [{} for _ in ROWS]
            threads = [threading.Thread(target=run_loomd, args=(build, jobs, tmp, row, res))
                       for row, res in zip(ROWS, results)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            notes.append(f"loomd: the {len(ROWS)} loomd ran at once, {time.monotonic() - t0:.0f} s; "
                         f"the latest job.submit returned {max(r.get('late', 0) for r in results):.2f} s "
                         "after its arrival time")
            for row, res in zip(ROWS, results):
                if "error" in res:
                    print("loomd", row[0], "ERROR", res["error"], res.get("log", ""), flush=True)
                    rows.append(("loomd", row[0], None, res["error"]))
                    continue
                extra = f"states {','.join(res['states'])}; {res['preemptions']} jobs seen suspended"
                rows.append(("loomd", row[0], res["metrics"], extra))
                print("loomd", row[0], fmt(res["metrics"]), extra, flush=True)
        if slurm_thread:
            slurm_thread.join()
            if "error" in slurm_out:
                raise RuntimeError("slurm part: " + slurm_out["error"])
            m, states, sched_lines, late = slurm_out["result"]
            rows.insert(0, ("Slurm 22.05 (real)", "FIFO + sched/backfill, cons_tres", m,
                            f"states {','.join(states)}"))
            notes.append(f"Slurm ran at the same time as the loomd (lock after {slurm_out['lock_s']:.0f} s)")
            notes.append("slurm.conf (scheduling lines):\n\n    " + "\n    ".join(sched_lines))
            notes.append(f"Slurm submissions: the latest sbatch ran {late:.2f} s after its arrival time")
            print("slurm", fmt(m), states, flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    load1 = os.getloadavg()
    report = {"started": started, "commit": commit, "machine": machine(), "load_start": load0[0],
              "load_end": load1[0], "jobs": len(jobs), "rows": rows, "notes": notes}
    report["speed"] = speed
    write_md(out_md, report, argv)
    with open(out_md) as f:
        print(f.read())


def pct(a, b):
    return 100.0 * (a - b) / b


def goals(rows):
    """The issue's three goals, judged from the rows."""
    slurm = [m for sysname, _l, m, _x in rows if sysname.startswith("Slurm") and m]
    loomd = {label: m for sysname, label, m, _x in rows if sysname == "loomd" and m}
    sim = {label: m for sysname, label, m, _x in rows if sysname == "loom sim" and m}
    out = []
    if slurm and loomd:
        s = slurm[0]
        for label, m in loomd.items():
            ok = m["wide_max_wait"] is None or s["wide_max_wait"] is None or \
                m["wide_max_wait"] <= s["wide_max_wait"]
            out.append(f"- longest wait of a job asking 4+ GPUs, loomd {label}: "
                       f"{m['wide_max_wait']:.1f} s against Slurm's {s['wide_max_wait']:.1f} s: "
                       f"{'met' if ok else 'NOT met'} (no worse than Slurm's)")
        best = min(loomd, key=lambda k: loomd[k]["mean_jct"])
        red = -pct(loomd[best]["mean_jct"], s["mean_jct"])
        out.append(f"- mean JCT, loomd's best policy ({best}): {loomd[best]['mean_jct']:.1f} s against "
                   f"Slurm's {s['mean_jct']:.1f} s, {red:.1f}% below: "
                   f"{'met' if red >= 20 else 'NOT met'} (at least 20% below)")
    for label in loomd:
        if label in sim:
            d = pct(sim[label]["mean_jct"], loomd[label]["mean_jct"])
            out.append(f"- mean JCT, loom sim against loomd, {label}: {sim[label]['mean_jct']:.1f} s "
                       f"against {loomd[label]['mean_jct']:.1f} s, {d:+.1f}%: "
                       f"{'met' if abs(d) <= 5 else 'NOT met'} (within 5%)")
    return out


def write_md(out_md, rep, argv):
    kept = ""  # what is written by hand from "## Notes" on survives a new run
    if os.path.exists(out_md):
        old = open(out_md).read()
        if "## Notes" in old:
            kept = "\n" + old[old.index("## Notes"):]
    doc = __doc__.split("\n", 2)[2].split("\n    python3")[0].strip()
    with open(out_md, "w") as f:
        f.write("# bench/vs_slurm — a real Slurm, loomd and loom sim on the same jobs\n\n")
        f.write(doc + "\n\n")
        f.write(f"- command: `bash bench/vs_slurm.sh build{' ' + str(rep['jobs']) if rep['jobs'] != 200 else ''}` "
                f"(`python3 bench/vs_slurm.py run {' '.join(os.path.relpath(a, src) if os.path.isabs(a) else a for a in argv)}`)\n")
        f.write(f"- workload: bench/vs_slurm.jsonl, {rep['jobs']} jobs "
                "(`python3 bench/vs_slurm.py workload bench/vs_slurm.jsonl 200 32` wrote it)\n")
        f.write(f"- machine: {rep['machine']}; load average {rep['load_start']:.2f} at the start, "
                f"{rep['load_end']:.2f} at the end (a machine shared with other builds and tests)\n")
        f.write(f"- date: {rep['started']}, commit {rep['commit']}\n\n")
        f.write("| system | policy | mean wait s | p99 wait s | longest wait, 4+ GPUs, s | mean JCT s "
                "| GPU allocation % | makespan s | |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
        for sysname, label, m, extra in rep["rows"]:
            if m is None:
                f.write(f"| {sysname} | {label} | failed: {extra} | | | | | | |\n")
            else:
                f.write(f"| {sysname} | {label} | {fmt(m)} | {extra} |\n")
        f.write("\nWait: first start minus submission; JCT: end minus submission; GPU allocation: "
                "GPU-seconds held (a suspended job holds none) over 16 GPUs x the makespan; makespan: "
                "last end minus first submission; p99: the sorted waits' element floor(0.99 (n-1)) "
                "(the simulator's definitions, src/sim/dynamic.c). Slurm's times are its job "
                "completion log's (jobcomp/filetxt, whole seconds), loomd's its job events "
                "(job.get, milliseconds), loom sim's virtual.\n\n")
        f.write("## Goals (issue 32), judged from this run\n\n" + "\n".join(goals(rep["rows"])) + "\n\n")
        f.write("## This run\n\n" + "\n".join(f"- {n}" for n in rep["notes"]) + "\n")
        f.write(kept)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "workload":
        make_workload(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 200,
                      int(sys.argv[4]) if len(sys.argv) > 4 else 32)
    elif len(sys.argv) >= 5 and sys.argv[1] == "run":
        main_run(sys.argv[2:])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
