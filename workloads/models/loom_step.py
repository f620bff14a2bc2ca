"""Step markers for `loom prof` (protocol: docs/profiling.md).

A workload tells the profiler where each training or inference step began
and ended with one line per step:

    LOOM_STEP <step> <start_ns> <end_ns> [key=value ...]

times on CLOCK_MONOTONIC in nanoseconds (Python's time.monotonic_ns()), and
once, before the first step, an optional description:

    LOOM_META key=value ...

When `loom prof` runs the workload it sets LOOM_PROF_FD to a file
descriptor it reads; lines go there and stdout stays the workload's own.
Without it (run by hand, or under any tool that reads stdout) they go to
stdout, which `loom prof` also scans. Standard library only.
"""

import os
import re
import sys
import time

ENV_FD = "LOOM_PROF_FD"
_KEY = re.compile(r"^[a-z][a-z0-9_]{0,31}$")
_VALUE = re.compile(r"^[!-~]{1,128}$")  # printable ASCII, no space


def now_ns() -> int:
    return time.monotonic_ns()


class StepReporter:
    """Writes markers to $LOOM_PROF_FD if it names an open descriptor, else
    to stdout (flushed per line, so a pipe sees each marker at once)."""

    def __init__(self, stream=None):
        self.fd = None
        text = os.environ.get(ENV_FD)
        if text is not None and stream is None:
            try:
                fd = int(text)
                os.fstat(fd)
                self.fd = fd
            except (ValueError, OSError) as e:
                print(f"loom_step: {ENV_FD}={text!r} is not an open descriptor ({e}); "
                      "writing markers to stdout", file=sys.stderr)
        self.stream = stream or sys.stdout

    def _emit(self, line: str):
        data = (line + "\n").encode("ascii")
        if self.fd is not None:
            # One write per line: a pipe write under PIPE_BUF bytes is atomic.
            os.write(self.fd, data)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()

    @staticmethod
    def _fields(kv) -> str:
        out = []
        for k, v in kv.items():
            v = str(v)
            if not _KEY.match(k) or not _VALUE.match(v):
                raise ValueError(f"loom_step: bad field {k}={v!r} (key [a-z][a-z0-9_]*, "
                                 "value printable ASCII without spaces)")
            out.append(f" {k}={v}")
        return "".join(out)

    def meta(self, **kv):
        self._emit("LOOM_META" + self._fields(kv))

    def step(self, n: int, start_ns: int, end_ns: int, **kv):
        """Reports step n (0-based) from start_ns to end_ns. Known keys:
        items (samples processed), data_ns (input preparation inside the
        step), copy_ns (host-device copies inside the step), cpu_ns (the
        process's CPU time over the step: time.process_time_ns())."""
        if n < 0 or end_ns < start_ns:
            raise ValueError(f"loom_step: bad step {n} [{start_ns}, {end_ns}]")
        self._emit(f"LOOM_STEP {n} {start_ns} {end_ns}" + self._fields(kv))
