#!/usr/bin/env bash
# Builds loom's Debian package (scripts/deb.sh) and uses it outside the
# source tree: `loom estimate` of an ONNX model, `loom sim` of a small
# trace, and a job submitted to the installed loomd that runs to COMPLETED,
# plus the Python SDK from the installed files.
#
#   scripts/test-deb.sh            dpkg -x into a fresh directory; programs run
#                                  from it with this machine's libraries (seconds,
#                                  after the build)
#   scripts/test-deb.sh --chroot   a fresh Debian 12 root made with debootstrap
#                                  from Debian's archive; `apt-get install
#                                  ./loom.deb` there (dependencies from the
#                                  archive, maintainer scripts run), then the
#                                  same checks inside it (minutes; needs
#                                  debootstrap: scripts/deps.sh deb)
#
# DEB=path/to/loom.deb skips the build. `make test` runs the extract mode as
# integration.deb (tests/integration/test_deb.sh) on a package made in
# seconds with `scripts/deb.sh --from-build build/`; the full build (minutes
# on two cores) and --chroot (debootstrap, network) stay manual checks.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-extract}
case $mode in
-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
extract | --chroot) ;;
*) echo "test-deb.sh: unknown mode '$mode' (expected --chroot, --help or nothing)" >&2; exit 2 ;;
esac
work=$(mktemp -d /tmp/loom-deb-test.XXXXXX)
cleanup() {
  if [ -d "$work/root/proc" ] && mountpoint -q "$work/root/proc"; then umount "$work/root/proc"; fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

deb=${DEB:-$("$src/scripts/deb.sh" "${DEB_OUT:-$src/build-deb}" | tail -1)}
[ -f "$deb" ] || fail "no package built"
echo "package: $deb ($(du -k "$deb" | cut -f1) KiB)"
cp "$src/tests/fuzz/corpus/onnx/cnn.onnx" "$work/model.onnx"

# The checks, run with the installed tree at $R ("" in a chroot) and a
# working directory that holds no loom sources.
cat > "$work/checks.sh" <<'CHECKS'
set -euo pipefail
R=${1:-}
fail() { echo "FAIL: $*" >&2; exit 1; }
# nothing but the installed files: no overrides pointing at a source tree
unset LOOM_DATA_DIR LOOM_DEVICE_DIR LOOM_TEMPLATE_DIR LOOM_LIB LOOM_STATE_DIR
cd "$(mktemp -d /tmp/loomcheck.XXXXXX)"
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2> /dev/null; rm -rf "$PWD"' EXIT
cp "${MODEL:?}" model.onnx
"$R/usr/bin/loom" estimate model.onnx --batch 4 --train > est.txt || fail "loom estimate"
grep -q 'device h200' est.txt || fail "estimate: $(cat est.txt)"
echo "ok: loom estimate ($(grep -m1 params est.txt))"
printf 'sn,cpu_milli,memory_mib,gpu,model\nn0,8000,65536,2,V100\nn1,16000,65536,4,T4\n' > nodes.csv
printf '%s\n' 'name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time' \
  'p0,2000,1024,1,600,,LS,Running,0,100,0' 'p1,1000,1024,1,1000,,LS,Running,5,50,5' \
  'p2,2000,1024,2,1000,T4,LS,Running,9,90,9' > pods.csv
"$R/usr/bin/loom" sim --nodes nodes.csv --pods pods.csv --policy fgd,bestfit > sim.txt || fail "loom sim"
grep -q '^fgd ' sim.txt || fail "sim: $(cat sim.txt)"
echo "ok: loom sim"
"$R/usr/sbin/loomd" --config none --state-dir "$PWD/st" --listen none --gpus 1 --log-level warn \
  > loomd.log 2>&1 &
pid=$!
export LOOM_URL="unix:$PWD/st/loomd.sock"
for _ in $(seq 1 100); do "$R/usr/bin/loom" info > /dev/null 2>&1 && break; sleep 0.1; done
printf '#!/bin/sh\necho hello from the package\n' > job.sh
id=$("$R/usr/bin/loom" submit job.sh --gpus 1 --time 1m | awk '{print $NF}') || fail "submit: $(cat loomd.log)"
state=
for _ in $(seq 1 200); do
  state=$("$R/usr/bin/loom" show "$id" --json | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
  case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT) break ;; esac
  sleep 0.1
done
[ "$state" = COMPLETED ] || fail "job $id ended $state: $("$R/usr/bin/loom" show "$id")"
echo "ok: a job submitted to the installed loomd COMPLETED"
PYTHONPATH="$R/usr/lib/python3/dist-packages" LD_LIBRARY_PATH="$R/usr/lib/$(uname -m)-linux-gnu" \
  /usr/bin/python3 -c 'import loom, os, sys; c = loom.Client(os.environ["LOOM_URL"]); j = c.get(int(sys.argv[1])); assert j.state == "COMPLETED"; assert "hello" in c.logs(j.id); assert loom.monitor.Monitor().snapshot("memory")["memory"]["total_bytes"] > 0; libs = {l.split()[-1] for l in open("/proc/self/maps") if "libloom.so" in l}; assert loom.__file__.startswith(os.path.realpath(sys.argv[2] or "/")), loom.__file__; assert libs == {os.path.realpath(sys.argv[2] + "/usr/lib/" + sys.argv[3] + "/libloom.so.0")}, libs; print("ok: the Python SDK (client, monitor) from", loom.__file__)' "$id" "$R" "$(uname -m)-linux-gnu"
kill -TERM $pid; wait $pid || true; pid=
CHECKS

case $mode in
extract)
  dpkg -x "$deb" "$work/root"
  MODEL="$work/model.onnx" bash "$work/checks.sh" "$work/root"
  ;;
--chroot)
  command -v debootstrap > /dev/null || fail "debootstrap missing (scripts/deps.sh deb)"
  echo "debootstrap: a fresh bookworm root from deb.debian.org (minutes)"
  debootstrap --variant=minbase bookworm "$work/root" http://deb.debian.org/debian > "$work/debootstrap.log" 2>&1 ||
    fail "debootstrap: $(tail -5 "$work/debootstrap.log")"
  cp "$deb" "$work/root/tmp/loom.deb"
  cp "$work/model.onnx" "$work/checks.sh" "$work/root/tmp/"
  mount -t proc proc "$work/root/proc"
  chroot "$work/root" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /tmp/loom.deb' \
    > "$work/apt.log" 2>&1 || fail "apt-get install ./loom.deb in the chroot: $(tail -20 "$work/apt.log")"
  chroot "$work/root" getent passwd loom > /dev/null || fail "postinst made no loom user"
  chroot "$work/root" env MODEL=/tmp/model.onnx bash /tmp/checks.sh ""
  ;;
*) fail "unknown mode '$mode' (expected --chroot or nothing)" ;;
esac
echo "PASS ($mode)"
