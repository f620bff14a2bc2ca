#!/usr/bin/env bash
# For a session with a real NVIDIA GPU (none on the CI machine): runs the
# same GPU reads as tests/unit/test_mon_gpu.c against the real driver,
# compares them with nvidia-smi, and writes the snapshot that issue 4 asks
# to commit under docs/.
#
#   scripts/mon-gpu-check.sh [BUILD_DIR] [OUT_DIR]   (defaults: build, docs/gpu)
#
# Exit 0 when loom's readings agree with nvidia-smi, 1 otherwise, 3 when
# no NVML library can be loaded (not a GPU machine).
set -uo pipefail
build=${1:-build}
out=${2:-docs/gpu}
unset LOOM_NVML_LIB  # the driver found by the loader (LD_LIBRARY_PATH may name the double)
mkdir -p "$out"
snap=$("$build"/loom mon --groups gpu --json --interval 1s --count 2 | tail -1) || exit 1
if ! /usr/bin/python3 -c 'import json,sys; sys.exit(0 if json.loads(sys.argv[1])["gpu"]["available"] else 3)' "$snap"; then
  echo "mon-gpu-check: NVML not available here:"; echo "$snap" | head -c 400; echo
  exit 3
fi
stamp=$(date -u +%Y%m%dT%H%M%SZ)
echo "$snap" | /usr/bin/python3 -m json.tool > "$out/snapshot-$stamp.json"
"$build"/loom mon --groups gpu > "$out/snapshot-$stamp.txt"
"$build"/loom mon --groups gpu --prom > "$out/snapshot-$stamp.prom"
promtool check metrics < "$out/snapshot-$stamp.prom" || exit 1
command -v nvidia-smi >/dev/null || { echo "no nvidia-smi to compare with; snapshot in $out"; exit 0; }
smi=$(nvidia-smi --query-gpu=index,uuid,name,memory.total,memory.used,temperature.gpu,power.draw,clocks.sm,clocks.mem,mig.mode.current --format=csv,noheader,nounits)
/usr/bin/python3 - "$snap" "$smi" <<'PY'
import json, sys
snap = json.loads(sys.argv[1])["gpu"]["devices"]
bad = 0
for line in sys.argv[2].strip().splitlines():
    f = [x.strip() for x in line.split(",")]
    idx, uuid, name = int(f[0]), f[1], f[2]
    d = next((x for x in snap if x["uuid"] == uuid), None)
    def chk(cond, what):
        global bad
        print(("ok   " if cond else "FAIL ") + f"gpu {idx}: {what}")
        bad += not cond
    chk(d is not None, f"uuid {uuid} found")
    if d is None:
        continue
    chk(d["name"] == name, f"name {d['name']!r} == {name!r}")
    chk(d["memory_total_bytes"] == int(f[3]) * 1024 * 1024, "memory total (MiB)")
    chk(abs(d["memory_used_bytes"] - int(f[4]) * 1048576) <= 256 * 1048576, "memory used within 256 MiB")
    if d["temperature_celsius"] is not None and f[5] not in ("[N/A]", ""):
        chk(abs(d["temperature_celsius"] - float(f[5])) <= 3, "temperature within 3 C")
    if d["sm_clock_hertz"] is not None and f[7] not in ("[N/A]", ""):
        chk(d["sm_clock_hertz"] > 0, "sm clock > 0")
    chk(d["energy_watts"] is None or d["energy_watts"] >= 0, "power from energy >= 0")
sys.exit(1 if bad else 0)
PY
