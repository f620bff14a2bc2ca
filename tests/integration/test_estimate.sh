#!/usr/bin/env bash
# loom estimate end to end (exit codes, table, JSON) and the allocation
# tracker (LD_PRELOAD into a real process).
set -euo pipefail
B=${LOOM_BUILD_DIR:?}
SRC=${LOOM_SOURCE_DIR:-.}
loom="$B/loom"
tmp=$(mktemp -d /tmp/loom-est-it.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
corpus="$SRC/tests/fuzz/corpus/onnx"
export LOOM_DEVICE_DIR="$SRC/workloads/devices"

# a table for every seed model, training with Adam in mixed precision
for m in cnn attn lstm; do
  out=$("$loom" estimate "$corpus/$m.onnx" --batch 2 --train --optimizer adam --precision mixed)
  grep -q "^total" <<<"$out" || fail "$m: no total row: $out"
  grep -q "step time" <<<"$out" || fail "$m: no step time"
done

# JSON: parseable, consistent, batch applied
"$loom" estimate "$corpus/cnn.onnx" --batch 3 --train --json > "$tmp/cnn.json"
/usr/bin/python3 - "$tmp/cnn.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
m = j["memory"]
assert j["batch"] == 3 and j["train"] and j["device"] == "h200", j
assert m["total"] == m["peak_reserved"] + m["context"], m
assert m["peak_reserved"] >= m["peak_live"] > 0, m
assert m["peak_reserved"] % 512 == 0, m  # caching-allocator blocks
assert j["params"] == 4*3*9 + 4 + 4 + 4 + 16 + 4, j["params"]
assert j["bwd_flops"] > j["fwd_flops"] > 0
assert j["time_s"]["step"] > 0 and len(j["ops"]) > 0
# memory traffic: forward = the operators' bytes, backward twice those of
# operators with a backward, the update 7 tensor passes per fp32 parameter (adam)
b = j["bytes"]
assert b["forward"] == sum(o["bytes"] for o in j["ops"]) > 0, b
assert b["backward"] == 2 * sum(o["bytes"] for o in j["ops"] if o["bwd_flops"] > 0), b
assert b["optimizer"] == j["params"] * 7 * 4, b
assert b["step"] == b["forward"] + b["backward"] + b["optimizer"], b
PY

# the shipped retaining CPU device with its in_step_factor against copies
# set to 1 and 2: a training step is linear in the factor (it scales the
# operators' work terms, the loss and the optimizer: the optimizer's time by
# the factor itself), the fixed and page-fault parts do not move, and the
# factor is not 1 (where the work terms would not scale); inference is unscaled
/usr/bin/python3 - "$loom" "$SRC/workloads/devices/cpu-local-retain.json" "$corpus/attn.onnx" "$tmp" <<'PY'
import json, subprocess, sys
loom, devpath, model, tmp = sys.argv[1:]
dev = json.load(open(devpath))
k = dev["in_step_factor"]
assert 0.25 <= k <= 4 and k != 1, k
paths = {}
for f in (1, 2):
    dev["in_step_factor"] = f
    paths[f] = f"{tmp}/k{f}.json"
    json.dump(dev, open(paths[f], "w"))
def est(d, *extra):
    return json.loads(subprocess.run([loom, "estimate", model, "--batch", "2", "--device", d, "--json",
                                      *extra], check=True, capture_output=True, text=True).stdout)
def rel(a, b):
    return abs(a - b) <= 1e-6 * abs(b) + 1e-12
train = ("--train", "--optimizer", "adam")
a, b, c = (est(p, *train)["time_s"] for p in (devpath, paths[1], paths[2]))
for part in ("fixed", "page_faults"):
    assert rel(a[part], b[part]) and rel(c[part], b[part]), (part, a, b, c)
assert rel(a["optimizer"], k * b["optimizer"]), (a, b)
assert c["step"] > b["step"] and rel(a["step"] - b["step"], (k - 1) * (c["step"] - b["step"])), (a, b, c)
a, b = est(devpath)["time_s"], est(paths[1])["time_s"]
assert rel(a["step"], b["step"]), (a, b)
PY

# exit codes: usage 2, not found 4, malformed 5
set +e
"$loom" estimate "$corpus/cnn.onnx" >/dev/null 2>&1; [ $? -eq 2 ] || fail "missing --batch: not 2"
"$loom" estimate "$corpus/cnn.onnx" --batch 0 >/dev/null 2>&1; [ $? -eq 2 ] || fail "--batch 0: not 2"
"$loom" estimate "$tmp/none.onnx" --batch 1 >/dev/null 2>&1; [ $? -eq 4 ] || fail "missing file: not 4"
"$loom" estimate "$corpus/cnn.onnx" --batch 1 --device nonexistent >/dev/null 2>&1; [ $? -eq 4 ] || fail "device: not 4"
"$loom" estimate "$corpus/attn_truncated" --batch 1 2>"$tmp/err"; rc=$?
set -e
[ $rc -eq 5 ] || fail "truncated model: exit $rc, expected 5"
grep -q "attn_truncated: byte" "$tmp/err" || fail "truncated: message lacks the place: $(cat "$tmp/err")"
"$loom" estimate --help | grep -q -- "--optimizer" || fail "--help"

# the tracker: a Python process that holds 64 MiB at its peak
lib="${LOOM_PLAIN_BUILD_DIR:-$B}/libloom_alloctrack.so"
[ -f "$lib" ] || lib="$B/libloom_alloctrack.so"
LD_PRELOAD="$lib" LOOM_ALLOCTRACK_OUT="$tmp/peak" /usr/bin/python3 - <<'PY'
import ctypes
lib = ctypes.CDLL(None)
lib.loom_alloctrack_live.restype = ctypes.c_int64
lib.loom_alloctrack_peak.restype = ctypes.c_int64
lib.loom_alloctrack_reset_peak()
base = lib.loom_alloctrack_live()
x = bytearray(64 << 20)
assert lib.loom_alloctrack_live() - base >= 64 << 20
del x
assert lib.loom_alloctrack_live() - base < 1 << 20
assert lib.loom_alloctrack_peak() - base >= 64 << 20
PY
peak=$(awk '$1 == "peak_bytes" {print $2}' "$tmp/peak")
[ -n "$peak" ] && [ "$peak" -ge $((64 << 20)) ] || fail "tracker file: $(cat "$tmp/peak")"
echo "ok"
