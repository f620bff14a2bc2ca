"""loom.Client: jobs on loomd from Python, written from docs/protocol.md with
the standard library only (JSON-RPC 2.0 over HTTP/1.1, on loomd's Unix socket
or TCP with the bearer token).

    import loom
    with loom.Client() as c:                      # finds loomd as `loom` does
        r = c.submit(file="train.sh", gpus=1, time="1h", labels={"team": "nlp"})
        job = c.wait(r.id, timeout=3600)         # a loom.Job dataclass
        print(job.state, job.run.outcome.exit_code, c.logs(r.id))

Every JSON-RPC error becomes a loom.RpcError subclass carrying the error
object (loom.errors). Results are dataclasses (loom.types)."""

import datetime
import http.client
import json
import math
import os
import socket
import threading
import time as _time
import uuid

from . import errors
from .errors import LoomError, NotSupported, TransportError, WaitTimeout
from .types import TERMINAL_STATES, Job, Node, ServerInfo, SubmitResult

__all__ = ["Client", "default_url", "SYSTEM_SOCKET"]

SYSTEM_SOCKET = "/run/loom/loomd.sock"
_MAX_IDLE = 4  # keep-alive connections kept per Client
_WAIT_CHUNK = 20  # seconds loomd holds one job.wait / following job.logs call (max 30)
_LOG_PAGE = 1 << 20  # job.logs max_bytes (its limit)


def _state_dir():
    d = os.environ.get("LOOM_STATE_DIR")
    if d:
        return d
    return os.path.join(os.path.expanduser("~"), ".local", "state", "loom")


def default_url():
    """loomd's address as the loom CLI finds it: $LOOM_URL, else
    unix:$LOOM_STATE_DIR/loomd.sock; with LOOM_STATE_DIR unset and no loomd
    of the user's own, the system loomd's socket if it exists."""
    url = os.environ.get("LOOM_URL")
    if url:
        return url
    own = os.path.join(_state_dir(), "loomd.sock")
    system = os.environ.get("LOOM_SYSTEM_SOCKET") or SYSTEM_SOCKET
    if not os.environ.get("LOOM_STATE_DIR") and not os.path.exists(own) and os.path.exists(system):
        return "unix:" + system
    return "unix:" + own


def _default_token():
    tok = os.environ.get("LOOM_TOKEN")
    if tok:
        return tok
    try:
        with open(os.path.join(_state_dir(), "token")) as f:
            return f.read().strip()
    except OSError:
        return None


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


def _seconds(v, what):
    """A duration for the protocol: int seconds, a string loomd parses, or a timedelta."""
    if isinstance(v, str) and v.strip().isdigit():
        raise TypeError(f"{what}: {v!r} is ambiguous (seconds here, minutes to sbatch): give an "
                        f"int of seconds or a unit, e.g. '{v.strip()}m' or '{v.strip()}s'")
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if isinstance(v, (int, float)) and v >= 0:
        return int(-(-v // 1))  # whole seconds, rounded up as loomd does
    raise TypeError(f"{what}: expected seconds, a duration string or a timedelta, got {v!r}")


def _dependency(v):
    """options.dependency: sbatch's string as is; job ids (or SubmitResults,
    Jobs) mean afterok on all of them."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, (int, SubmitResult, Job)):
        v = [v]
    ids = [str(int(getattr(x, "id", x))) for x in v]
    if not ids:
        raise ValueError("dependency: an empty list of jobs")
    return "afterok:" + ":".join(ids)


def _env(v):
    """options.env: a dict or "NAME=VALUE" strings."""
    if v is None or isinstance(v, (list, tuple)):
        return None if v is None else list(v)
    return [f"{k}={val}" for k, val in v.items()]


def _milli(v):
    """gpu_share: a float fraction of one GPU (0.25), an int in milli-GPU (250) or "250m"."""
    if v is None or isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and 0 < v <= 1:
        return int(round(v * 1000))
    if isinstance(v, str) and v.endswith("m") and v[:-1].isdigit():
        return int(v[:-1])
    raise ValueError(f"gpu_share: expected a fraction in (0, 1], milli-GPU as an int, or '250m'; "
                     f"got {v!r}")


class Client:
    """A connection to loomd (kept alive between calls; safe to share
    between threads: calls are serialised).

    url: http://HOST:PORT or unix:PATH (default: default_url()); token: the
    bearer token for TCP (default $LOOM_TOKEN, else the state directory's
    token file); timeout: seconds per HTTP exchange."""

    def __init__(self, url=None, token=None, timeout=30.0):
        self.url = url or default_url()
        if not (self.url.startswith("unix:") or self.url.startswith("http://")):
            raise ValueError(f"loomd url '{self.url}': expected http://HOST:PORT or unix:PATH")
        self.token = token if token is not None else (
            None if self.url.startswith("unix:") else _default_token())
        self.timeout = timeout
        self._idle = []  # keep-alive connections not in use
        self._lock = threading.Lock()
        self._next_id = 1
        self._methods = None

    # ------------------------------------------------------------ transport
    def _connect(self):
        if self.url.startswith("unix:"):
            return _UnixHTTPConnection(self.url[5:], self.timeout)
        hostport = self.url.split("://", 1)[1].split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        return http.client.HTTPConnection(host.strip("[]"), int(port), timeout=self.timeout)

    def close(self):
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _take(self):
        """An idle keep-alive connection (fresh=False) or a new one."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), False
        return self._connect(), True

    def _give(self, conn):
        with self._lock:
            if len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def _exchange(self, method, path, body, wait=0):
        """One HTTP exchange on a connection of its own (calls from several
        threads run side by side; a long-poll holds only its connection).
        wait: seconds loomd may hold the call, added to the read timeout."""
        headers = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token and not self.url.startswith("unix:"):
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (1, 2):
            conn, fresh = self._take()
            try:
                if conn.sock is None:
                    conn.connect()
                conn.sock.settimeout(self.timeout + wait)
                conn.request(method, path, body=body, headers=headers)
                r = conn.getresponse()
                data = r.read()
                if (r.getheader("Connection") or "").lower() == "close":
                    conn.close()
                else:
                    self._give(conn)
                return r.status, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                # loomd closed an idle keep-alive connection: the request was
                # not read; send it once more on a new connection.
                conn.close()
                if fresh or attempt == 2:
                    raise TransportError(self.url, str(e) or type(e).__name__) from e
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                raise TransportError(self.url, str(e) or type(e).__name__) from e
        raise AssertionError("unreachable")

    def call(self, method, params=None, wait=0):
        """One JSON-RPC call; returns its result or raises loom.RpcError.
        wait: seconds a long-poll method (job.wait, job.logs) may be held."""
        with self._lock:
            req = {"jsonrpc": "2.0", "method": method, "id": self._next_id}
            self._next_id += 1
        if params is not None:
            req["params"] = params
        status, data = self._exchange("POST", "/rpc", json.dumps(req).encode(), wait)
        if status in (401, 403):
            raise errors.AuthError(status, data)
        if status != 200:
            raise errors.HttpError(status, data)
        try:
            resp = json.loads(data)
        except ValueError as e:
            raise LoomError(f"{method}: loomd answered with malformed JSON: {e}") from e
        if "error" in resp:
            raise errors.rpc_error(resp["error"], method)
        return resp["result"]

    def metrics(self):
        """GET /metrics: Prometheus text exposition."""
        status, data = self._exchange("GET", "/metrics", None)
        if status != 200:
            raise (errors.AuthError if status in (401, 403) else errors.HttpError)(status, data)
        return data.decode()

    # -------------------------------------------------------------- methods
    def info(self):
        """server.info as a loom.ServerInfo."""
        info = ServerInfo.from_json(self.call("server.info"))
        self._methods = set(info.methods)
        return info

    def submit(self, script=None, *, file=None, name=None, format=None, cpus=None, memory=None,
               gpus=None, gpu_share=None, gpu_memory=None, gpu_type=None, time=None,
               priority=None, labels=None, submit_id=None, model=None, array=None,
               dependency=None, hold=None, begin=None, workdir=None, output=None, error=None,
               env=None, account=None, comment=None, options=None, **extra):
        """job.submit: the job's script text (script=) or a file's (file=),
        with its resources. Sizes are bytes or strings ("16GiB"); time is
        seconds, "1h30m" or a timedelta; gpu_share a fraction (0.25), milli-GPU
        (250) or "250m".

        job.submit's `options` (docs/protocol.md): array ("0-9%2", sbatch's
        --array), dependency (sbatch's --dependency string, or job ids /
        SubmitResults meaning afterok on all of them), hold (bool), begin,
        workdir, output, error, env (a dict or "NAME=VALUE" strings), account,
        comment; options: further members as a dict. workdir defaults to the
        current directory, as sbatch's: the job runs there and writes
        loom-%j.out there (workdir=False sends none: a personal loomd then
        runs the job in its job directory, a multi-user one in the owner's
        home). time is seconds (an int or a timedelta) or a string with units
        ("1h30m"); a bare number string is refused as ambiguous (sbatch
        reads "30" as minutes). extra: further job.submit
        parameters. A random submit_id is set unless given, so the call is safe
        to repeat. Returns a loom.SubmitResult (with `array` for an array)."""
        if (script is None) == (file is None):
            raise TypeError("submit: give either script (the text) or file (a path)")
        if file is not None:
            with open(file, encoding="utf-8") as f:
                script = f.read()
            name = name or os.path.basename(file)
            if format is None and file.endswith((".yaml", ".yml")):
                format = "yaml"
        if isinstance(script, bytes):
            script = script.decode("utf-8")
        params = {"name": name or "job", "script": script,
                  "submit_id": submit_id or "py-" + uuid.uuid4().hex}
        res = {k: v for k, v in (("cpus", cpus), ("memory", memory), ("gpus", gpus),
                                 ("gpu_share", _milli(gpu_share)), ("gpu_memory", gpu_memory),
                                 ("gpu_type", gpu_type)) if v is not None}
        if res:
            params["resources"] = res
        for k, v in (("format", format), ("time_limit", _seconds(time, "time")),
                     ("priority", priority), ("labels", labels), ("model", model)):
            if v is not None:
                params[k] = v
        opts = dict(options or {})
        if workdir is None and "workdir" not in opts:
            workdir = os.getcwd()
        for k, v in (("array", array), ("dependency", _dependency(dependency)), ("hold", hold),
                     ("begin", begin), ("workdir", workdir or None), ("output", output),
                     ("error", error), ("env", _env(env)), ("account", account),
                     ("comment", comment)):
            if v is not None:
                opts[k] = v
        if opts:
            params["options"] = opts
        params.update(extra)
        r = self.call("job.submit", params)
        return SubmitResult(id=r["id"], created=r["created"], state=r["state"],
                            array=r.get("array"), raw=r)

    def get(self, job_id):
        """job.get: the job with its script and events (a loom.Job)."""
        return Job.from_json(self.call("job.get", {"id": int(job_id)})["job"])

    def list(self, state=None, limit=None, page_size=1000):
        """job.list, every page (or the first `limit` jobs), oldest first.
        state: a state or a list of states."""
        return list(self.iter_jobs(state, limit, page_size))

    def iter_jobs(self, state=None, limit=None, page_size=1000):
        cursor, n = None, 0
        while True:
            p = {"limit": page_size, "cursor": cursor}
            if state is not None:
                p["state"] = state
            r = self.call("job.list", p)
            for j in r["jobs"]:
                if limit is not None and n >= limit:
                    return
                n += 1
                yield Job.from_json(j)
            cursor = r["next_cursor"]
            if cursor is None:
                return

    def cancel(self, job_id, reason=None):
        """job.cancel: the job, now CANCELLED (loom.InvalidState if it had ended)."""
        p = {"id": int(job_id)}
        if reason is not None:
            p["reason"] = reason
        return Job.from_json(self.call("job.cancel", p)["job"])

    def job_usage(self, job_id, since=None):
        """The job's usage over time (job.usage) as columns, one list per
        quantity, all as long as "time" (Unix seconds, the end of each
        sample): span_seconds, cpu_cores, memory_bytes, memory_peak_bytes,
        read_bytes_per_second, write_bytes_per_second, and per GPU index I
        gpuI_util_percent, gpuI_util_peak_percent, gpuI_memory_bytes,
        gpuI_memory_peak_bytes, gpuI_power_watts. None: not known.
        pandas.DataFrame(c.job_usage(7)) makes a frame of it. since: only
        samples that end after this Unix time."""
        params = {"id": job_id}
        if since is not None:
            params["since"] = since
        r = self.call("job.usage", params)
        cols = dict(r["columns"])
        for g in r["gpus"]:
            for k, v in g.items():
                if k != "index":
                    cols["gpu%d_%s" % (g["index"], k)] = v
        return cols

    def nodes(self):
        """node.list as loom.Node objects."""
        return [Node.from_json(n) for n in self.call("node.list")["nodes"]]

    def _job_call(self, method, job_id):
        return Job.from_json(self.call(method, {"id": int(job_id)})["job"])

    def hold(self, job_id):
        """job.hold: the PENDING job stays PENDING (reason JobHeld) until
        released. Returns the Job; loom.InvalidState if it is not PENDING."""
        return self._job_call("job.hold", job_id)

    def release(self, job_id):
        """job.release: a held job is scheduled again. Returns the Job."""
        return self._job_call("job.release", job_id)

    def requeue(self, job_id):
        """job.requeue: a FAILED, CANCELLED or TIMEOUT job goes back to
        PENDING; a RUNNING one is stopped first (the Job returned is still
        RUNNING then). loom.InvalidState for a PENDING or COMPLETED job (a
        completed job is never run again: submit it again)."""
        return self._job_call("job.requeue", job_id)

    def update(self, job_id, *, name=None, time=None, priority=None):
        """job.update: a PENDING job's name, time limit (seconds or a
        timedelta; job.update takes no duration strings) or priority.
        Returns the Job; loom.InvalidState if it is not PENDING."""
        p = {"id": int(job_id)}
        for k, v in (("name", name), ("time_limit", _seconds(time, "time")),
                     ("priority", priority)):
            if v is not None:
                p[k] = v
        if isinstance(p.get("time_limit"), str):
            raise TypeError("update: time is seconds or a timedelta (job.update takes integers)")
        if len(p) == 1:
            raise TypeError("update: give at least one of name, time, priority")
        return Job.from_json(self.call("job.update", p)["job"])

    def wait(self, job_id, timeout=None, states=TERMINAL_STATES):
        """The job (a loom.Job) once it has ended, through job.wait's
        long-poll (called again while `ended` is false; no polling here).
        states: return as soon as the job is in one of these states
        (e.g. {"RUNNING"}); a non-terminal one is seen by job.wait calls of
        1 s, loomd having no long-poll for it. Raises loom.WaitTimeout after
        `timeout` seconds (None: no limit; the last call's share is rounded
        up to a whole second)."""
        states = {s.upper() for s in states}
        terminal_only = states <= set(TERMINAL_STATES)
        deadline = None if timeout is None else _time.monotonic() + timeout
        while True:
            hold = _WAIT_CHUNK if terminal_only else 1
            if deadline is not None:
                hold = min(hold, max(0, math.ceil(deadline - _time.monotonic())))
            r = self._long_call("job.wait", {"ids": [int(job_id)], "timeout": hold}, hold)
            state = r["jobs"][0]["state"]
            if r["ended"] or state in states:
                return self.get(job_id)
            if deadline is not None and _time.monotonic() >= deadline:
                raise WaitTimeout(int(job_id), state, timeout)

    def _long_call(self, method, params, hold):
        try:
            return self.call(method, params, wait=hold)
        except errors.MethodNotFound as e:
            raise NotSupported(f"this loomd has no {method} (an older loomd)") from e

    def _logs(self, job_id, stream, offset, timeout):
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"stream '{stream}': expected stdout or stderr")
        return self._long_call("job.logs", {"id": int(job_id), "stream": stream,
                                            "offset": offset, "max_bytes": _LOG_PAGE,
                                            "timeout": timeout}, timeout)

    def logs(self, job_id, stream="stdout", tail=None, offset=0):
        """The job's output so far (text), read through job.logs page by
        page from `offset` (bytes): works from any machine that reaches
        loomd. tail: only the last N bytes of it."""
        parts = []
        while True:
            r = self._logs(job_id, stream, offset, 0)
            parts.append(r["data"])
            if r["eof"] or r["next_offset"] == offset:
                break
            offset = r["next_offset"]
        text = "".join(parts)
        if tail is not None:
            text = text.encode()[-int(tail):].decode(errors="replace") if int(tail) > 0 else ""
        return text

    def follow(self, job_id, stream="stdout", offset=0):
        """Yields the job's output as it grows (job.logs long-polls from the
        last offset), until the job has ended and all of it was read."""
        while True:
            r = self._logs(job_id, stream, offset, _WAIT_CHUNK)
            if r["data"]:
                yield r["data"]
            if r["eof"]:
                return
            offset = r["next_offset"]
