#!/usr/bin/env bash
# Packs what a GPU machine lent through the device tool needs to run loom
# without building it: build/loom, libloom_cupti.so (the NVML test double
# left out), and every shared library they load that is not part of
# glibc (libjansson, libcurl and its TLS stack, libsqlite3, libcupti, ...),
# into .devcarry/ (ignored by git). The device machine's image has CUDA and
# PyTorch but not loom's Debian libraries; its glibc is newer, so binaries
# built here run there. loom and libloom_cupti.so get an RPATH of
# $ORIGIN/lib (patchelf), which the loader also uses for the libraries they
# pull in: no LD_LIBRARY_PATH, which would leak into the profiled Python
# and put Debian's libz or libssl under PyTorch.
#
#   scripts/device-pack.sh [BUILD_DIR]     then run with carry [".devcarry"]
set -euo pipefail
build=${1:-build}
command -v patchelf >/dev/null || { echo "device-pack: needs patchelf (apt-get install patchelf)"; exit 1; }
dst=.devcarry
rm -rf "$dst"
mkdir -p "$dst/lib"
cp "$build/loom" "$dst/"
[ -f "$build/libloom_cupti.so" ] && cp "$build/libloom_cupti.so" "$dst/"
for f in "$dst/loom" "$dst"/libloom_cupti.so; do
  [ -f "$f" ] || continue
  ldd "$f" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so.*|libm.so.*|libpthread.so.*|libdl.so.*|librt.so.*|libutil.so.*|libresolv.so.*|ld-linux*) ;;
      *) cp -L "$lib" "$dst/lib/" ;;
    esac
  done
done
for f in "$dst/loom" "$dst"/libloom_cupti.so; do
  [ -f "$f" ] && patchelf --force-rpath --set-rpath '$ORIGIN/lib' "$f"
done
grep -qx '/.devcarry/' .git/info/exclude 2>/dev/null || echo '/.devcarry/' >>.git/info/exclude
du -sh "$dst" | sed 's/^/device-pack: /'
