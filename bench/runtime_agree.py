"""bench/runtime_agree: a larger live/simulated agreement run than the test
(tests/integration/test_runtime_agree.py): random traces of sleep jobs
replayed live through loomd and through the simulator (sim_starts), for
deterministic queue and placement policies; the report says how many starts
agree in order and placement.

A random trace is built job by job, each job drawn again until no
scheduling decision of the simulation so far lies within MARGIN seconds of
another event (an arrival or an end): loomd sees time through a step
latency and a poll tick, and two events closer than that may reach it in
one step, where the simulator takes two.

    python3 bench/runtime_agree.py BUILD_DIR OUT.md [JOBS] [SEED]
"""

import datetime
import os
import platform
import random
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "tests", "integration"))
import test_runtime_agree as agree  # noqa: E402

MARGIN = 0.4  # seconds (compressed)
CASES = [("fifo", "firstfit"), ("sjf", "bestfit"), ("priority", "dotprod")]


def draw_job(rng, k, due):
    return (f"j{k}", round(due * agree.COMPRESS), round(rng.uniform(1.5, 6.0) * agree.COMPRESS),
            rng.choice([1, 1, 2, 2, 4, 8]), rng.randrange(10))


def make_trace(rng, njobs, tmp, queue, placement, tries=200):
    """Job by job: each new job is drawn again (up to `tries` times) until the
    trace so far stays separated. Returns (trace, draws) or (None, draws)."""
    trace, due, draws = [], 0.0, 0
    for k in range(njobs):
        for _ in range(tries):
            draws += 1
            job = draw_job(rng, k, due + rng.uniform(0.3, 3.0))
            agree.TRACE = trace + [job]
            nodes, path = agree.write_inputs(tmp)
            if separated(agree.TRACE, nodes, path, queue, placement):
                trace.append(job)
                due = job[1] / agree.COMPRESS
                break
        else:
            return None, draws
    agree.TRACE = trace
    return trace, draws


def separated(trace, nodes, path, queue, placement):
    """True when every decision of the simulation is MARGIN away from other events."""
    exe = os.path.join(agree.build_dir(), "sim_starts")
    out = subprocess.run([exe, nodes, path, queue, placement, str(agree.COMPRESS)], check=True,
                         capture_output=True, text=True).stdout
    info = {name: (due / agree.COMPRESS, dur / agree.COMPRESS) for name, due, dur, _g, _p in trace}
    starts = {line.split()[0]: float(line.split()[1]) for line in out.splitlines()}
    if len(starts) != len(trace):
        return False
    events = [d for d, _ in info.values()] + [starts[n] + info[n][1] for n in starts]
    decisions = sorted(set(starts.values()))
    for t in decisions:  # its own trigger, and nothing else, within MARGIN
        if sum(1 for e in events if abs(e - t) < MARGIN) > 1:
            return False
    return True


def main():
    build, out_md = sys.argv[1], sys.argv[2]
    njobs = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    seed = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    os.environ["LOOM_BUILD_DIR"] = os.path.abspath(build)
    if not os.path.exists(os.path.join(build, "sim_starts")):
        print("bench/runtime_agree: skipped: no sim_starts in", build, "(built with the tests)")
        return 0
    agree.NODES = [("n0", 16, 2), ("n1", 16, 4), ("n2", 16, 8)]
    rows = []
    for queue, placement in CASES:
        rng = random.Random(seed)
        tmp = tempfile.mkdtemp(prefix="loom-agree-bench-")
        trace, attempt = make_trace(rng, njobs, tmp, queue, placement)
        if trace is None:
            rows.append((queue, placement, njobs, None, None, attempt, 0))
            continue
        nodes, path = agree.write_inputs(tmp)
        sim = agree.simulated(nodes, path, queue, placement)
        exe = os.path.join(agree.build_dir(), "sim_starts")
        out = subprocess.run([exe, nodes, path, queue, placement, str(agree.COMPRESS)],
                             check=True, capture_output=True, text=True).stdout
        due = {name: d / agree.COMPRESS for name, d, _u, _g, _p in trace}
        waited = sum(1 for line in out.splitlines()
                     if float(line.split()[1]) > due[line.split()[0]] + 1e-9)
        live = agree.live(queue, placement)
        same_order = [s[0] for s in sim] == [g[0] for g in live]
        placed = sum(1 for s, g in zip(sorted(sim), sorted(live)) if s == g)
        rows.append((queue, placement, njobs, same_order, placed, attempt, waited))
        print(f"{queue}/{placement}: {njobs} jobs, order {'same' if same_order else 'DIFFERS'}, "
              f"{placed}/{njobs} placements the same ({attempt} draws)", flush=True)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    kept = ""  # notes written by hand below "## Notes" survive a new run
    if os.path.exists(out_md):
        old = open(out_md).read()
        if "## Notes" in old:
            kept = "\n" + old[old.index("## Notes"):]
    with open(out_md, "w") as f:
        f.write("# bench/runtime_agree — loomd live against the simulator, larger traces\n\n"
                f"Command: `python3 bench/runtime_agree.py {build} {out_md} {njobs} {seed}` "
                "(also `make bench`)  \n"
                f"Date: {date}  \nMachine: {platform.processor() or platform.machine()}, "
                f"{os.cpu_count()} CPUs, {platform.system()} {platform.release()}; shared with "
                "other developers' builds and tests while this ran.\n\n"
                f"Random traces of {njobs} sleep jobs (1-8 GPUs, 1.5-6 s after 60x compression, "
                "arrivals 0.3-3 s apart) on 3 nodes of 2, 4 and 8 virtual GPUs, built job by "
                "job: a job is drawn again until every scheduling decision of the simulation so "
                f"far is {MARGIN} s away from any other arrival or end (column 'draws': jobs "
                "drawn in all). The same trace is replayed live through loomd (local executor) and "
                "through the simulator (`tests/integration/sim_starts.c`, ties to the lowest "
                "node as loomd breaks them).\n\n"
                "| queue | placement | jobs | waited in the queue (sim) | start order | same placement "
                "| draws |\n|---|---|---:|---:|---|---:|---:|\n")
        for q, p, n, same, placed, attempt, waited in rows:
            if same is None:
                f.write(f"| {q} | {p} | {n} | | no separated trace ({attempt} draws) | | |\n")
            else:
                f.write(f"| {q} | {p} | {n} | {waited} | {'same' if same else 'differs'} | {placed}/{n} "
                        f"| {attempt} |\n")
        f.write(kept)
    print("wrote", out_md)
    return 0 if all(r[3] in (True, None) and r[4] in (r[2], None) for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
