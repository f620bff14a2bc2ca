#!/usr/bin/env bash
# bench/prof_accuracy.sh: loom prof on every model of the zoo (CPU, training
# and inference): how well the sampled CPU time matches the ground truth,
# written to docs/bench/prof_accuracy.md:
#   - the run's total against the kernel's account (wait4 rusage);
#   - each step's CPU time, read off the 100 Hz series at the step's
#     boundaries, against the CPU time the workload measured itself over
#     that step (time.process_time_ns in run.py: the kernel's clock of the
#     process, all threads), i.e. the accuracy of utilization over
#     intervals as short as one step;
# with step time, warm-up, throughput, memory and the profiler's own CPU;
#   - on the synthetic workload of the tests (prof_synth: steps of B ms of
#     CPU then I ms of sleep), each step's busy fraction against the truth.
#
#   bash bench/prof_accuracy.sh BUILD_DIR [BASELINE_BUILD_DIR]
#
# With a baseline build (another loom, e.g. an older commit), every run is
# also made under it, the two taking turns model by model, and the per-step
# error of both is shown side by side. PROF_ACC_STEPS (default 15) steps per
# run; --threads 1, batch 8, 100 Hz. PROF_ACC_BASE_LABEL says in the report
# what the baseline is. PROF_ACC_OUT (default
# docs/bench/prof_accuracy.md) names the report. Needs python3-torch;
# without it, says so and writes nothing.
set -uo pipefail
build=${1:-build}
base=${2:-}
steps=${PROF_ACC_STEPS:-15}
here=$(cd "$(dirname "$0")/.." && pwd)
out=${PROF_ACC_OUT:-$here/docs/bench/prof_accuracy.md}
if ! /usr/bin/python3 -c 'import torch, torchvision' 2>/dev/null; then
  echo "prof_accuracy: python3-torch/torchvision not installed; nothing measured"
  exit 0
fi
dir=$(mktemp -d /tmp/loom-prof-acc-XXXXXX)
mkdir -p "$dir/new" "$dir/base"
trap 'rm -rf "$dir"' EXIT
cut -d' ' -f1-3 /proc/loadavg >"$dir/load0"
date -u +%Y-%m-%dT%H:%M:%SZ >"$dir/start"
run() { # BUILD LABEL MODEL MODE
  "$1/loom" prof --quiet --interval 10ms --out "$dir/$2/$3-$4" -- /usr/bin/python3 \
    "$here/workloads/models/run.py" --model "$3" --mode "$4" --batch 8 --steps "$steps" \
    --threads 1 2>"$dir/$2-$3-$4.err" || { echo "prof_accuracy: $2 $3 $4 failed"; tail -3 "$dir/$2-$3-$4.err"; exit 1; }
}
for m in resnet18 resnet50 vgg16 mobilenet_v2 vit bert gpt2 lstm dlrm; do
  for mode in train infer; do
    run "$build" new "$m" "$mode"
    [ -n "$base" ] && run "$base" base "$m" "$mode"
  done
done
# The synthetic workload (tests/integration/prof_synth.c): steps that burn
# exactly B ms of CPU and sleep I ms, 30 steps, 3 runs per pattern and build.
synth=$build/prof_synth
if [ -x "$synth" ]; then
  for rep in 1 2 3; do
    for spec in "40 40" "15 15" "25 5" "5 25"; do
      set -- $spec
      for label in new base; do
        b=$build
        if [ "$label" = base ]; then
          [ -n "$base" ] || continue
          b=$base
        fi
        o="$dir/synth-$label/b$1-i$2-r$rep"
        mkdir -p "$(dirname "$o")"
        "$b/loom" prof --quiet --interval 10ms --out "$o" -- "$synth" --steps 30 --busy-ms "$1" \
          --idle-ms "$2" --truth "$o.truth.json" >/dev/null 2>"$o.err" ||
          { echo "prof_accuracy: synthetic $label $spec failed"; tail -3 "$o.err"; exit 1; }
      done
    done
  done
fi
cut -d' ' -f1-3 /proc/loadavg >"$dir/load1"
/usr/bin/python3 - "$dir" "$out" "$build" "$steps" "$base" <<'PY'
import glob, json, os, platform, statistics, sys
d, out, build, steps, base = sys.argv[1:6]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
load0, load1, start = (open(os.path.join(d, f)).read().strip() for f in ("load0", "load1", "start"))

def step_errors(r):
    """Per step: CPU read off the sampled series minus the workload's own (seconds)."""
    e, truth = [], []
    for s in r["steps"]:
        if s.get("cpu_ns") is None or s.get("cpu_cores") is None:
            continue
        e.append(s["cpu_cores"] * s["duration_s"] - s["cpu_ns"] / 1e9)
        truth.append(s["cpu_ns"] / 1e9)
    return e, truth

def step_cols(r):
    e, truth = step_errors(r)
    if not e:
        return "–", "–", None
    mae = statistics.fmean(abs(x) for x in e)
    rel = mae / statistics.fmean(truth)
    return f"{1e3 * mae:.2f} ({100 * rel:.1f}%)", f"{1e3 * max(abs(x) for x in e):.1f}", rel

rows, errs, rel_new, rel_base = [], [], [], []
for f in sorted(glob.glob(os.path.join(d, "new", "*", "run.json"))):
    r = json.load(open(f)); s = r["summary"]; g = r["ground_truth"]; m = r["meta"]
    truth = g["rusage_user_s"] + g["rusage_sys_s"]
    errs.append(abs(g["cpu_relative_error"]))
    mae, mx, rel = step_cols(r)
    rel_new.append(rel)
    cols = [mae, mx]
    if base:
        bf = os.path.join(d, "base", os.path.basename(os.path.dirname(f)), "run.json")
        rb = json.load(open(bf))
        bmae, bmx, brel = step_cols(rb)
        rel_base.append(brel)
        cols += [bmae, bmx, f"{100 * rb['ground_truth']['cpu_relative_error']:+.2f}%"]
    rows.append(f"| {m['model']} | {m['mode']} | {s['steps']} | {s['warmup_steps']} | {1e3*s['step_time_s']['p50']:.1f} "
                f"| {1e3*s['step_time_s']['p95']:.1f} | {s['items_per_s']:.1f} | {s['cpu_cores_steady']:.2f} "
                f"| {s['sampled_cpu_s']:.3f} / {truth:.3f} | {100*g['cpu_relative_error']:+.2f}% | "
                + " | ".join(cols) +
                f" | {s['rss_peak_bytes']/2**20:.0f} / {g['rusage_maxrss_bytes']/2**20:.0f} "
                f"| {100*r['sampler']['profiler_cpu_share']:.2f}% | {r['start'][:19]} |")

def summary(rels):
    rels = [x for x in rels if x is not None]
    return f"median {100 * statistics.median(rels):.1f}%, max {100 * max(rels):.1f}%" if rels else "–"

head = ["model", "mode", "steps", "warm-up", "p50 step ms", "p95 step ms", "items/s",
        "CPU cores (steady)", "CPU s sampled / kernel", "total error",
        "per-step abs. error ms, mean (of step CPU)", "per-step max abs. error ms"]
if base:
    head += ["baseline: per-step abs. error ms, mean", "baseline: max ms", "baseline: total error"]
head += ["RSS peak MiB sampled / kernel max", "profiler CPU share", "start (UTC)"]
def synth(label):
    """Per pattern: mean and max |sampled - true| busy fraction per step, over 3 runs."""
    out = {}
    for f in sorted(glob.glob(os.path.join(d, "synth-" + label, "*", "run.json"))):
        pat = os.path.basename(os.path.dirname(f)).rsplit("-r", 1)[0]
        r = json.load(open(f))
        t = json.load(open(os.path.dirname(f) + ".truth.json"))
        e = [abs(s["cpu_cores"] - g["cpu_ns"] / g["wall_ns"])
             for s, g in zip(r["steps"], t["steps"]) if s.get("cpu_cores") is not None]
        out.setdefault(pat, []).extend(e)
    return out

syn_new, syn_base = synth("new"), synth("base")
syn = ""
if syn_new:
    sh = ["busy / idle ms per step", "steps", f"`{build}/loom`: mean abs. error, cores",
          "max abs. error"]
    if syn_base:
        sh += ["baseline: mean abs. error, cores", "max abs. error"]
    rows_s = []
    for pat in sorted(syn_new, key=lambda p: [int(x[1:]) for x in p.split("-")]):
        e = syn_new[pat]
        b_, i_ = (x[1:] for x in pat.split("-"))
        row = [f"{b_} / {i_}", str(len(e)), f"{statistics.fmean(e):.4f}", f"{max(e):.4f}"]
        if syn_base:
            eb = syn_base.get(pat, [])
            row += [f"{statistics.fmean(eb):.4f}", f"{max(eb):.4f}"] if eb else ["–", "–"]
        rows_s.append("| " + " | ".join(row) + " |")
    syn = ("\n## A workload with known phases\n\n`prof_synth` (tests/integration/prof_synth.c) "
           "burns exactly B ms of CPU (on its own thread clock) and sleeps I ms per step, 30 "
           "steps, 3 runs per pattern and build, builds taking turns. Error: per step, the busy "
           "fraction read off the sampled series (CPU over the step / its wall time) against "
           "the program's own (its CPU clock over the step / wall time).\n\n"
           "| " + " | ".join(sh) + " |\n|" + "---|" * len(sh) + "\n" + "\n".join(rows_s) + "\n")

cmp = ""
if base:
    label = os.environ.get("PROF_ACC_BASE_LABEL", "")
    cmp = (f"\nBaseline `{base}/loom`{' (' + label + ')' if label else ''}, run right after each "
           f"`{build}/loom` run of the same model and mode: its per-step error {summary(rel_base)} "
           f"of step CPU, against {summary(rel_new)} for `{build}/loom`.\n")
text = f"""# loom prof: sampling accuracy against the kernel's account (the model zoo, a synthetic workload)

Generated by `bench/prof_accuracy.sh {build}{' ' + base if base else ''}` (PROF_ACC_STEPS={steps}),
started {start}: each model, training and inference, `--batch 8 --threads 1 --steps {steps}`, under

    {build}/loom prof --quiet --interval 10ms --out DIR -- /usr/bin/python3 workloads/models/run.py ...

machine: {platform.system()} {platform.release()}, {cpu}, {os.cpu_count()} cores; 1-minute load
average {load0.split()[0]} before, {load1.split()[0]} after; Debian python3-torch (CPU, OpenBLAS).
Device of every number here: the CPU.

- **Total error**: (sampled CPU time of the process tree − kernel's rusage of it) / rusage; the
  sampled total is the last sample's cumulative CPU (taken after the command exited, before it was
  reaped). Max abs. error {100*max(errs):.3f}%, mean {100*sum(errs)/len(errs):.3f}%.
- **Per-step error**: for every step, the tree's CPU over the step as read off the sampled series
  (interpolated linearly between the two samples around each boundary) minus the CPU time the
  workload measured itself over the step (`time.process_time_ns()`, the kernel's CPU clock of the
  process, all threads); mean absolute error in ms and as a share of the mean step CPU time, and
  the largest. Over all models: {summary(rel_new)} of step CPU.
{cmp}
| {' | '.join(head)} |
|{'---|' * len(head)}
""" + "\n".join(rows) + "\n" + syn + """
## How to read it

loom reads each process's CPU-time clock (the scheduler's runtime, in nanoseconds; for a thread
running on another CPU the kernel brings it up to date only at that CPU's scheduler tick, 1/CONFIG_HZ,
or at a context switch); a reader of `/proc/PID/stat` gets clock ticks (10 ms, each field truncated).
A step boundary where the process sleeps is a context switch, so there the clock is exact while the
ticks can be off by up to 10 ms: hence the synthetic table. A single thread that never sleeps,
sampled every 10 ms, keeps one phase against the 10 ms ticks, so their truncation cancels out in
differences and the tick reader's per-step error can come out smaller than the clock's, which is
off by up to one scheduler tick at each boundary (the zoo's shortest steps show it).
"""
open(out, "w").write(text)
print(text)
PY
