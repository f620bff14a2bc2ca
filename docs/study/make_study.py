#!/usr/bin/python3
"""Regenerates every table and figure of the workload study (docs/study/
README.md) from the committed raw run records.

    /usr/bin/python3 docs/study/make_study.py [RECORDS.jsonl] [--out DIR]

Defaults: docs/study/records/runs.jsonl and docs/study. Writes DIR/results.md
(the tables and the findings computed from them) and DIR/figures/*.svg.
Standard library only, deterministic: the same records give the same bytes.
Every metric is defined in README.md, "Metrics"; this file is their one
implementation. Exit status 0, 1 for a bad record (the message names the
file, the line and what was expected), 2 for a bad command line.
"""

import argparse
import json
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from campaign import BASE_BATCH, DEFAULT_SIZE, MODELS  # noqa: E402

REQUIRED = {"model": str, "mode": str, "batch": int, "precision": str, "threads": int,
            "input_size": int, "repeat": int, "device": str, "exit": dict, "step_wall_s": list,
            "step_cpu_s": list, "summary": dict, "roofline": dict, "load_before": list}
FAMILY = {"resnet18": "cnn", "resnet50": "cnn", "vgg16": "cnn", "mobilenet_v2": "cnn-mobile",
          "vit": "transformer-vision", "bert": "transformer-encoder",
          "gpt2": "transformer-decoder", "lstm": "rnn", "dlrm": "recommendation"}
GPU_NOTE = "not measured: no GPU lent"
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf"]


class RecordError(Exception):
    pass


# ------------------------------------------------------------------ records

def load(path):
    recs = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                raise RecordError(f"{path}:{n}: not a JSON object ({e.msg} at column {e.colno})")
            if not isinstance(r, dict):
                raise RecordError(f"{path}:{n}: expected a JSON object, found {type(r).__name__}")
            for k, t in REQUIRED.items():
                if k not in r:
                    raise RecordError(f"{path}:{n}: missing member '{k}'")
                if not isinstance(r[k], t) or (t is int and isinstance(r[k], bool)):
                    raise RecordError(f"{path}:{n}: member '{k}': expected {t.__name__}, found "
                                      f"{type(r[k]).__name__}")
            if len(r["step_cpu_s"]) != len(r["step_wall_s"]):
                raise RecordError(f"{path}:{n}: step_cpu_s has {len(r['step_cpu_s'])} entries, "
                                  f"step_wall_s {len(r['step_wall_s'])}: expected one per step")
            if any(not isinstance(x, (int, float)) or x <= 0 for x in r["step_wall_s"]):
                raise RecordError(f"{path}:{n}: step_wall_s: expected positive numbers")
            r["_line"] = n
            recs.append(r)
    return recs


def quantile(xs, q):
    s = sorted(xs)
    if not s:
        return math.nan
    pos = q * (len(s) - 1)
    i = int(pos)
    return s[i] + (pos - i) * (s[i + 1] - s[i]) if i + 1 < len(s) else s[i]


def cv(xs):
    return statistics.stdev(xs) / statistics.fmean(xs) if len(xs) > 1 else math.nan


def slope(xs, ys):
    """Least-squares slope of ys on xs."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else math.nan


def derive(r):
    """The per-run metrics (README.md, "Metrics") of one record; None if the
    run reported no steps (e.g. unsupported by this torch)."""
    if r["exit"].get("code") != 0 or not r["step_wall_s"]:
        return None
    w = int(r["summary"].get("warmup_steps") or 0)
    wall = r["step_wall_s"][w:]
    cpu = [x for x in r["step_cpu_s"][w:] if x is not None]
    if not wall:
        return None
    m = {"W": w, "T": statistics.fmean(wall), "p50": quantile(wall, 0.5),
         "p95": quantile(wall, 0.95), "cv": cv(wall), "n": len(wall)}
    m["tail"] = m["p95"] / m["p50"]
    m["excess"] = sum((t - m["p50"]) / m["p50"] for t in r["step_wall_s"][:w])
    m["startup"] = r["summary"].get("startup_s")
    full_cpu = len(cpu) == len(wall)
    m["Tc"] = statistics.fmean(cpu) if full_cpu else math.nan
    m["Tq"] = min(cpu) if full_cpu else math.nan
    m["Tmin"] = min(wall)
    m["cv_cpu"] = cv(cpu) if full_cpu else math.nan
    m["eta"] = m["Tc"] / (m["T"] * r["threads"])
    m["X"] = r["batch"] / m["T"]
    m["Xc"] = r["batch"] / m["Tc"]
    m["rss"] = (r["summary"].get("rss_peak_bytes") or 0) / 2 ** 20
    rf = r["roofline"]
    f, b = rf.get("flops_per_step"), rf.get("bytes_per_step")
    m["F"] = f if rf.get("counts") else None
    if m["F"]:
        m["I"] = f / b
        m["P"] = f / m["T"]
        m["Pc"] = f / m["Tc"]
        peak, bw = rf.get("peak_flops"), rf.get("peak_bytes_per_s")
        if peak and bw:
            m["roof"] = min(peak, m["I"] * bw)
            m["phi"] = m["Pc"] / m["roof"]
            m["bound"] = "memory" if m["I"] < peak / bw else "compute"
        m["mcr"] = m["rss"] / (f / 1e9)
    est = r.get("estimate") or {}
    if est.get("time_s_step") and r["threads"] == 1:
        m["est_err"] = est["time_s_step"] / m["Tc"] - 1
    return m


def base_config(model):
    return {"mode": "train", "precision": "fp32", "threads": 1,
            "batch": BASE_BATCH.get(model, 8), "input_size": DEFAULT_SIZE.get(model, 64)}


def select(recs, model, repeat=0, **vary):
    """Records of a model at the baseline configuration except for `vary`."""
    want = base_config(model)
    want.update(vary)
    blas = want.pop("blas_threads", want["threads"])
    return [r for r in recs if r["model"] == model and r["device"] == "cpu"
            and all(r[k] == v for k, v in want.items()) and
            r.get("blas_threads", r["threads"]) == blas and
            (repeat is None or r["repeat"] == repeat)]


def one(recs, model, **vary):
    rs = select(recs, model, **vary)
    return rs[0] if rs else None


# -------------------------------------------------------------- formatting

def f(x, fmt="{:.1f}"):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    s = fmt.format(x)
    if s.startswith("-") and not any(c in "123456789" for c in s):
        s = s[1:]  # never "-0.0"
    return s


def pct(x):
    return f(x if x is None else 100 * x, "{:.1f}%")


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


# -------------------------------------------------------------------- svg

def esc(s):
    return (str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


class Plot:
    """A minimal SVG plot: linear or log axes, lines, points, bars, legend."""

    def __init__(self, title, xlabel, ylabel, xlog=False, ylog=False, w=760, h=440):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.xlog, self.ylog = xlog, ylog
        self.W, self.H = w, h
        self.x0, self.y0, self.pw, self.ph = 70, 40, w - 230, h - 120
        self.items, self.legend, self.notes = [], [], []
        self.xs, self.ys = [], []
        self.cats = None

    def _t(self, v, log):
        return math.log10(v) if log else v

    def line(self, xs, ys, color, label=None, dashed=False, dots=True):
        pts = [(x, y) for x, y in zip(xs, ys) if y is not None and not math.isnan(y)]
        self.items.append(("line", pts, color, dashed, dots))
        self.xs += [p[0] for p in pts]
        self.ys += [p[1] for p in pts]
        if label:
            self.legend.append((label, color, dashed))

    def point(self, x, y, color, label=None, hollow=False, text=None):
        self.items.append(("point", [(x, y)], color, hollow, text))
        self.xs.append(x)
        self.ys.append(y)
        if label:
            self.legend.append((label, color, False))

    def bars(self, cats, series):
        """series: [(label, color, values)] grouped per category."""
        self.cats = cats
        self.items.append(("bars", series))
        for _, _, vals in series:
            self.ys += [v for v in vals if v is not None and not math.isnan(v)]
        self.ys.append(0)
        self.legend += [(lab, col, False) for lab, col, _ in series]

    def hline(self, y, color="#999", label=None):
        self.items.append(("hline", y, color))
        self.ys.append(y)
        if label:
            self.legend.append((label, color, True))

    def _range(self, vals, log):
        vals = [self._t(v, log) for v in vals if not log or v > 0]
        lo, hi = min(vals), max(vals)
        if log:
            return math.floor(lo), max(math.ceil(hi), math.floor(lo) + 1)
        if hi == lo:
            hi = lo + 1
        pad = 0.05 * (hi - lo)
        return (0 if lo >= 0 and lo - pad < 0 else lo - pad), hi + pad

    def svg(self):
        if self.cats is None:
            self.xr = self._range(self.xs, self.xlog)
        else:
            self.xr = (-0.5, len(self.cats) - 0.5)
        self.yr = self._range(self.ys, self.ylog)
        X = lambda v: self.x0 + self.pw * (self._t(v, self.xlog) - self.xr[0]) / (self.xr[1] - self.xr[0])  # noqa: E731
        Y = lambda v: self.y0 + self.ph - self.ph * (self._t(v, self.ylog) - self.yr[0]) / (self.yr[1] - self.yr[0])  # noqa: E731
        o = ['<?xml version="1.0" encoding="UTF-8"?>',
             f'<svg xmlns="http://www.w3.org/2000/svg" width="{self.W}" height="{self.H}" '
             f'viewBox="0 0 {self.W} {self.H}" font-family="sans-serif" font-size="11">',
             '<rect width="100%" height="100%" fill="white"/>',
             f'<text x="{self.x0}" y="20" font-size="13">{esc(self.title)}</text>']
        for axis, (lo, hi), log in (("x", self.xr, self.xlog), ("y", self.yr, self.ylog)):
            if axis == "x" and self.cats is not None:
                for i, c in enumerate(self.cats):
                    o.append(f'<text x="{X(i):.1f}" y="{self.y0 + self.ph + 14}" '
                             f'text-anchor="middle">{esc(c)}</text>')
                continue
            ticks = ([10 ** k for k in range(int(lo), int(hi) + 1)] if log else
                     nice_ticks(lo, hi))
            for t in ticks:
                if axis == "x":
                    o.append(f'<line x1="{X(t):.1f}" y1="{self.y0}" x2="{X(t):.1f}" '
                             f'y2="{self.y0 + self.ph}" stroke="#eee"/>')
                    o.append(f'<text x="{X(t):.1f}" y="{self.y0 + self.ph + 14}" '
                             f'text-anchor="middle">{t:g}</text>')
                else:
                    o.append(f'<line x1="{self.x0}" y1="{Y(t):.1f}" x2="{self.x0 + self.pw}" '
                             f'y2="{Y(t):.1f}" stroke="#eee"/>')
                    o.append(f'<text x="{self.x0 - 4}" y="{Y(t) + 4:.1f}" '
                             f'text-anchor="end">{t:g}</text>')
        o.append(f'<rect x="{self.x0}" y="{self.y0}" width="{self.pw}" height="{self.ph}" '
                 'fill="none" stroke="#444"/>')
        o.append(f'<text x="{self.x0 + self.pw / 2}" y="{self.y0 + self.ph + 32}" '
                 f'text-anchor="middle">{esc(self.xlabel)}</text>')
        cy = self.y0 + self.ph / 2
        o.append(f'<text x="14" y="{cy}" text-anchor="middle" transform="rotate(-90 14 {cy})">'
                 f'{esc(self.ylabel)}</text>')
        o.append(f'<clipPath id="area"><rect x="{self.x0}" y="{self.y0}" width="{self.pw}" '
                 f'height="{self.ph}"/></clipPath><g clip-path="url(#area)">')
        for it in self.items:
            if it[0] == "line":
                _, pts, col, dashed, dots = it
                dash = ' stroke-dasharray="5 3"' if dashed else ""
                o.append(f'<polyline fill="none" stroke="{col}" stroke-width="1.5"{dash} '
                         'points="' + " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in pts) + '"/>')
                if dots:
                    o += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="2.5" fill="{col}"/>'
                          for x, y in pts]
            elif it[0] == "point":
                _, [(x, y)], col, hollow, text = it
                fill = "none" if hollow else col
                o.append(f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="4.5" fill="{fill}" '
                         f'stroke="{col}" stroke-width="1.5"/>')
                if text:
                    o.append(f'<text x="{X(x) + 6:.1f}" y="{Y(y) - 5:.1f}" font-size="9">'
                             f'{esc(text)}</text>')
            elif it[0] == "hline":
                _, y, col = it
                o.append(f'<line x1="{self.x0}" y1="{Y(y):.1f}" x2="{self.x0 + self.pw}" '
                         f'y2="{Y(y):.1f}" stroke="{col}" stroke-dasharray="5 3"/>')
            elif it[0] == "bars":
                series = it[1]
                bw = 0.8 / len(series)
                for k, (_, col, vals) in enumerate(series):
                    for i, v in enumerate(vals):
                        if v is None or math.isnan(v):
                            continue
                        xa, xb = X(i - 0.4 + k * bw), X(i - 0.4 + (k + 1) * bw)
                        ya, yb = Y(max(v, 0)), Y(min(v, 0))
                        o.append(f'<rect x="{xa:.1f}" y="{ya:.1f}" width="{xb - xa:.1f}" '
                                 f'height="{yb - ya:.1f}" fill="{col}"/>')
        o.append("</g>")
        lx, ly = self.x0 + self.pw + 15, self.y0 + 8
        for i, (lab, col, dashed) in enumerate(self.legend):
            y = ly + 16 * i
            dash = ' stroke-dasharray="5 3"' if dashed else ""
            o.append(f'<line x1="{lx}" y1="{y}" x2="{lx + 18}" y2="{y}" stroke="{col}" '
                     f'stroke-width="3"{dash}/>')
            o.append(f'<text x="{lx + 24}" y="{y + 4}">{esc(lab)}</text>')
        for i, n in enumerate(self.notes):
            o.append(f'<text x="{self.x0}" y="{self.y0 + self.ph + 50 + 14 * i}" font-size="10">'
                     f'{esc(n)}</text>')
        o.append("</svg>")
        return "\n".join(o) + "\n"


def nice_ticks(lo, hi, n=6):
    raw = (hi - lo) / n
    p = 10 ** math.floor(math.log10(raw))
    step = next(m * p for m in (1, 2, 5, 10) if m * p >= raw)
    t = math.ceil(lo / step) * step
    out = []
    while t <= hi + 1e-9 * step:
        out.append(0.0 if abs(t) < 1e-12 * step else round(t, 10))
        t += step
    return out


# ------------------------------------------------------------------- study

def calib_rows(recs, calib):
    """The roofline's peaks, and what the CPU did at best next to the runs."""
    rf = next((r["roofline"] for r in recs if r["roofline"].get("peak_flops")), None)
    rows = []
    if rf:
        rows.append(["roofline peaks (device file cpu-local, one thread)",
                     f"{rf['peak_flops'] / 1e9:.1f} GFLOP/s, "
                     f"{rf['peak_bytes_per_s'] / 1e9:.1f} GB/s"])
    if calib:
        rows.append(["measured on the campaign's CPU (docs/study/calibrate.py, one thread, "
                     f"{calib.get('start', '?')})",
                     f"{esc(calib.get('cpu', '?'))}: torch matmul fp32 "
                     f"{calib['matmul_fp32_flops'] / 1e9:.1f} GFLOP/s, bf16 "
                     f"{calib['matmul_bf16_flops'] / 1e9:.1f} GFLOP/s; triad "
                     f"{calib['triad_bytes_per_s'] / 1e9:.1f} GB/s"])
    return rows


def study(recs, outdir, source, calib=None):
    figs = os.path.join(outdir, "figures")
    os.makedirs(figs, exist_ok=True)
    der = {id(r): derive(r) for r in recs}
    D = lambda r: der[id(r)] if r else None  # noqa: E731
    models = [m for m in MODELS if any(r["model"] == m for r in recs)]
    color = {m: COLORS[i % len(COLORS)] for i, m in enumerate(MODELS)}
    md = ["# Workload study: results\n",
          "Generated by `/usr/bin/python3 docs/study/make_study.py` from "
          f"`{source}`; do not edit by hand. Metrics are defined in "
          "[README.md](README.md). **Device of every measured number: the CPU** (see the "
          "inventory); GPU rows say \"" + GPU_NOTE + "\". Times in ms: `T` = mean steady step "
          "wall time, `Tc` = mean steady step CPU time of the workload process, `Tq` = its "
          "quietest (shortest) steady step CPU time.\n"]
    findings = []

    # Inventory
    ok = [r for r in recs if D(r)]
    bad = [r for r in recs if not D(r)]
    loads = [r["load_before"][0] for r in recs]
    starts = sorted(r.get("start", "") for r in recs)
    mach = next((r.get("machine") for r in recs if r.get("machine")), {}) or {}
    md.append("## Inventory\n")
    md.append(table(["", "value"], [
        ["runs (records)", len(recs)], ["runs with steps", len(ok)],
        ["runs without steps", "; ".join(f"{r['id'] if 'id' in r else r['model']}: "
                                         f"{r.get('error', r['exit'])}" for r in bad) or "none"],
        ["first / last start (UTC)", f"{starts[0]} / {starts[-1]}" if starts else "–"],
        ["1-min load average before each run: min / median / max",
         f"{min(loads):.2f} / {statistics.median(loads):.2f} / {max(loads):.2f}" if loads else "–"],
        ["machine", esc(mach.get("cpu", "?")) + f", {mach.get('cores', '?')} cores, "
         f"{mach.get('kernel', '?')}, torch {mach.get('torch', '?')}"],
        ["devices", "cpu: measured; cuda (H200): " + GPU_NOTE]] + calib_rows(recs, calib)))

    # T1 family and mode
    md.append("\n## 1. Model family and mode (batch 8, vgg16 1; fp32; 1 thread; default input)\n")
    rows = []
    for m in models:
        for mode in ("train", "infer"):
            r = one(recs, m, mode=mode)
            d = D(r)
            if not d:
                rows.append([m, FAMILY.get(m, "?"), mode] + ["–"] * 16 +
                            [r.get("error", "no run") if r else "no run"])
                continue
            rows.append([m, FAMILY.get(m, "?"), mode, f(1e3 * d["T"]), f(1e3 * d["Tc"]),
                         f(1e3 * d["Tq"]),
                         pct(d["cv"]), pct(d["cv_cpu"]), f(d["tail"], "{:.2f}"), d["W"],
                         f(d["startup"], "{:.2f}"), f(d["Xc"]), f(d["rss"], "{:.0f}"),
                         f(d["F"] / 1e9 if d["F"] else None, "{:.2f}"),
                         f(d.get("I"), "{:.1f}"), f(d["Pc"] / 1e9 if d["F"] else None),
                         pct(d.get("phi")), d.get("bound", "–"), f(d.get("mcr"), "{:.0f}"),
                         "" if d["F"] else (r.get("estimate_why") or "no counts")])
    rows.append(["(all)", "", "cuda (H200)"] + ["–"] * 16 + [GPU_NOTE])
    md.append(table(["model", "family", "mode", "T", "Tc", "Tq", "CV", "CV cpu", "p95/p50", "W",
                     "startup s", "items/CPU-s", "RSS MiB", "GFLOP/step", "I FLOP/B",
                     "Pc GFLOP/s", "φ (of 1-core roof)", "bound", "MCR MiB/GFLOP", "note"], rows))
    base = [(m, D(one(recs, m))) for m in models]
    base = [(m, d) for m, d in base if d]
    withI = [(m, d) for m, d in base if d.get("I")]
    if withI:
        lo = min(withI, key=lambda x: x[1]["I"])
        hi = max(withI, key=lambda x: x[1]["I"])
        nmem = sum(d.get("bound") == "memory" for _, d in withI)
        phis = [d["phi"] for _, d in withI if d.get("phi")]
        findings.append(
            f"Arithmetic intensity of a training step (estimator's traffic model) spans "
            f"{lo[1]['I']:.2f} ({lo[0]}) to {hi[1]['I']:.1f} FLOP/byte ({hi[0]}); "
            f"{nmem} of {len(withI)} models fall below this CPU core's ridge point "
            f"(memory-bound), the rest above it.")
        if phis:
            best = max(withI, key=lambda x: x[1].get("phi") or 0)
            worst = min(withI, key=lambda x: x[1].get("phi") or 9)
            findings.append(
                f"Per CPU second, training reaches {100 * min(phis):.1f}% ({worst[0]}) to "
                f"{100 * max(phis):.1f}% ({best[0]}) of the one-core roofline above it "
                f"(median {100 * statistics.median(phis):.1f}%).")
    if base:
        cvs = [d["cv"] for _, d in base if not math.isnan(d["cv"])]
        cvc = [d["cv_cpu"] for _, d in base if not math.isnan(d["cv_cpu"])]
        if cvs and cvc:
            mw, mc = statistics.median(cvs), statistics.median(cvc)
            findings.append(
                f"Step-time variability: median CV {100 * mw:.1f}% on the wall clock vs "
                f"{100 * mc:.1f}% in CPU time over the baseline training runs: most wall-clock "
                f"jitter is waiting for a core, not the workload's own variation." if
                mw > 1.25 * mc else
                f"Step-time variability: median CV {100 * mw:.1f}% on the wall clock and "
                f"{100 * mc:.1f}% in CPU time over the baseline training runs: the jitter is the "
                f"workload's own (its steps vary in CPU time as much as in wall time).")
        ws = [(m, d["W"]) for m, d in base]
        findings.append(
            f"Warm-up: {sum(w > 0 for _, w in ws)} of {len(ws)} baseline training runs have "
            f"slow first steps (W > 0; max W = {max(w for _, w in ws)}); start-up before the "
            f"first step takes a median {statistics.median(d['startup'] for _, d in base):.1f} s "
            f"(importing torch, building the model).")
        mcr = [(m, d["mcr"]) for m, d in base if d.get("mcr")]
        if mcr:
            lo, hi = min(mcr, key=lambda x: x[1]), max(mcr, key=lambda x: x[1])
            findings.append(f"Memory-to-compute ratio: {lo[1]:.0f} ({lo[0]}) to {hi[1]:.0f} "
                            f"MiB of resident memory per GFLOP of step work ({hi[0]}).")

    # Roofline figure
    if withI:
        peak = next(one(recs, m)["roofline"]["peak_flops"] for m, _ in withI)
        bw = next(one(recs, m)["roofline"]["peak_bytes_per_s"] for m, _ in withI)
        p = Plot("Training and inference steps on the one-core roofline of this CPU "
                 "(cpu-local)", "arithmetic intensity, FLOP/byte (estimator)",
                 "GFLOP per CPU second", xlog=True, ylog=True)
        allI = [D(r)["I"] for r in recs if D(r) and D(r).get("I")]
        xs = [10 ** k for k in range(math.floor(math.log10(min(allI))) - 1,
                                     math.ceil(math.log10(max(allI))) + 2)]
        ridge = peak / bw
        xs = sorted(set(xs + [ridge]))
        p.line(xs, [min(peak, x * bw) / 1e9 for x in xs], "#000000", label="roof", dots=False)
        p.ys.append(2 * peak / 1e9)  # headroom above the flat roof
        for m in models:
            for mode in ("train", "infer"):
                d = D(one(recs, m, mode=mode))
                if d and d.get("I"):
                    p.point(d["I"], d["Pc"] / 1e9, color[m], hollow=mode == "infer",
                            label=m if mode == "train" else None, text=None)
        p.notes = ["filled: training step; ring: inference step (batch 8, fp32, 1 thread)",
                   f"roof: min(peak, I x bandwidth), one-thread peaks of cpu-local: "
                   f"{peak / 1e9:.1f} GFLOP/s, {bw / 1e9:.1f} GB/s"]
        write(figs, "roofline.svg", p.svg())

    # Step series figure
    p = Plot("Step time series of the baseline training runs (warm-up included)",
             "step", "step time / steady median", ylog=True)
    for m in models:
        r = one(recs, m)
        d = D(r)
        if d:
            xs = list(range(len(r["step_wall_s"])))
            p.line(xs, [t / d["p50"] for t in r["step_wall_s"]], color[m], label=m)
    p.hline(1.0)
    write(figs, "step_series.svg", p.svg())

    # T2 repeats
    md.append("\n## 2. Run-to-run repeats (baseline training configuration)\n")
    rows = []
    for m in models:
        rs = [r for r in select(recs, m, repeat=None) if D(r)]
        if len(rs) < 2:
            continue
        Ts = [D(r)["T"] for r in rs]
        Tcs = [D(r)["Tc"] for r in rs]
        rows.append([m, len(rs), " / ".join(f(1e3 * t) for t in Ts), pct(cv(Ts)),
                     " / ".join(f(1e3 * t) for t in Tcs), pct(cv(Tcs)),
                     pct(statistics.fmean(D(r)["cv"] for r in rs))])
    md.append(table(["model", "runs", "T per run", "between-run CV of T", "Tc per run",
                     "between-run CV of Tc", "mean within-run CV"], rows) if rows else
              "No repeated configurations in the records.\n")
    if rows:
        findings.append("Run-to-run: between-run CV of the mean step time " +
                        ", ".join(f"{row[0]} {row[3]} (wall) / {row[5]} (CPU)"
                                  for row in rows) + ".")

    # T3 batch
    md.append("\n## 3. Batch size (training, fp32, 1 thread)\n")
    rows, summ = [], []
    p = Plot("Throughput against batch size (items per CPU second)", "batch",
             "items per CPU second", xlog=True, ylog=True)
    for m in models:
        rs = sorted((r for r in recs if r["model"] == m and r["repeat"] == 0 and
                     all(r[k] == v for k, v in base_config(m).items() if k != "batch")),
                    key=lambda r: r["batch"])
        rs = [r for r in rs if D(r)]
        if len(rs) < 3:
            continue
        for r in rs:
            d = D(r)
            rows.append([m, r["batch"], f(1e3 * d["Tc"]), f(1e3 * d["Tq"]), f(1e3 * d["T"]),
                         f(d["Xc"]),
                         f(d["X"]), f(d["rss"], "{:.0f}"), f(d.get("I"), "{:.1f}"),
                         pct(d.get("phi"))])
        bs = [r["batch"] for r in rs]
        a = slope([math.log(b) for b in bs], [math.log(D(r)["Xc"]) for r in rs])
        aq = slope([math.log(b) for b in bs], [math.log(r["batch"] / D(r)["Tq"]) for r in rs])
        t0 = statistics.fmean(D(r)["Tc"] for r in rs) - slope(bs, [D(r)["Tc"] for r in rs]) * \
            statistics.fmean(bs)
        t8 = next((D(r)["Tc"] for r in rs if r["batch"] == 8), None)
        summ.append([m, f"{min(bs)}–{max(bs)}", f(a, "{:.2f}"), f(aq, "{:.2f}"),
                     f(1e3 * t0, "{:.1f}"), pct(t0 / t8 if t8 else None)])
        p.line(bs, [D(r)["Xc"] for r in rs], color[m], label=m)
    md.append(table(["model", "batch", "Tc", "Tq", "T", "items/CPU-s", "items/s (wall)", "RSS MiB",
                     "I", "φ"], rows) if rows else "No batch sweep in the records.\n")
    if summ:
        md.append("\nBatch scaling: α = least-squares slope of log(items per CPU second) on "
                  "log(batch), from Tc and (α_q) from Tq; fixed cost t₀ = intercept of a "
                  "straight-line fit of Tc on batch, and its share of Tc at batch 8.\n\n")
        md.append(table(["model", "batches", "α", "α_q", "t₀ ms", "t₀ / Tc(8)"], summ))
        findings.append("Batch scaling exponent α (0 = no gain from batching, 1 = step time "
                        "independent of batch), from mean / quietest step CPU time: " +
                        ", ".join(f"{s[0]} {s[2]} / {s[3]}" for s in summ) + ".")
        write(figs, "batch_scaling.svg", p.svg())

    # T4 precision
    md.append("\n## 4. Precision (training, batch 8, 1 thread): bf16 autocast vs fp32\n")
    rows, sp = [], []
    for m in models:
        rb = one(recs, m, precision="bf16")
        if not rb:
            continue
        d32, d16 = D(one(recs, m)), D(rb)
        if not d16:
            rows.append([m, f(1e3 * d32["Tc"]) if d32 else "–", "–", "–", "–", "–", "–",
                         rb.get("error", "no steps")])
            continue
        s = d32["Tc"] / d16["Tc"] if d32 else None
        sq = d32["Tq"] / d16["Tq"] if d32 else None
        sp.append((m, s, sq))
        rows.append([m, f(1e3 * d32["Tc"]) if d32 else "–", f(1e3 * d16["Tc"]),
                     f(s, "{:.2f}"), f(sq, "{:.2f}"), f(d32["rss"], "{:.0f}") if d32 else "–",
                     f(d16["rss"], "{:.0f}"), ""])
    rows.append(["(all)", "–", "–", "–", "–", "–", "–", "cuda (H200): " + GPU_NOTE])
    md.append(table(["model", "Tc fp32", "Tc bf16", "speed-up (Tc fp32 / Tc bf16)",
                     "speed-up on Tq", "RSS fp32 MiB", "RSS bf16 MiB", "note"], rows))
    if sp:
        findings.append("bf16 autocast on this CPU: speed-up (fp32 / bf16 step CPU time, mean / "
                        "quietest step) " +
                        ", ".join(f"{m} {s:.2f} / {q:.2f}" for m, s, q in sp) + ".")
        p = Plot("bf16 autocast against fp32: speed-up in step CPU time", "", "speed-up")
        p.bars([m for m, _, _ in sp], [("on Tc (mean)", COLORS[0], [s for _, s, _ in sp]),
                                       ("on Tq (quietest)", COLORS[1], [q for _, _, q in sp])])
        p.hline(1.0, label="no change")
        write(figs, "precision.svg", p.svg())

    # T5 input size
    md.append("\n## 5. Input size (training, batch 8, 1 thread; image side or sequence "
              "length)\n")
    rows, el = [], []
    p = Plot("Step CPU time against input size, relative to the smallest size",
             "input size (image side or sequence length)", "Tc / Tc(smallest)",
             xlog=True, ylog=True)
    for m in models:
        rs = sorted((r for r in recs if r["model"] == m and r["repeat"] == 0 and D(r) and
                     all(r[k] == v for k, v in base_config(m).items() if k != "input_size")),
                    key=lambda r: r["input_size"])
        if len(rs) < 2:
            continue
        for r in rs:
            d = D(r)
            rows.append([m, r["input_size"], f(1e3 * d["Tc"]), f(1e3 * d["Tq"]), f(1e3 * d["T"]),
                         f(d["F"] / 1e9 if d["F"] else None, "{:.2f}"), f(d["rss"], "{:.0f}")])
        xs = [math.log(r["input_size"]) for r in rs]
        et = slope(xs, [math.log(D(r)["Tc"]) for r in rs])
        eq = slope(xs, [math.log(D(r)["Tq"]) for r in rs])
        ef = slope(xs, [math.log(D(r)["F"]) for r in rs]) if all(D(r)["F"] for r in rs) else None
        el.append([m, f(et, "{:.2f}"), f(eq, "{:.2f}"), f(ef, "{:.2f}")])
        t_min = D(rs[0])["Tc"]
        p.line([r["input_size"] for r in rs], [D(r)["Tc"] / t_min for r in rs], color[m],
               label=m)
        if ef is not None:
            p.line([r["input_size"] for r in rs], [D(r)["F"] / D(rs[0])["F"] for r in rs],
                   color[m], dashed=True, dots=False)
    if rows:
        md.append(table(["model", "size", "Tc", "Tq", "T", "GFLOP/step", "RSS MiB"], rows))
        md.append("\nElasticity: least-squares slope of log Tc (and of log Tq) and of log FLOPs "
                  "(estimator) on log input size; equal slopes mean time follows the work.\n\n")
        md.append(table(["model", "time elasticity (Tc)", "time elasticity (Tq)",
                         "FLOP elasticity"], el))
        findings.append("Input size: time elasticity (Tc / Tq) vs FLOP elasticity " +
                        ", ".join(f"{e[0]} {e[1]} / {e[2]} vs {e[3]}" for e in el) + ".")
        p.notes = ["solid: measured step CPU time; dashed: estimator FLOPs (same colour)"]
        write(figs, "input_size.svg", p.svg())
    else:
        md.append("No input-size sweep in the records.\n")

    # T6 threads
    md.append("\n## 6. Threads (training, batch 8, fp32): 1 vs 2 intra-op threads\n")
    md.append("Two threads: torch's intra-op (OpenMP) pool and OpenBLAS's own pool both of 2 "
              "(OMP_NUM_THREADS=OPENBLAS_NUM_THREADS=2), and, in the columns marked \"BLAS 1\", "
              "the intra-op pool of 2 with OpenBLAS kept to one thread.\n")
    rows, sp2 = [], []
    for m in models:
        r1, r2 = one(recs, m), one(recs, m, threads=2)
        d1, d2 = D(r1), D(r2)
        if not (d1 and d2):
            continue
        d3 = D(one(recs, m, threads=2, blas_threads=1))
        s = d1["T"] / d2["T"]
        sq = d1["Tmin"] / d2["Tmin"]
        s3 = d1["T"] / d3["T"] if d3 else None
        sp2.append((m, s, d2["Tc"] / d1["Tc"], sq, s3))
        rows.append([m, f(1e3 * d1["T"]), f(1e3 * d2["T"]), f(s, "{:.2f}"), f(sq, "{:.2f}"),
                     pct(s / 2),
                     f(1e3 * d1["Tc"]), f(1e3 * d2["Tc"]), f(d2["Tc"] / d1["Tc"], "{:.2f}"),
                     f(r2["summary"].get("cpu_cores_steady"), "{:.2f}"),
                     f(1e3 * d3["T"]) if d3 else "–", f(s3, "{:.2f}"),
                     f(d3["Tc"] / d1["Tc"], "{:.2f}") if d3 else "–"])
    rows.append(["cuda (H200)"] + ["–"] * 11 + [GPU_NOTE])
    md.append(table(["model", "T 1 thread", "T 2 threads", "speed-up S", "S on fastest steps",
                     "efficiency S/2",
                     "Tc 1 thread", "Tc 2 threads", "CPU inflation Tc2/Tc1",
                     "cores used (2 threads)", "T 2 threads, BLAS 1", "S, BLAS 1",
                     "CPU inflation, BLAS 1"], rows))
    if sp2:
        findings.append("Two threads instead of one: wall-clock speed-up (mean / fastest steps) " +
                        ", ".join(f"{m} {s:.2f} / {q:.2f}" for m, s, _, q, _ in sp2) +
                        "; CPU time per step grows by " +
                        ", ".join(f"{m} {c:.2f}x" for m, _, c, _, _ in sp2) + ".")
        nested = [(m, s, s3) for m, s, _, _, s3 in sp2 if s3]
        if nested:
            findings.append("With OpenBLAS kept to one thread under the 2-thread intra-op pool, "
                            "the speed-up becomes " +
                            ", ".join(f"{m} {s3:.2f} (was {s:.2f})" for m, s, s3 in nested) +
                            ".")
        p = Plot("Speed-up from a second intra-op thread (wall clock)", "", "T(1) / T(2)")
        series = [("on the mean step", COLORS[0], [x[1] for x in sp2]),
                  ("on the fastest step", COLORS[1], [x[3] for x in sp2])]
        if any(x[4] for x in sp2):
            series.append(("mean step, BLAS pool of 1", COLORS[4], [x[4] for x in sp2]))
        p.bars([x[0] for x in sp2], series)
        p.hline(2.0, "#2ca02c", label="ideal (2)")
        p.hline(1.0, label="no gain")
        write(figs, "threads.svg", p.svg())

    # Stability figure
    if base:
        p = Plot("Step-time variability of the baseline training runs", "",
                 "coefficient of variation, %")
        p.bars([m for m, _ in base], [("wall clock", COLORS[0], [100 * d["cv"] for _, d in base]),
                                      ("CPU time", COLORS[1],
                                       [100 * d["cv_cpu"] for _, d in base])])
        write(figs, "stability.svg", p.svg())

    # T7 estimator vs measurement (by-product)
    rows = []
    for m, d in base:
        if d.get("est_err") is not None:
            r = one(recs, m)
            rows.append([m, f(1e3 * d["Tc"]), f(1e3 * r["estimate"]["time_s_step"]),
                         pct(d["est_err"])])
    if rows:
        md.append("\n## 7. By-product: the estimator's step time against the measured step CPU "
                  "time (training, batch 8, 1 thread, device cpu-local)\n")
        md.append(table(["model", "Tc measured", "estimated", "error"], rows))

    md.append("\n## Devices\n")
    md.append(table(["device", "runs", "status"], [
        ["cpu (this machine)", len(recs), "measured"],
        ["cuda (NVIDIA H200)", 0, GPU_NOTE + "; the zoo's catalog has the CUDA jobs "
         "(workloads/catalogs/zoo.json) and run.py --device cuda for when one is"]]))
    md.append("\n## Findings (computed from the tables above)\n")
    md += [f"- {x}" for x in findings]
    md.append("\nFigures: " + ", ".join(f"[{n}](figures/{n})"
                                        for n in sorted(os.listdir(figs))) + ".")
    write(outdir, "results.md", "\n".join(md) + "\n")


def write(d, name, text):
    tmp = os.path.join(d, "." + name + ".tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(d, name))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("records", nargs="?", default=os.path.join(HERE, "records", "runs.jsonl"))
    ap.add_argument("--out", default=HERE)
    a = ap.parse_args()
    try:
        recs = load(a.records)
    except OSError as e:
        print(f"make_study: cannot read {a.records}: {e.strerror}", file=sys.stderr)
        return 1
    except RecordError as e:
        print(f"make_study: {e}", file=sys.stderr)
        return 1
    if not recs:
        print(f"make_study: {a.records}: no records", file=sys.stderr)
        return 1
    src = os.path.relpath(os.path.abspath(a.records), os.path.dirname(os.path.dirname(HERE)))
    cal = os.path.join(os.path.dirname(os.path.abspath(a.records)), "calibration.json")
    calib = json.load(open(cal)) if os.path.exists(cal) else None
    study(recs, a.out, a.records if src.startswith("..") else src, calib)
    print(f"make_study: {len(recs)} records -> {a.out}/results.md, {a.out}/figures/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
