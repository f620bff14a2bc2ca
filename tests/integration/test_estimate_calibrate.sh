#!/usr/bin/env bash
# loom estimate calibrate's plumbing: the command line, the template and
# script lookup, the arguments it passes, and that it checks the device
# file the calibration wrote. The calibration itself (PyTorch
# microbenchmarks, minutes) is not run here: LOOM_PYTHON names a stand-in
# interpreter that writes a device file from the template, as
# bench/estimate_calibrate.py --from does (bench/estimate.sh and
# bench/estimate_eval.sh run the real one).
set -euo pipefail
B=${LOOM_BUILD_DIR:?}
SRC=${LOOM_SOURCE_DIR:-.}
loom="$B/loom"
tmp=$(mktemp -d /tmp/loom-est-cal.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
export LOOM_DEVICE_DIR="$SRC/workloads/devices"
rc() { set +e; "$@" >"$tmp/out" 2>"$tmp/err"; echo $?; set -e; }

[ "$(rc "$loom" estimate calibrate)" = 2 ] || fail "no --out: not exit 2"
grep -q -- "--out DEVICE.json is required" "$tmp/err" || fail "no --out: message"
[ "$(rc "$loom" estimate calibrate --out "$tmp/d.json" extra)" = 2 ] || fail "extra argument: not 2"
"$loom" estimate calibrate --help | grep -q -- "--from" || fail "--help"
[ "$(rc "$loom" estimate calibrate --out "$tmp/d.json" --from nosuch)" = 4 ] || fail "missing template: not 4"
grep -q "nosuch.json" "$tmp/err" || fail "missing template: not named"
[ "$(rc env LOOM_CALIBRATE_SCRIPT="$tmp/none.py" "$loom" estimate calibrate --out "$tmp/d.json")" = 4 ] ||
  fail "missing script: not 4"
grep -q "none.py" "$tmp/err" || fail "missing script: not named"

# the stand-in: records its arguments, writes DEVICE from --from's file with the name set
: > "$tmp/script.py" # the stand-in interpreter does not read it
cat > "$tmp/py" <<EOF2
#!/usr/bin/env bash
echo "\$@" > "$tmp/args"
echo "OPENBLAS=\$OPENBLAS_NUM_THREADS OMP=\$OMP_NUM_THREADS" >> "$tmp/args"
case "\${STANDIN:-ok}" in
  fail) exit 7 ;;
  bad) echo '{"name": 5}' > "\$2"; exit 0 ;;
esac
python3 -c 'import json, sys; d = json.load(open(sys.argv[2])); d["name"] = sys.argv[3]; json.dump(d, open(sys.argv[1], "w"))' "\$2" "\$4" "\${6:-stem}"
EOF2
chmod +x "$tmp/py"
export LOOM_PYTHON="$tmp/py" LOOM_CALIBRATE_SCRIPT="$tmp/script.py"
"$loom" estimate calibrate --out "$tmp/host.json" --name myhost > "$tmp/out" || fail "calibrate: $(cat "$tmp/err")"
grep -q "wrote $tmp/host.json (device 'myhost')" "$tmp/out" || fail "summary: $(cat "$tmp/out")"
grep -q -- "$tmp/script.py $tmp/host.json --from $SRC/workloads/devices/cpu-local.json --name myhost --quick" "$tmp/args" ||
  fail "arguments: $(cat "$tmp/args")"
grep -q "OPENBLAS=1 OMP=1" "$tmp/args" || fail "not one thread: $(cat "$tmp/args")"
"$loom" estimate "$SRC/tests/fuzz/corpus/onnx/cnn.onnx" --batch 2 --device "$tmp/host.json" | grep -q "device myhost" ||
  fail "the written device does not load"
"$loom" estimate calibrate --out "$tmp/full.json" --name f --full > /dev/null || fail "--full"
grep -q -- "--quick" "$tmp/args" && fail "--full still passed --quick"
# a failing calibration: exit 1, said, nothing written; a bad file: exit 1
[ "$(rc env STANDIN=fail "$loom" estimate calibrate --out "$tmp/x.json")" = 1 ] || fail "failed script: not 1"
grep -q "x.json not written" "$tmp/err" || fail "failed script: message $(cat "$tmp/err")"
[ ! -e "$tmp/x.json" ] || fail "failed script: file written"
[ "$(rc env STANDIN=bad "$loom" estimate calibrate --out "$tmp/y.json")" = 1 ] || fail "bad file: not 1"
grep -q "wrote a bad file" "$tmp/err" || fail "bad file: message $(cat "$tmp/err")"
# the host (issue 36): the calibration is given this host as `loom estimate host` prints it,
# and a CPU device calibrated elsewhere (or recording no host) is warned about, naming
# what differs and the command that calibrates this host; the same host and a GPU device are not
unset LOOM_PYTHON LOOM_CALIBRATE_SCRIPT
host=$("$loom" estimate host) || fail "loom estimate host"
echo "$host" | python3 -c 'import json, sys; h = json.load(sys.stdin); assert set(h) == {"cpu_model", "isa", "blas", "threads"}, h' ||
  fail "loom estimate host: $host"
grep -qF -- "--host $host" "$tmp/args" || fail "calibrate did not pass --host: $(cat "$tmp/args")"
model="$SRC/tests/fuzz/corpus/onnx/cnn.onnx"
mkdev() { # FILE HOST-JSON|none
  python3 -c 'import json, sys
d = json.load(open(sys.argv[1]))
d.pop("host", None)
if sys.argv[3] != "none":
    d["host"] = json.loads(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"))' "$SRC/workloads/devices/cpu-local.json" "$1" "$2"
}
mkdev "$tmp/same.json" "$host"
"$loom" estimate "$model" --batch 2 --device "$tmp/same.json" > /dev/null 2> "$tmp/err" || fail "same host: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "same host warned: $(cat "$tmp/err")"
other=$(echo "$host" | python3 -c 'import json, sys; h = json.load(sys.stdin); h["cpu_model"] = "Intel(R) Xeon(R) Test"; h["blas"] = "reference"; print(json.dumps(h))')
mkdev "$tmp/other.json" "$other"
"$loom" estimate "$model" --batch 2 --device "$tmp/other.json" > /dev/null 2> "$tmp/err" || fail "other host: $(cat "$tmp/err")"
grep -q "warning: device '$tmp/other.json' was not calibrated on this host: CPU 'Intel(R) Xeon(R) Test', this host" "$tmp/err" ||
  fail "other host: no warning naming the CPU: $(cat "$tmp/err")"
grep -q "BLAS reference, this host" "$tmp/err" || fail "other host: BLAS not named: $(cat "$tmp/err")"
grep -q "loom estimate calibrate --full --out" "$tmp/err" || fail "other host: no command: $(cat "$tmp/err")"
mkdev "$tmp/nohost.json" none
"$loom" estimate "$model" --batch 2 --device "$tmp/nohost.json" --json > "$tmp/out" 2> "$tmp/err" || fail "no host: $(cat "$tmp/err")"
grep -q "records no host" "$tmp/err" || fail "no host: no warning: $(cat "$tmp/err")"
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/out" || fail "--json output spoiled by the warning"
"$loom" estimate "$model" --batch 2 --device h200 > /dev/null 2> "$tmp/err" || fail "h200: $(cat "$tmp/err")"
[ ! -s "$tmp/err" ] || fail "a GPU device warned: $(cat "$tmp/err")"
"$loom" estimate host --help | grep -q "instruction sets" || fail "loom estimate host --help"
[ "$(rc "$loom" estimate host extra)" = 2 ] || fail "loom estimate host extra: not 2"
echo ok
