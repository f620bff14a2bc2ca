"""bench/vs_slurm's smoke run, without Slurm: the first 20 jobs of the
committed workload (bench/vs_slurm.jsonl), arrivals and run times divided
by 4, through `loom sim` and through one loomd per row of the benchmark
(FIFO + EASY backfill, FIFO + conservative backfill and Tiresias, each
with firstfit and FGD). Checks what the benchmark needs, not its
figures: every loomd job COMPLETED, the simulator's per-job helper
(bench_vs_slurm_sim) agrees with loom sim's mean wait (the script raises
otherwise), and the report has its rows (two per row of bench/vs_slurm.py's ROWS) and
its goals section."""

import importlib.util
import os
import subprocess
import sys
import tempfile

src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
build = os.environ.get("LOOM_BUILD_DIR", os.path.join(src, "build"))


def main():
    out = os.path.join(tempfile.mkdtemp(prefix="loom-vs-smoke-"), "vs.md")
    r = subprocess.run([sys.executable, os.path.join(src, "bench", "vs_slurm.py"), "run", build,
                        os.path.join(src, "bench", "vs_slurm.jsonl"), out, "20", "--parts",
                        "sim,loomd", "--speed", "4"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    md = open(out).read()
    rows = [line for line in md.splitlines() if line.startswith(("| loomd |", "| loom sim |"))]
    spec = importlib.util.spec_from_file_location("vs_slurm", os.path.join(src, "bench", "vs_slurm.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    assert len(rows) == 2 * len(bench.ROWS), md
    for line in rows:
        assert "failed" not in line, line
        if line.startswith("| loomd |"):
            assert "states COMPLETED;" in line, line
    assert "## Goals (issue 32)" in md and "loom sim against loomd" in md, md
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
