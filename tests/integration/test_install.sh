#!/usr/bin/env bash
# loom outside its source tree: data (device files, templates, catalogs)
# found from the program's location, never the current directory; then an
# installed tree (cmake --install into a temporary prefix) used the same way.
set -euo pipefail
B=${LOOM_BUILD_DIR:?}
SRC=$(cd "${LOOM_SOURCE_DIR:-.}" && pwd)
tmp=$(mktemp -d /tmp/loom-install-it.XXXXXX)
pid=
cleanup() { [ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset LOOM_DEVICE_DIR LOOM_TEMPLATE_DIR LOOM_DATA_DIR
model="$SRC/tests/fuzz/corpus/onnx/cnn.onnx"
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" # no workloads/ here

# 1. the build tree's programs find the source tree's workloads/
"$B/loom" estimate "$model" --batch 2 > out.txt || fail "estimate from a build dir, run elsewhere"
grep -q 'device h200' out.txt || fail "estimate: no h200 device in $(cat out.txt)"
"$B/loom" gen --catalog "$SRC/workloads/catalogs/demo.json" --template-kind local --count 2 \
  --rate 100/s --seed 1 --stdout > jobs.txt 2> err.txt || fail "gen with the shipped local template: $(cat err.txt)"
grep -q '^#!/' jobs.txt || fail "gen: no script in $(head -5 jobs.txt)"
# LOOM_DATA_DIR is authoritative: a wrong one is a clear error naming it
set +e
LOOM_DATA_DIR="$tmp/none" "$B/loom" estimate "$model" --batch 2 > /dev/null 2> err.txt
rc=$?
set -e
[ $rc -ne 0 ] || fail "estimate with a missing LOOM_DATA_DIR succeeded"
grep -q "LOOM_DATA_DIR=$tmp/none" err.txt || fail "error does not name LOOM_DATA_DIR: $(cat err.txt)"


# 2. an installed tree: cmake --install into DESTDIR, used from elsewhere
D="$tmp/root"
DESTDIR="$D" cmake --install "$B" > install.log || fail "cmake --install: $(tail -5 install.log)"
pc=$(find "$D" -name loom.pc | head -1)
[ -n "$pc" ] || fail "no loom.pc installed"
prefix=$(sed -n 's/^prefix=//p' "$pc")
P="$D$prefix"
for f in bin/loom sbin/loomd include/loom/core.h share/loom/devices/h200.json \
         share/loom/templates/local.sh.mustache share/loom/catalogs/demo.json \
         share/man/man1/loom.1 share/man/man8/loomd.8 share/bash-completion/completions/loom \
         lib/systemd/system/loomd.service lib/systemd/system/loomd-multiuser.service \
         share/loom/prometheus/loom-rules.yml; do
  [ -e "$P/$f" ] || fail "not installed: $prefix/$f"
done
# libloom_cupti.so (built with CUDA only) goes to the library directory, not bin/
if [ -e "$B/libloom_cupti.so" ]; then
  [ ! -e "$P/bin/libloom_cupti.so" ] || fail "libloom_cupti.so installed in bin/"
  [ -n "$(find "$P" -path '*/lib*/libloom_cupti.so')" ] || fail "libloom_cupti.so not in lib/"
fi
lib=$(find "$P" -name libloom.so | head -1)
[ -n "$lib" ] || fail "no libloom.so installed"
"$P/bin/loom" estimate "$model" --batch 2 > out.txt || fail "installed loom estimate"
grep -q 'device h200' out.txt || fail "installed estimate: $(cat out.txt)"
"$P/bin/loom" gen --catalog "$P/share/loom/catalogs/demo.json" --template-kind local --count 2 \
  --rate 100/s --seed 1 --stdout > jobs.txt 2> err.txt || fail "installed gen: $(cat err.txt)"
man -l "$P/share/man/man1/loom.1" > /dev/null 2>&1 || fail "man loom.1 does not render"
man -l "$P/share/man/man8/loomd.8" > /dev/null 2>&1 || fail "man loomd.8 does not render"
bash -c "source '$P/share/bash-completion/completions/loom'; COMP_WORDS=('$P/bin/loom' est); COMP_CWORD=1; _loom; echo \${COMPREPLY[*]}" > comp.txt
grep -qx estimate comp.txt || fail "completion of 'est': $(cat comp.txt)"
bash -c "source '$P/share/bash-completion/completions/loom'; COMP_WORDS=('$P/bin/loom' estimate --bat); COMP_CWORD=2; _loom; echo \${COMPREPLY[*]}" > comp.txt
grep -qx -- --batch comp.txt || fail "completion of 'estimate --bat': $(cat comp.txt)"

# loom estimate calibrate runs the script make install shipped (share/loom/calibrate), not
# the source tree's bench/ and not the working directory's: LOOM_PYTHON=/bin/false makes the run
# fail at once, and the error names the script it ran. The script itself loads with the real
# python3 and torch (scripts/deps/test-zoo.txt): --help.
unset LOOM_CALIBRATE_SCRIPT LOOM_PYTHON
mkdir -p bench && echo 'raise SystemExit(9)' > bench/estimate_calibrate.py # a decoy in the cwd
cal="$P/share/loom/calibrate/estimate_calibrate.py"
cmp -s "$cal" "$SRC/bench/estimate_calibrate.py" || fail "not installed: $prefix/share/loom/calibrate/estimate_calibrate.py"
calibrate_ran() { # $1: loom; prints the script the calibration ran
  set +e
  LOOM_PYTHON=/bin/false "$1" estimate calibrate --out "$tmp/dev.json" > /dev/null 2> err.txt
  local rc=$?
  set -e
  [ $rc -eq 1 ] || fail "calibrate with LOOM_PYTHON=/bin/false: exit $rc, expected 1: $(cat err.txt)"
  sed -n 's|^loom estimate calibrate: /bin/false \(.*\) failed (exit 1).*|\1|p' err.txt
}
[ "$(calibrate_ran "$P/bin/loom")" = "$cal" ] || fail "installed calibrate ran: $(cat err.txt)"
[ "$(calibrate_ran "$B/loom")" = "$B/../bench/estimate_calibrate.py" ] || fail "build-tree calibrate ran: $(cat err.txt)"
[ ! -e "$tmp/dev.json" ] || fail "a failed calibration wrote its device file"
LOOM_DATA_DIR="$tmp/none" "$P/bin/loom" estimate calibrate --from "$P/share/loom/devices/cpu-local.json" \
  --out "$tmp/dev.json" > /dev/null 2> err.txt && fail "calibrate without its script succeeded"
grep -q "LOOM_DATA_DIR=$tmp/none" err.txt || fail "calibrate: the error does not name LOOM_DATA_DIR: $(cat err.txt)"
/usr/bin/python3 "$cal" --help > help.txt 2>&1 || fail "the installed calibration script: $(tail -3 help.txt)"
grep -q -- "--from" help.txt || fail "the installed calibration script's help: $(head -3 help.txt)"
rm -r bench

# a C program built against the installed tree with pkg-config
cat > prog.c <<'C'
#include <stdio.h>
#include <loom/core.h>
int main(void)
{
    uint64_t bytes = 0;
    char dir[4096];
    loom_err_t err;
    if (loom_parse_size("16GiB", &bytes, &err) || loom_data_path("devices", dir, sizeof dir, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    printf("%llu %s\n", (unsigned long long)bytes, dir);
    return 0;
}
C
san=
grep -q '^LOOM_SANITIZE:BOOL=ON' "$B/CMakeCache.txt" && san="-fsanitize=address,undefined"
export PKG_CONFIG_SYSROOT_DIR="$D" PKG_CONFIG_PATH=$(dirname "$pc")
pkg-config --exists loom || fail "pkg-config does not find loom"
${CC:-cc} $san -o prog prog.c $(pkg-config --cflags --libs loom) || fail "compile against the installed tree"
unset PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_PATH
libdir=$(dirname "$lib")
LD_LIBRARY_PATH="$libdir" ./prog > prog.txt || fail "prog: $(cat prog.txt)"
[ "$(cut -d' ' -f1 prog.txt)" = 17179869184 ] || fail "prog: 16GiB read as $(cat prog.txt)"
[ "$(realpath "$(cut -d' ' -f2 prog.txt)")" = "$(realpath "$P/share/loom/devices")" ] ||
  fail "prog: libloom.so did not find the installed devices: $(cat prog.txt)"

# the systemd unit verifies (ExecStart pointed at the installed loomd)
# (systemd-analyze and man come from scripts/deps/test-surfaces.txt)
for unit in loomd.service loomd-multiuser.service; do
  sed "s|ExecStart=$prefix|ExecStart=$P|" "$P/lib/systemd/system/$unit" > "$unit"
  systemd-analyze verify --man=no "$unit" > verify.txt 2>&1 || fail "systemd-analyze verify $unit: $(cat verify.txt)"
  [ ! -s verify.txt ] || fail "systemd-analyze verify $unit warns: $(cat verify.txt)"
done
# the shared mode's unit: root, --multi-user, and no setting that forbids
# becoming a job's owner (NoNewPrivileges would reach every job; an empty
# capability bounding set forbids setuid)
u=loomd-multiuser.service
grep -q '^ExecStart=.*/loomd --multi-user ' $u || fail "$u: ExecStart without --multi-user"
grep -q '^User=root$' $u || fail "$u: not run as root"
! grep -Eq '^(NoNewPrivileges=yes|CapabilityBoundingSet=$|RestrictSUIDSGID=yes)' $u ||
  fail "$u: hardening that forbids setuid to the jobs' owners"
grep -q '^CapabilityBoundingSet=.*CAP_SETUID.*CAP_SETGID' $u || fail "$u: bounding set lacks setuid"

# 3. loomd's configuration file: read, flags override it, errors name the line
cat > loomd.conf <<CONF
# test configuration
listen = none
state-dir = $tmp/st
gpus = 2
log-level = warn
CONF
start_loomd() {
  "$P/sbin/loomd" "$@" > loomd.log 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do [ -S "$tmp/st/loomd.sock" ] && LOOM_URL="unix:$tmp/st/loomd.sock" "$P/bin/loom" info > /dev/null 2>&1 && return; sleep 0.1; done
  fail "loomd did not start: $(cat loomd.log)"
}
stop_loomd() { kill -TERM "$pid"; wait "$pid" || true; pid=; }
gpus() { "$P/bin/loom" nodes --json | /usr/bin/python3 -c "import json,sys; n=json.load(sys.stdin); n=n.get('nodes', n); print(sum(x['gpus'] if isinstance(x['gpus'], int) else len(x['gpus']) for x in n))"; }
export LOOM_URL="unix:$tmp/st/loomd.sock"
LOOMD_CONFIG="$tmp/elsewhere/loomd.conf" start_loomd
[ "$(gpus)" = 2 ] || fail "config gpus = 2: loomd has $(gpus)"
stop_loomd
start_loomd --config "$tmp/elsewhere/loomd.conf" --gpus 3
[ "$(gpus)" = 3 ] || fail "--gpus 3 over the file's 2: loomd has $(gpus)"
stop_loomd
printf 'listen = none\nsockt = x\n' > bad.conf
set +e
"$P/sbin/loomd" --config bad.conf > bad.txt 2>&1
rc=$?
set -e
[ $rc -eq 2 ] || fail "bad config: exit $rc, expected 2"
grep -q "bad.conf:2: unknown key 'sockt'" bad.txt || fail "bad config message: $(cat bad.txt)"

# 4. loom finds the system loomd's socket when the user runs none
unset LOOM_URL
LOOM_SYSTEM_SOCKET="$tmp/st/loomd.sock" LOOMD_CONFIG="$tmp/elsewhere/loomd.conf" start_loomd
HOME="$tmp/home" LOOM_SYSTEM_SOCKET="$tmp/st/loomd.sock" "$P/bin/loom" info > info.txt ||
  fail "loom without LOOM_URL did not find the system socket"
set +e
HOME="$tmp/home" LOOM_SYSTEM_SOCKET="$tmp/none.sock" "$P/bin/loom" info > /dev/null 2>&1
rc=$?
set -e
[ $rc -eq 3 ] || fail "no loomd anywhere: exit $rc, expected 3 (cannot connect)"
stop_loomd

echo "PASS"
