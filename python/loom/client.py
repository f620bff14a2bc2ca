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
import os
import socket
import threading
import time as _time
import uuid

from . import errors
from .errors import InvalidParams, LoomError, NotSupported, TransportError, WaitTimeout
from .types import TERMINAL_STATES, Job, Node, ServerInfo, SubmitResult

__all__ = ["Client", "default_url", "SYSTEM_SOCKET"]

SYSTEM_SOCKET = "/run/loom/loomd.sock"


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
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, datetime.timedelta):
        v = v.total_seconds()
    if isinstance(v, (int, float)) and v >= 0:
        return int(-(-v // 1))  # whole seconds, rounded up as loomd does
    raise TypeError(f"{what}: expected seconds, a duration string or a timedelta, got {v!r}")


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
        self._conn = None
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
            if self._conn:
                self._conn.close()
                self._conn = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _exchange(self, method, path, body):
        headers = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token and not self.url.startswith("unix:"):
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (1, 2):
            fresh = self._conn is None
            if fresh:
                self._conn = self._connect()
            try:
                self._conn.request(method, path, body=body, headers=headers)
                r = self._conn.getresponse()
                data = r.read()
                if (r.getheader("Connection") or "").lower() == "close":
                    self._conn.close()
                    self._conn = None
                return r.status, data
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                # loomd closed an idle keep-alive connection: the request was
                # not read; send it once more on a new connection.
                self._conn.close()
                self._conn = None
                if fresh or attempt == 2:
                    raise TransportError(self.url, str(e) or type(e).__name__) from e
            except (OSError, http.client.HTTPException) as e:
                if self._conn:
                    self._conn.close()
                self._conn = None
                raise TransportError(self.url, str(e) or type(e).__name__) from e
        raise AssertionError("unreachable")

    def call(self, method, params=None):
        """One JSON-RPC call; returns its result or raises loom.RpcError."""
        with self._lock:
            req = {"jsonrpc": "2.0", "method": method, "id": self._next_id}
            self._next_id += 1
            if params is not None:
                req["params"] = params
            status, data = self._exchange("POST", "/rpc", json.dumps(req).encode())
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
        with self._lock:
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
               dependencies=None, **extra):
        """job.submit: the job's script text (script=) or a file's (file=),
        with its resources. Sizes are bytes or strings ("16GiB"); time is
        seconds, "1h30m" or a timedelta; gpu_share a fraction (0.25), milli-GPU
        (250) or "250m". array and dependencies are sent as job.submit's
        `array` and `dependencies` parameters: a loomd without them raises
        loom.NotSupported. extra: further job.submit parameters, as named in
        docs/protocol.md. A random submit_id is set unless given, so the call
        is safe to repeat. Returns a loom.SubmitResult."""
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
                     ("priority", priority), ("labels", labels), ("model", model),
                     ("array", array), ("dependencies", dependencies)):
            if v is not None:
                params[k] = v
        params.update(extra)
        try:
            r = self.call("job.submit", params)
        except InvalidParams as e:
            for p in ("array", "dependencies", *extra):
                if p in params and p in e.message and "unknown" in e.message.lower():
                    raise NotSupported(f"this loomd does not accept job.submit's '{p}' "
                                       f"parameter ({e.message})") from e
            raise
        return SubmitResult(id=r["id"], created=r["created"], state=r["state"], raw=r)

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

    def nodes(self):
        """node.list as loom.Node objects."""
        return [Node.from_json(n) for n in self.call("node.list")["nodes"]]

    def wait(self, job_id, timeout=None, states=TERMINAL_STATES, poll=(0.05, 2.0)):
        """The job once its state is in `states` (default: any terminal one).
        Polls job.get, the interval growing from poll[0] to poll[1] seconds
        by half each time (loomd has no blocking wait yet). Raises
        loom.WaitTimeout after `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else _time.monotonic() + timeout
        delay = poll[0]
        while True:
            job = self.get(job_id)
            if job.state in states:
                return job
            if deadline is not None:
                left = deadline - _time.monotonic()
                if left <= 0:
                    raise WaitTimeout(job.id, job.state, timeout)
                delay = min(delay, left)
            _time.sleep(delay)
            delay = min(delay * 1.5, poll[1])

    def _log_path(self, job, stream):
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"stream '{stream}': expected stdout or stderr")
        path = getattr(job.run, stream, None) if job.run else None
        if not path:
            raise NotSupported(f"job {job.id} ({job.state}) has no {stream} file yet"
                               if job.state not in TERMINAL_STATES else
                               f"job {job.id} ({job.state}) has no {stream} file "
                               f"(never started, or its executor keeps none)")
        return path

    def logs(self, job_id, stream="stdout", tail=None):
        """The job's output so far (text), read from the file named by its
        run object: the SDK must run where loomd's job files are readable
        (loomd offers no job.logs method yet). tail: only the last N bytes."""
        path = self._log_path(self.get(job_id), stream)
        try:
            with open(path, "rb") as f:
                if tail is not None:
                    f.seek(max(0, os.fstat(f.fileno()).st_size - int(tail)))
                return f.read().decode(errors="replace")
        except FileNotFoundError:
            return ""
        except OSError as e:
            raise NotSupported(f"job {job_id}: cannot read {stream} '{path}' from here: "
                               f"{e.strerror}") from e

    def follow(self, job_id, stream="stdout", poll=0.2):
        """Yields the job's output as it grows, until the job has ended."""
        offset = 0
        path = None
        while True:
            job = self.get(job_id)
            ended = job.state in TERMINAL_STATES
            if path is None and job.run and getattr(job.run, stream, None):
                path = self._log_path(job, stream)
            if path:
                try:
                    with open(path, "rb") as f:
                        f.seek(offset)
                        chunk = f.read()
                except FileNotFoundError:
                    chunk = b""
                if chunk:
                    offset += len(chunk)
                    yield chunk.decode(errors="replace")
            if ended:
                return
            _time.sleep(poll)
