"""Hardware metrics from libloom's mon part, as plain Python objects.

    from loom import monitor
    m = monitor.Monitor()                 # loads libloom.so
    snap = m.snapshot("cpu,memory")      # dict: {"cpu": {...}, "memory": {...}}
    snap["memory"]["total_bytes"]
    m.process(os.getpid(), tree=True)    # CPU seconds, RSS, I/O, threads, ...
    m.cgroup("/sys/fs/cgroup/my.slice")  # cpu.stat, memory.current/peak, io.stat, PSI
    with m.sampler("cpu,net") as s:      # rates need two readings; the sampler
        time.sleep(1)                    # keeps the previous one for you
        s.next()["cpu"]["busy_fraction"]

Each call returns the same JSON that `loom mon --json` prints (documented in
docs/monitoring.md), decoded with json.loads. A source that is absent on the
machine is {"available": False, "reason": "..."}.

libloom.so is found at $LOOM_LIB (a path to the library), else in build/
next to this source tree, else as libloom.so.0 by the dynamic loader (an
installed loom). The binding talks to libloom through a handful of
functions that return JSON text (loom_mon_json_*), so it does not mirror C
structs and cannot fall out of step with them.
"""

import ctypes
import json
import os
from typing import Any, Dict, Iterable, Optional, Union

Reading = Dict[str, Any]
"""One reading: the JSON `loom mon --json` prints, decoded (docs/monitoring.md)."""
Groups = Union[str, Iterable[str], None]
"""Metric groups: "cpu,memory,..." or a list of them, "host" or "all" (None: all)."""

__all__ = ["Monitor", "Sampler", "MonitorError", "snapshot", "process", "cgroup"]


class MonitorError(RuntimeError):
    """A libloom call failed; the message is libloom's."""


def _find_lib() -> str:
    path = os.environ.get("LOOM_LIB")
    if path:
        return path
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(here, "..", "..", "build", "libloom.so")
    if os.path.exists(tree):
        return tree
    return "libloom.so.0"  # installed (make install): the dynamic loader finds it


_lib: Optional[ctypes.CDLL] = None


def _load() -> ctypes.CDLL:
    global _lib
    if _lib is not None:
        return _lib
    lib = ctypes.CDLL(_find_lib())
    vp, cp, sz = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t
    out = ctypes.POINTER(ctypes.c_void_p)
    lib.loom_mon_json_open.argtypes = [out, cp, sz]
    lib.loom_mon_close.argtypes = [vp]
    lib.loom_mon_close.restype = None
    lib.loom_mon_json_snapshot.argtypes = [vp, cp, out, cp, sz]
    lib.loom_mon_json_proc.argtypes = [vp, ctypes.c_int, ctypes.c_int, out, cp, sz]
    lib.loom_mon_json_cgroup.argtypes = [vp, cp, out, cp, sz]
    lib.loom_mon_json_sampler_open.argtypes = [vp, cp, out, cp, sz]
    lib.loom_mon_json_sampler_next.argtypes = [vp, out, cp, sz]
    lib.loom_mon_sampler_close.argtypes = [vp]
    lib.loom_mon_sampler_close.restype = None
    lib.loom_mon_free.argtypes = [vp]
    lib.loom_mon_free.restype = None
    for f in ("loom_mon_json_open", "loom_mon_json_snapshot", "loom_mon_json_proc",
              "loom_mon_json_cgroup", "loom_mon_json_sampler_open",
              "loom_mon_json_sampler_next"):
        getattr(lib, f).restype = ctypes.c_int
    _lib = lib
    return lib


def _call(fn: Any, *args: Any) -> Reading:
    """Calls a loom_mon_json_* function whose last three parameters are
    (char **json, char *errbuf, size_t errlen); returns the decoded JSON."""
    text = ctypes.c_void_p()
    err = ctypes.create_string_buffer(1024)
    rc = fn(*args, ctypes.byref(text), err, len(err))
    if rc != 0:
        raise MonitorError(err.value.decode("utf-8", "replace"))
    try:
        reading: Reading = json.loads(ctypes.string_at(text.value or 0).decode("utf-8"))
        return reading
    finally:
        _load().loom_mon_free(text)


def _groups(groups: Groups) -> bytes:
    if groups is None:
        return b"all"
    if not isinstance(groups, str):
        groups = ",".join(groups)
    return groups.encode()


class Monitor:
    """A collector: keeps /proc and /sys files open between readings."""

    def __init__(self) -> None:
        lib = _load()
        self._m = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        if lib.loom_mon_json_open(ctypes.byref(self._m), err, len(err)) != 0:
            raise MonitorError(err.value.decode("utf-8", "replace"))

    def close(self) -> None:
        if self._m:
            _load().loom_mon_close(self._m)
            self._m = ctypes.c_void_p()

    def __enter__(self) -> "Monitor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def snapshot(self, groups: Groups = None) -> Reading:
        """One reading: groups is "cpu,memory,..." (or a list), "host" or "all"."""
        return _call(_load().loom_mon_json_snapshot, self._m, _groups(groups))

    def process(self, pid: int, tree: bool = False) -> Reading:
        """CPU seconds, RSS, I/O bytes, threads, context switches of pid
        (and its descendants if tree)."""
        return _call(_load().loom_mon_json_proc, self._m, int(pid), 1 if tree else 0)

    def cgroup(self, path: str) -> Reading:
        """A cgroup v2 directory (absolute, or relative to the cgroup2 mount)."""
        return _call(_load().loom_mon_json_cgroup, self._m, path.encode())

    def sampler(self, groups: Groups = None) -> "Sampler":
        return Sampler(self, groups)


class Sampler:
    """Takes a reading now; each next() reads again and adds rates
    (busy_fraction, *_per_second, watts) over the interval since the last."""

    def __init__(self, monitor: Monitor, groups: Groups = None) -> None:
        self._monitor = monitor  # keeps the collector alive
        self._s = ctypes.c_void_p()
        err = ctypes.create_string_buffer(1024)
        rc = _load().loom_mon_json_sampler_open(monitor._m, _groups(groups),
                                             ctypes.byref(self._s), err, len(err))
        if rc != 0:
            raise MonitorError(err.value.decode("utf-8", "replace"))

    def next(self) -> Reading:
        return _call(_load().loom_mon_json_sampler_next, self._s)

    def close(self) -> None:
        if self._s:
            _load().loom_mon_sampler_close(self._s)
            self._s = ctypes.c_void_p()

    def __enter__(self) -> "Sampler":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


_default: Optional[Monitor] = None


def _mon() -> Monitor:
    global _default
    if _default is None:
        _default = Monitor()
    return _default


def snapshot(groups: Groups = None) -> Reading:
    return _mon().snapshot(groups)


def process(pid: int, tree: bool = False) -> Reading:
    return _mon().process(pid, tree)


def cgroup(path: str) -> Reading:
    return _mon().cgroup(path)
