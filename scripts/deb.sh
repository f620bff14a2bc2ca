#!/usr/bin/env bash
# Builds loom's Debian package from this tree, without debhelper:
#
#   scripts/deb.sh [OUTDIR]                        (default OUTDIR: build-deb/)
#   scripts/deb.sh --from-build BUILDDIR [OUTDIR]
#
# configures build-deb/cmake for PREFIX=/usr, builds, stages `cmake
# --install` in build-deb/root, writes DEBIAN/ (control with the shared
# library dependencies dpkg-shlibdeps finds, conffiles, maintainer scripts
# from dist/debian/, md5sums) and runs dpkg-deb. Prints the .deb's path.
# scripts/test-deb.sh installs it into a fresh root and uses it.
#
# --from-build packages an existing build (`make`'s build/) instead of
# building again: `cmake --install BUILDDIR --prefix /usr`, then the files
# that prefix puts elsewhere moved to the Debian layout (libdir, /etc) and
# loom.pc and loomd.service written for /usr: seconds, the same file list,
# control file and dependencies as the full build. The paths compiled in at
# configure time stay BUILDDIR's (loomd's default --config, the last-resort
# datadir, the datadir relative to libloom.so) unless BUILDDIR was
# configured with -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_INSTALL_SYSCONFDIR=/etc:
# a package to test the packaging with (integration.deb), not to release.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
from=
case ${1:-} in
-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
--from-build) ;;
-*) echo "deb.sh: unknown option '$1' (expected --from-build BUILDDIR, --help or an OUTDIR)" >&2; exit 2 ;;
esac
if [ "${1:-}" = --from-build ]; then
  [ -f "${2:-}/cmake_install.cmake" ] ||
    { echo "deb.sh: --from-build '${2:-}': expected a configured and built cmake build directory" >&2; exit 2; }
  from=$(cd "$2" && pwd)
  shift 2
fi
out=$(mkdir -p "${1:-$src/build-deb}" && cd "${1:-$src/build-deb}" && pwd)
bld="$out/cmake"
root="$out/root"
export CC=${CC:-clang}
gen=$(command -v ninja > /dev/null && echo "-G Ninja" || true)
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2> /dev/null || echo "$(uname -m)-linux-gnu")

# The full build: a tree configured for /usr, only what is installed built
# (no tests, benchmarks or fuzz targets).
build_for_usr() {
  cmake -S "$src" -B "$bld" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX=/usr \
        -DCMAKE_INSTALL_SYSCONFDIR=/etc > "$out/configure.log"
  local targets="loom_cli loomd loom-shepherd loom_shared loom_static loom_alloctrack"
  grep -q '^loom_cupti' <(cmake --build "$bld" --target help 2> /dev/null | sed 's/^\.\.\. //') &&
    targets="$targets loom_cupti"
  cmake --build "$bld" -j "${JOBS:-2}" --target $targets > "$out/build.log"
  rm -rf "$root"
  DESTDIR="$root" cmake --install "$bld" > "$out/install.log"
}

# An existing build installed under /usr; what its own prefix put
# elsewhere moved where the full build puts it.
install_from_build() {
  local libdir conf version
  var() { sed -n "s/^$1:[A-Z]*=//p" "$from/CMakeCache.txt"; }
  rm -rf "$root"
  DESTDIR="$root" cmake --install "$from" --prefix /usr > "$out/install.log"
  libdir=$(var CMAKE_INSTALL_LIBDIR)
  if [ "$libdir" != "lib/$multiarch" ]; then
    install -d "$root/usr/lib/$multiarch"
    mv "$root/usr/$libdir"/libloom* "$root/usr/$libdir/pkgconfig" "$root/usr/lib/$multiarch/"
  fi
  conf=$(find "$root" -path '*/etc/loom/loomd.conf' ! -path "$root/etc/loom/loomd.conf")
  if [ -n "$conf" ]; then
    install -d "$root/etc/loom"
    mv "$conf" "$root/etc/loom/"
    rmdir -p "$(dirname "$conf")" 2> /dev/null || true
  fi
  [ -f "$root/etc/loom/loomd.conf" ] || { echo "deb.sh: no loomd.conf in $from's install" >&2; exit 1; }
  [ "$(var CMAKE_INSTALL_PREFIX)" = /usr ] && return # its loom.pc and loomd.service are for /usr
  version=$(sed -n 's/^project(loom VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
  sed -e 's|@CMAKE_INSTALL_PREFIX@|/usr|' -e "s|@CMAKE_INSTALL_FULL_LIBDIR@|/usr/lib/$multiarch|" \
      -e 's|@CMAKE_INSTALL_FULL_INCLUDEDIR@|/usr/include|' -e 's|@LOOM_INSTALL_DATADIR@|/usr/share/loom|' \
      -e "s|@PROJECT_VERSION@|$version|" "$src/dist/loom.pc.in" > "$root/usr/lib/$multiarch/pkgconfig/loom.pc"
  for unit in loomd loomd-multiuser; do
    sed -e 's|@CMAKE_INSTALL_FULL_SBINDIR@|/usr/sbin|' -e 's|@LOOMD_CONFIG_DEFAULT@|/etc/loom/loomd.conf|' \
        "$src/dist/systemd/$unit.service.in" > "$root/usr/lib/systemd/system/$unit.service"
  done
  if grep -rq '@[A-Z_]*@' "$root/usr/lib/$multiarch/pkgconfig/loom.pc" "$root/usr/lib/systemd/system/"loomd*.service; then
    echo "deb.sh: a @VARIABLE@ of dist/loom.pc.in or loomd.service.in that --from-build does not fill" >&2
    exit 1
  fi
}

if [ -n "$from" ]; then install_from_build; else build_for_usr; fi
# Debian puts bash completions and systemd units under /usr/share and /lib.
find "$root" -name '*.a' -delete
strip --strip-unneeded "$root"/usr/bin/loom "$root"/usr/sbin/loomd "$root"/usr/sbin/loom-shepherd
find "$root/usr/lib" -name '*.so*' -type f -exec strip --strip-unneeded {} +
gzip -9n "$root"/usr/share/man/man1/loom.1 "$root"/usr/share/man/man8/loomd.8
install -d "$root/usr/share/doc/loom"
cp "$src/README.md" "$root/usr/share/doc/loom/"
[ -f "$src/LICENSE" ] && cp "$src/LICENSE" "$root/usr/share/doc/loom/copyright"

# the Python SDK, where Debian's python3 finds it
install -d "$root/usr/lib/python3/dist-packages"
cp -r "$src/python/loom" "$root/usr/lib/python3/dist-packages/"
find "$root/usr/lib/python3" -name __pycache__ -prune -exec rm -rf {} +

version=$(sed -n 's/^project(loom VERSION \([0-9.]*\).*/\1/p' "$src/CMakeLists.txt")
arch=$(dpkg --print-architecture)
# dpkg-shlibdeps needs a debian/control beside it; a throwaway one here.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debian"
printf 'Source: loom\n\nPackage: loom\nArchitecture: any\n' > "$tmp/debian/control"
elves=$(find "$root" -type f \( -perm -u+x -o -name '*.so*' \) -exec sh -c \
        'file -b "$1" | grep -q ELF && echo "$1"' _ {} \;)
deps=$(cd "$tmp" && dpkg-shlibdeps -O -l"$root/usr/lib" --ignore-missing-info $elves 2> /dev/null |
       sed -n 's/^shlibs:Depends=//p')

install -d "$root/DEBIAN"
cat > "$root/DEBIAN/control" <<CTRL
Package: loom
Version: $version
Architecture: $arch
Maintainer: loom developers <loom@localhost>
Installed-Size: $(du -sk "$root/usr" | cut -f1)
Depends: $deps, python3
Recommends: systemd
Suggests: prometheus, slurm-wlm
Section: admin
Priority: optional
Description: resource manager for deep-learning jobs on GPU machines
 loom schedules, runs and watches deep-learning training jobs on GPU
 machines and clusters: loomd (a durable job queue with scheduling
 policies, a local and a Slurm executor, JSON-RPC and Prometheus metrics),
 the loom command (submit, jobs, gen, sim, prof, mon, estimate),
 libloom with its headers and pkg-config file, and the Python SDK.
CTRL
echo /etc/loom/loomd.conf > "$root/DEBIAN/conffiles"
install -m 0755 "$src/dist/debian/postinst" "$src/dist/debian/postrm" "$root/DEBIAN/"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -print | sed 's|^\./||' | sort |
   xargs md5sum > DEBIAN/md5sums)
deb="$out/loom_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" > /dev/null
echo "$deb"
