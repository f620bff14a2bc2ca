"""The workload study's generator (docs/study/make_study.py) on a tiny
committed sample of run records (tests/integration/study_sample.jsonl),
built by hand so that every metric checked here has a known answer:

- resnet18 training at batch 8: 6 steps, the first 0.5 s (warm-up), then
  0.2 s wall and 0.1 s CPU each; 8 GFLOP and 0.4 GB per step on a device of
  100 GFLOP/s and 20 GB/s: intensity 20, 80 GFLOP per CPU second, 80% of
  the roof, compute-bound; 400 MiB resident: 50 MiB per GFLOP;
- a repeat at 0.22 s: between-run CV of the mean 0.02/sqrt(2)/0.21 = 6.7%;
- two threads at 0.1 s wall, 0.12 s CPU: speed-up 2.00, CPU inflation 1.20;
- batches 4, 8, 16 at 0.05, 0.1, 0.2 s of CPU: constant throughput, α 0.00;
- bf16 at 0.05 s of CPU: speed-up 2.00; input 32 at a quarter of the time
  and FLOPs of input 64: both elasticities 2.00;
- mobilenet_v2 in bf16 unsupported: its reason is shown.

Also: every figure is well-formed SVG, the output is deterministic, bad
records are refused with the file, the line and what was expected; and,
where torch and onnx are installed, the campaign's smoke plan produces
records the generator accepts (a real `loom prof` run end to end)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SRC = os.environ.get("LOOM_SOURCE_DIR", ".")
BUILD = os.environ.get("LOOM_BUILD_DIR", "build")
MAKE = os.path.join(SRC, "docs", "study", "make_study.py")
CAMPAIGN = os.path.join(SRC, "docs", "study", "campaign.py")
SAMPLE = os.path.join(SRC, "tests", "integration", "study_sample.jsonl")
PY = "/usr/bin/python3"
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def make(records, out):
    return subprocess.run([PY, MAKE, records, "--out", out], capture_output=True, text=True,
                          timeout=300)


def rows(md, section):
    """The table rows (lists of cells) of the section whose heading starts
    with `section`."""
    part = md.split("\n## " + section, 1)
    if len(part) < 2:
        return []
    body = part[1].split("\n## ", 1)[0]
    return [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in body.splitlines()
            if line.startswith("|") and not line.startswith("|---")]


def find(table, *first):
    return next((r for r in table if r[:len(first)] == list(first)), None)


def row(table, *first):
    """The first row starting with `first`, as {column heading: cell}."""
    r = find(table[1:], *first) if table else None
    return dict(zip(table[0], r)) if r else {}


def main():
    tmp = tempfile.mkdtemp(prefix="loom-test-study-")
    try:
        run_tests(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


def run_tests(tmp):
    out = os.path.join(tmp, "a")
    p = make(SAMPLE, out)
    check(p.returncode == 0, f"make_study runs on the sample ({p.stderr[-500:]})")
    md = open(os.path.join(out, "results.md")).read()

    t1 = rows(md, "1. Model family")
    head = t1[0] if t1 else []
    r = find(t1, "resnet18", "cnn", "train")
    col = lambda name: r[head.index(name)] if r and name in head else None  # noqa: E731
    check(r is not None, "table 1 has the resnet18 training row")
    check(col("T") == "200.0" and col("Tc") == "100.0" and col("W") == "1" and
          col("CV") == "0.0%", f"steady time after a 1-step warm-up: {r}")
    check(col("I FLOP/B") == "20.0" and col("Pc GFLOP/s") == "80.0" and
          col("φ (of 1-core roof)") == "80.0%" and col("bound") == "compute" and
          col("MCR MiB/GFLOP") == "50", f"roofline and memory-to-compute: {r}")
    check(any("cuda (H200)" in x and "not measured: no GPU lent" in x[-1] for x in t1),
          "the GPU row says it was not measured")
    rep = find(rows(md, "2. Run-to-run"), "resnet18")
    check(rep is not None and rep[3] == "6.7%" and rep[5] == "0.0%",
          f"between-run CV: {rep}")
    batch = rows(md, "3. Batch")
    summary = [batch[i:] for i, x in enumerate(batch) if "α" in x]
    a = row(summary[0], "resnet18") if summary else {}
    check(a.get("α") == "0.00" and a.get("α_q") == "0.00" and a.get("t₀ / Tc(8)") == "0.0%",
          f"batch scaling exponent and fixed cost: {a}")
    b16 = row(batch, "resnet18", "16")
    check(b16.get("Tc") == "200.0" and b16.get("items/CPU-s") == "80.0", f"batch 16 row: {b16}")
    prec = rows(md, "4. Precision")
    pr = row(prec, "resnet18")
    check(pr.get("speed-up (Tc fp32 / Tc bf16)") == "2.00" and pr.get("speed-up on Tq") == "2.00",
          f"bf16 speed-up: {pr}")
    mob = row(prec, "mobilenet_v2")
    check("not supported" in mob.get("note", ""), f"unsupported run explained: {mob}")
    inp = rows(md, "5. Input size")
    el = [inp[i:] for i, x in enumerate(inp) if "FLOP elasticity" in x]
    e = row(el[0], "resnet18") if el else {}
    check(e.get("time elasticity (Tc)") == "2.00" and e.get("time elasticity (Tq)") == "2.00" and
          e.get("FLOP elasticity") == "2.00", f"time and FLOP elasticity: {e}")
    th = row(rows(md, "6. Threads"), "resnet18")
    check(th.get("speed-up S") == "2.00" and th.get("efficiency S/2") == "100.0%" and
          th.get("CPU inflation Tc2/Tc1") == "1.20", f"thread speed-up, efficiency: {th}")
    check("## Findings" in md and "resnet18 2.00 / 2.00" in md, "findings are computed")

    figs = os.path.join(out, "figures")
    names = sorted(os.listdir(figs))
    check(names == ["batch_scaling.svg", "input_size.svg", "precision.svg", "roofline.svg",
                    "stability.svg", "step_series.svg", "threads.svg"], f"figures: {names}")
    for n in names:
        try:
            root = ET.parse(os.path.join(figs, n)).getroot()
            check(root.tag == "{http://www.w3.org/2000/svg}svg", f"{n}: an SVG document")
        except ET.ParseError as e:
            check(False, f"{n} is well-formed XML ({e})")
    roof = ET.parse(os.path.join(figs, "roofline.svg")).getroot()
    dots = roof.findall(".//{http://www.w3.org/2000/svg}circle")
    check(len(dots) == 1, f"one model with counts, one roofline point ({len(dots)})")

    # Deterministic: the same records give the same bytes.
    out2 = os.path.join(tmp, "b")
    make(SAMPLE, out2)
    same = all(open(os.path.join(out, "figures", n), "rb").read() ==
               open(os.path.join(out2, "figures", n), "rb").read() for n in names)
    check(same and open(os.path.join(out2, "results.md")).read() == md, "deterministic output")

    # Bad records: named by file and line, with what was expected.
    lines = open(SAMPLE).read().splitlines()
    bad = os.path.join(tmp, "bad.jsonl")
    cases = [
        ("not json {", "bad.jsonl:3: not a JSON object"),
        (json.dumps({k: v for k, v in json.loads(lines[0]).items() if k != "model"}),
         "bad.jsonl:3: missing member 'model'"),
        (json.dumps(dict(json.loads(lines[0]), batch="8")),
         "bad.jsonl:3: member 'batch': expected int, found str"),
        (json.dumps(dict(json.loads(lines[0]), step_cpu_s=[0.1])),
         "bad.jsonl:3: step_cpu_s has 1 entries, step_wall_s 6"),
    ]
    for text, msg in cases:
        with open(bad, "w") as f:
            f.write("\n".join(lines[:2] + [text]) + "\n")
        p = make(bad, os.path.join(tmp, "c"))
        check(p.returncode == 1 and msg in p.stderr, f"refused: {msg!r} ({p.stderr.strip()})")
    p = make(os.path.join(tmp, "none.jsonl"), os.path.join(tmp, "c"))
    check(p.returncode == 1 and "cannot read" in p.stderr, "a missing records file is named")

    # End to end: the campaign's smoke plan under loom prof, then the study.
    try:
        import torch  # noqa: F401
        import onnx  # noqa: F401
    except ImportError as e:
        print(f"python3-torch or python3-onnx missing ({e}): campaign smoke run skipped")
        return
    recs = os.path.join(tmp, "smoke.jsonl")
    p = subprocess.run([PY, CAMPAIGN, BUILD, "--plan", "smoke", "--records", recs],
                       capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"campaign smoke plan runs ({p.stdout[-300:]}{p.stderr[-500:]})")
    got = [json.loads(l) for l in open(recs)] if os.path.exists(recs) else []
    check(len(got) == 2 and all(r["exit"] == {"code": 0} and len(r["step_wall_s"]) == 6 and
                                None not in r["step_cpu_s"] for r in got),
          f"two dlrm records with 6 steps and their CPU times ({[r.get('id') for r in got]})")
    check(all(r["roofline"]["counts"] and r["estimate"]["flops"] ==
              r["roofline"]["flops_per_step"] for r in got),
          "the estimator's counts reach the records through loom prof --estimate")
    p = make(recs, os.path.join(tmp, "smoke"))
    check(p.returncode == 0 and find(rows(open(os.path.join(tmp, "smoke", "results.md")).read(),
                                          "6. Threads"), "dlrm") is not None,
          f"the study accepts the campaign's records ({p.stderr[-300:]})")


if __name__ == "__main__":
    sys.exit(main())
