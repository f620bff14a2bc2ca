#!/usr/bin/env bash
# The Debian package, cheaply: scripts/deb.sh --from-build packages the
# release build `make test` already made (LOOM_PLAIN_BUILD_DIR; the
# sanitized build could not be packaged: libasan, and ctypes cannot load
# it), this checks the package's layout and control file, then
# scripts/test-deb.sh unpacks it into a fresh directory and runs, from the
# unpacked files and outside the source tree, `loom estimate`, `loom sim`,
# a job submitted to the packaged loomd that must reach COMPLETED, and the
# Python SDK. No network and no apt (dpkg-deb, dpkg-shlibdeps and file come
# from scripts/deps/test-deb.txt); the debootstrap check stays manual
# (scripts/test-deb.sh --chroot, docs/install.md).
set -euo pipefail
SRC=$(cd "${LOOM_SOURCE_DIR:-.}" && pwd)
P=${LOOM_PLAIN_BUILD_DIR:-}
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -n "$P" ] && [ -x "$P/loomd" ] ||
  fail "LOOM_PLAIN_BUILD_DIR with a built release tree is required (make test builds build/)"
tmp=$(mktemp -d /tmp/loom-deb-it.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

"$SRC/scripts/deb.sh" --from-build "$P" "$tmp/pkg" > "$tmp/deb.out" 2>&1 ||
  fail "deb.sh --from-build $P: $(tail -5 "$tmp/deb.out")"
deb=$(tail -1 "$tmp/deb.out")
[ -f "$deb" ] || fail "deb.sh printed no package: $(cat "$tmp/deb.out")"

# The layout the full build (scripts/deb.sh without --from-build) makes.
ma=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || echo "$(uname -m)-linux-gnu")
dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./||' > "$tmp/files"
for f in usr/bin/loom usr/sbin/loomd usr/sbin/loom-shepherd usr/lib/$ma/libloom.so \
         usr/lib/$ma/libloom.so.0 usr/lib/$ma/libloom_alloctrack.so usr/lib/$ma/pkgconfig/loom.pc \
         usr/include/loom/core.h usr/share/loom/devices/h200.json usr/share/loom/catalogs/demo.json \
         usr/share/loom/prometheus/loom-rules.yml usr/share/man/man1/loom.1.gz \
         usr/share/man/man8/loomd.8.gz usr/share/bash-completion/completions/loom \
         usr/lib/systemd/system/loomd.service usr/lib/sysusers.d/loom.conf etc/loom/loomd.conf \
         usr/lib/python3/dist-packages/loom/__init__.py usr/lib/python3/dist-packages/loom/py.typed \
         usr/share/doc/loom/README.md; do
  grep -qx "$f" "$tmp/files" || fail "not in the package: /$f"
done
! grep -E '\.a$|__pycache__|^usr/local|^usr/lib/libloom' "$tmp/files" ||
  fail "files the package must not hold (above)"
dpkg-deb -f "$deb" Package | grep -qx loom || fail "control: Package"
dpkg-deb -f "$deb" Depends > "$tmp/depends"
for d in libc6 libjansson4 libsqlite3-0 libcurl4 libmicrohttpd12 libyaml-0-2 python3; do
  grep -qE "(^|, )$d( |,|$)" "$tmp/depends" || fail "Depends lacks $d: $(cat "$tmp/depends")"
done
# grep without -q reads its whole input: with pipefail, grep -q leaving
# early would fail the pipeline on tar's SIGPIPE, at random (seen under load).
dpkg-deb --ctrl-tarfile "$deb" | tar -xO ./conffiles | grep -x /etc/loom/loomd.conf >/dev/null ||
  fail "conffiles does not name /etc/loom/loomd.conf"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/$ma/pkgconfig/loom.pc > "$tmp/loom.pc"
grep -qx 'prefix=/usr' "$tmp/loom.pc" && grep -qx "libdir=/usr/lib/$ma" "$tmp/loom.pc" ||
  fail "loom.pc is not for /usr: $(cat "$tmp/loom.pc")"
dpkg-deb --fsys-tarfile "$deb" | tar -xO ./usr/lib/systemd/system/loomd.service |
  grep -x 'ExecStart=/usr/sbin/loomd --config /etc/loom/loomd.conf --socket /run/loom/loomd.sock' >/dev/null ||
  fail "loomd.service does not run /usr/sbin/loomd with /etc/loom/loomd.conf"
echo "ok: the package's layout, control file, conffiles, loom.pc and loomd.service"

# The installed programs at work (extract mode).
DEB="$deb" "$SRC/scripts/test-deb.sh"
