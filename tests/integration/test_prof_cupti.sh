#!/usr/bin/env bash
# The CUPTI tracer (src/prof/cupti): built exactly when the CUDA toolkit with
# CUPTI is present; loaded the way the CUDA driver loads
# CUDA_INJECTION64_PATH, it fails gracefully where no GPU driver is (a clear
# message, a status file naming the CUPTI call and error, the program goes
# on) and starts tracing where one is.
set -uo pipefail
build=${LOOM_BUILD_DIR:?}
cuda=${LOOM_CUDA_ROOT:-/usr/local/cuda}
lib=$build/libloom_cupti.so
tmp=$(mktemp -d /tmp/loom-test-cupti-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*"; fail=1; }

have_cupti=0
{ [ -f "$cuda/include/cupti_activity.h" ] && ls "$cuda"/lib*/libcupti.so* >/dev/null 2>&1; } &&
  have_cupti=1
if [ "$have_cupti" = 0 ]; then
  [ ! -e "$lib" ] || die "libloom_cupti.so built without CUPTI under $cuda"
  out=$("$build/loom" prof --kernels -- true 2>&1) && die "--kernels without the tracer succeeded"
  grep -q "CUPTI tracer .* is missing" <<<"$out" || die "unclear message: $out"
  [ "$fail" = 0 ] && echo "ok (no CUPTI here: tracer not built, --kernels refuses clearly)"
  exit $fail
fi

[ -f "$lib" ] || { echo "FAIL: CUPTI is under $cuda but $lib was not built"; exit 1; }
nm -D --defined-only "$lib" | grep -q ' T InitializeInjection$' ||
  die "InitializeInjection is not exported"

# Without LOOM_CUPTI_OUT: refuses, says why.
err=$(env -u LOOM_CUPTI_OUT ASAN_OPTIONS=detect_leaks=0 "$build/prof_cupti_probe" "$lib" 2>&1)
grep -q "InitializeInjection=0" <<<"$err" || die "no-output case did not return 0: $err"
grep -q "LOOM_CUPTI_OUT is not set" <<<"$err" || die "no-output case unexplained: $err"

# With it. libcupti keeps allocations until exit: leak checking is for our code.
out=$(LOOM_CUPTI_OUT="$tmp/k.csv" ASAN_OPTIONS=detect_leaks=0 \
      "$build/prof_cupti_probe" "$lib" 2>"$tmp/stderr")
rc=$?
[ "$rc" = 0 ] || die "the probe (standing in for a CUDA program) exited $rc: $(cat "$tmp/stderr")"
head -1 "$tmp/k.csv" | grep -qx 'kind,start_ns,end_ns,bytes,device,stream,name' ||
  die "record file lacks its header"
if [ -e /dev/nvidiactl ] || [ -e /proc/driver/nvidia/version ]; then
  grep -q "InitializeInjection=1" <<<"$out" || die "driver present but tracing failed: $(cat "$tmp/stderr")"
  grep -q "^ok records=" "$tmp/k.csv.status" || die "status: $(cat "$tmp/k.csv.status")"
else
  grep -q "InitializeInjection=0" <<<"$out" || die "no driver, yet InitializeInjection said $out"
  grep -q "^error: cuptiActivity.* failed: CUPTI_ERROR_[A-Z_]* ([0-9]*)" "$tmp/k.csv.status" ||
    die "status does not name the CUPTI call and error: $(cat "$tmp/k.csv.status")"
  grep -q "kernels are not traced" "$tmp/stderr" || die "stderr message missing: $(cat "$tmp/stderr")"
  echo "graceful failure: $(cat "$tmp/k.csv.status")"
fi
[ "$fail" = 0 ] && echo ok
exit $fail
