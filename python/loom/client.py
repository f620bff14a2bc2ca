"""loom.Client: jobs on loomd from Python, written from docs/protocol.md with
the standard library only (JSON-RPC 2.0 over HTTP/1.1, on loomd's Unix socket
or TCP with the bearer token).

    import loom
    with loom.Client() as c:                      # finds loomd as `loom` does
        r = c.submit(file="train.sh", gpus=1, time_limit="1h", labels={"team": "nlp"})
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
import warnings
from typing import (Any, Collection, Dict, Iterator, List, Mapping, Optional, Set, Tuple,
                    Type, TypeVar, Union)

from . import errors
from .errors import LoomError, NotSupported, TransportError, WaitTimeout
from .spec import (FILE_KEYWORDS, RESOURCE_KEYWORDS, SCHEDULE_KEYWORDS, Dependency, Duration,
                   Env, FileSpec, GpuShare, JobRef, ResourceSpec, ScheduleSpec)
from .types import TERMINAL_STATES, Job, Node, ServerInfo, SubmitResult

__all__ = ["Client", "default_url", "SYSTEM_SOCKET"]

SYSTEM_SOCKET = "/run/loom/loomd.sock"
_MAX_IDLE = 4  # keep-alive connections kept per Client
_WAIT_CHUNK = 20  # seconds loomd holds one job.wait / following job.logs call (max 30)
_LOG_PAGE = 1 << 20  # job.logs max_bytes (its limit)


def _state_dir() -> str:
    d = os.environ.get("LOOM_STATE_DIR")
    if d:
        return d
    return os.path.join(os.path.expanduser("~"), ".local", "state", "loom")


def default_url() -> str:
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


def _default_token() -> Optional[str]:
    tok = os.environ.get("LOOM_TOKEN")
    if tok:
        return tok
    try:
        with open(os.path.join(_state_dir(), "token")) as f:
            return f.read().strip()
    except OSError:
        return None


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except OSError:
            s.close()
            raise
        self.sock = s


def _seconds(v: Optional[Duration], what: str) -> Union[int, str, None]:
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


def _dependency(v: Optional[Dependency]) -> Optional[str]:
    """options.dependency: sbatch's string as is; job ids (or SubmitResults,
    Jobs) mean afterok on all of them."""
    if v is None or isinstance(v, str):
        return v
    jobs = [v] if isinstance(v, (int, SubmitResult, Job)) else v
    ids = [str(_job_id(x)) for x in jobs]
    if not ids:
        raise ValueError("dependency: an empty list of jobs")
    return "afterok:" + ":".join(ids)


def _job_id(v: JobRef) -> int:
    """A job's id from an id, a SubmitResult or a Job."""
    x: Any = getattr(v, "id", v)
    return int(x)


def _env(v: Optional[Env]) -> Optional[List[str]]:
    """options.env: a dict or "NAME=VALUE" strings."""
    if v is None or isinstance(v, (list, tuple)):
        return None if v is None else list(v)
    if isinstance(v, Mapping):
        return [f"{k}={val}" for k, val in v.items()]
    raise TypeError(f"env: expected a dict or a list of 'NAME=VALUE' strings, got {v!r}")


def _milli(v: Optional[GpuShare]) -> Optional[int]:
    """gpu_share: a float fraction of one GPU (0.25), an int in milli-GPU (250) or "250m"."""
    if v is None or isinstance(v, int) and not isinstance(v, bool):
        return v
    if isinstance(v, float) and 0 < v <= 1:
        return int(round(v * 1000))
    if isinstance(v, str) and v.endswith("m") and v[:-1].isdigit():
        return int(v[:-1])
    raise ValueError(f"gpu_share: expected a fraction in (0, 1], milli-GPU as an int, or '250m'; "
                     f"got {v!r}")


_T = TypeVar("_T", ResourceSpec, FileSpec, ScheduleSpec)


def _renamed(kw: Dict[str, Any], old: str, new: str, given: Any, where: str) -> Any:
    """The value of new=, taking the deprecated old= out of kw: a
    DeprecationWarning when old= carries a value, a TypeError with both."""
    if old not in kw:
        return given
    value = kw.pop(old)
    if value is None:
        return given
    if given is not None:
        raise TypeError(f"{where}: {new}= and its deprecated name {old}= both given")
    warnings.warn(f"{where}: {old}= is deprecated (it shadows Python's {old}): use {new}=",
                  DeprecationWarning, stacklevel=3)
    return value


def _group(cls: Type[_T], names: Tuple[str, ...], given: Optional[_T], kw: Dict[str, Any],
           what: str) -> _T:
    """The group submit sends: `given`, or one made of the flat keywords in
    kw (taken out of it). A flat keyword with a value beside `given` is a
    TypeError (dataclasses.replace(given, ...) changes one member)."""
    flat = {k: kw.pop(k) for k in names if k in kw}
    if given is None:
        return cls(**flat)
    if not isinstance(given, cls):
        raise TypeError(f"submit: {what}: expected a loom.{cls.__name__}, got {given!r}")
    both = [k for k, v in flat.items() if v is not None]
    if both:
        raise TypeError(f"submit: {', '.join(k + '=' for k in both)} given beside {what}=: "
                        f"set it in the loom.{cls.__name__} (dataclasses.replace)")
    return given


class Client:
    """A connection to loomd (kept alive between calls; safe to share
    between threads: calls are serialised).

    url: http://HOST:PORT or unix:PATH (default: default_url()); token: the
    bearer token for TCP (default $LOOM_TOKEN, else the state directory's
    token file); timeout: seconds per HTTP exchange."""

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None,
                 timeout: float = 30.0) -> None:
        self.url = url or default_url()
        if not (self.url.startswith("unix:") or self.url.startswith("http://")):
            raise ValueError(f"loomd url '{self.url}': expected http://HOST:PORT or unix:PATH")
        self.token = token if token is not None else (
            None if self.url.startswith("unix:") else _default_token())
        self.timeout = timeout
        self._idle: List[http.client.HTTPConnection] = []  # keep-alive connections not in use
        self._lock = threading.Lock()
        self._next_id = 1
        self._methods: Optional[Set[str]] = None

    # ------------------------------------------------------------ transport
    def _connect(self) -> http.client.HTTPConnection:
        if self.url.startswith("unix:"):
            return _UnixHTTPConnection(self.url[5:], self.timeout)
        hostport = self.url.split("://", 1)[1].split("/", 1)[0]
        host, _, port = hostport.rpartition(":")
        return http.client.HTTPConnection(host.strip("[]"), int(port), timeout=self.timeout)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _take(self) -> Tuple[http.client.HTTPConnection, bool]:
        """An idle keep-alive connection (fresh=False) or a new one."""
        with self._lock:
            if self._idle:
                return self._idle.pop(), False
        return self._connect(), True

    def _give(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < _MAX_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def _exchange(self, method: str, path: str, body: Optional[bytes],
                  wait: float = 0) -> Tuple[int, bytes]:
        """One HTTP exchange on a connection of its own (calls from several
        threads run side by side; a long-poll holds only its connection).
        wait: seconds loomd may hold the call, added to the read timeout."""
        headers: Dict[str, str] = {}
        if body is not None:
            headers["Content-Type"] = "application/json"
        if self.token and not self.url.startswith("unix:"):
            headers["Authorization"] = "Bearer " + self.token
        for attempt in (1, 2):
            conn, fresh = self._take()
            try:
                if conn.sock is None:
                    conn.connect()
                assert conn.sock is not None
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

    def call(self, method: str, params: Optional[Mapping[str, Any]] = None,
             wait: float = 0) -> Any:
        """One JSON-RPC call; returns its result or raises loom.RpcError.
        wait: seconds a long-poll method (job.wait, job.logs) may be held."""
        with self._lock:
            req: Dict[str, Any] = {"jsonrpc": "2.0", "method": method, "id": self._next_id}
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

    def metrics(self) -> str:
        """GET /metrics: Prometheus text exposition."""
        status, data = self._exchange("GET", "/metrics", None)
        if status != 200:
            cls: Type[errors.HttpError] = errors.AuthError if status in (401, 403) else \
                errors.HttpError
            raise cls(status, data)
        return data.decode()

    # -------------------------------------------------------------- methods
    def info(self) -> ServerInfo:
        """server.info as a loom.ServerInfo."""
        info = ServerInfo.from_json(self.call("server.info"))
        self._methods = set(info.methods)
        return info

    def submit(self, script: Union[str, bytes, None] = None, *, file: Optional[str] = None,
               name: Optional[str] = None, job_format: Optional[str] = None,
               resources: Union[ResourceSpec, Mapping[str, Any], None] = None,
               files: Optional[FileSpec] = None, scheduling: Optional[ScheduleSpec] = None,
               labels: Optional[Mapping[str, str]] = None, submit_id: Optional[str] = None,
               model: Optional[str] = None, comment: Optional[str] = None,
               options: Optional[Mapping[str, Any]] = None, **kwargs: Any) -> SubmitResult:
        """job.submit: the job's script text (script=) or a file's (file=),
        with what it asks for in three groups (loom.spec): resources= a
        loom.ResourceSpec (cpus, memory, gpus, gpu_share, gpu_memory,
        gpu_type, time_limit), files= a loom.FileSpec (workdir, output, error,
        env), scheduling= a loom.ScheduleSpec (priority, array, dependency,
        hold, begin, account). Each member may also be given as a flat
        keyword (gpus=1, workdir=..., hold=True), as before the groups
        existed; a flat keyword and its group together are a TypeError.
        job_format: "batch" (default) or "yaml" (set from a .yaml/.yml
        file's name). format= and time= are the deprecated names of
        job_format= and time_limit= (they shadow Python's format and time).

        Sizes are bytes or strings ("16GiB"); time_limit is seconds (an int
        or a timedelta) or a string with units ("1h30m"); a bare number
        string is refused as ambiguous (sbatch reads "30" as minutes);
        gpu_share a fraction (0.25), milli-GPU (250) or "250m". dependency
        is sbatch's --dependency string, or job ids / SubmitResults / Jobs
        meaning afterok on all of them. workdir defaults to the current
        directory, as sbatch's: the job runs there and writes loom-%j.out
        there (workdir=False sends none: a personal loomd then runs the job
        in its job directory, a multi-user one in the owner's home).
        options: further members of job.submit's `options` as a dict; other
        keywords: further job.submit parameters, sent as given
        (resources= a dict is sent as job.submit's raw `resources`). A
        random submit_id is set unless given, so the call is safe to
        repeat. Returns a loom.SubmitResult (with `array` for an array)."""
        kw = dict(kwargs)
        job_format = _renamed(kw, "format", "job_format", job_format, "submit")
        if "time" in kw:
            kw["time_limit"] = _renamed(kw, "time", "time_limit", kw.get("time_limit"), "submit")
        if isinstance(resources, Mapping):  # job.submit's raw member, as before the groups
            kw["resources"] = resources
            resources = None
        res = _group(ResourceSpec, RESOURCE_KEYWORDS, resources, kw, "resources")
        fs = _group(FileSpec, FILE_KEYWORDS, files, kw, "files")
        sch = _group(ScheduleSpec, SCHEDULE_KEYWORDS, scheduling, kw, "scheduling")
        extra = kw
        if (script is None) == (file is None):
            raise TypeError("submit: give either script (the text) or file (a path)")
        if file is not None:
            with open(file, encoding="utf-8") as f:
                script = f.read()
            name = name or os.path.basename(file)
            if job_format is None and file.endswith((".yaml", ".yml")):
                job_format = "yaml"
        if isinstance(script, bytes):
            script = script.decode("utf-8")
        params: Dict[str, Any] = {"name": name or "job", "script": script,
                                  "submit_id": submit_id or "py-" + uuid.uuid4().hex}
        res_json = {k: v for k, v in (("cpus", res.cpus), ("memory", res.memory),
                                      ("gpus", res.gpus), ("gpu_share", _milli(res.gpu_share)),
                                      ("gpu_memory", res.gpu_memory),
                                      ("gpu_type", res.gpu_type)) if v is not None}
        if res_json:
            params["resources"] = res_json
        for k, v in (("format", job_format), ("time_limit", _seconds(res.time_limit, "time")),
                     ("priority", sch.priority), ("labels", labels), ("model", model)):
            if v is not None:
                params[k] = v
        opts = dict(options or {})
        workdir = fs.workdir
        if workdir is None and "workdir" not in opts:
            workdir = os.getcwd()
        opt: Any
        for k, opt in (("array", sch.array), ("dependency", _dependency(sch.dependency)),
                     ("hold", sch.hold), ("begin", sch.begin), ("workdir", workdir or None),
                     ("output", fs.output), ("error", fs.error), ("env", _env(fs.env)),
                     ("account", sch.account), ("comment", comment)):
            if opt is not None:
                opts[k] = opt
        if opts:
            params["options"] = opts
        params.update(extra)
        r = self.call("job.submit", params)
        return SubmitResult(id=r["id"], created=r["created"], state=r["state"],
                            array=r.get("array"), raw=r)

    def get(self, job_id: JobRef) -> Job:
        """job.get: the job with its script and events (a loom.Job)."""
        return Job.from_json(self.call("job.get", {"id": _job_id(job_id)})["job"])

    def list(self, state: Union[str, Collection[str], None] = None, limit: Optional[int] = None,
             page_size: int = 1000) -> List[Job]:
        """job.list, every page (or the first `limit` jobs), oldest first.
        state: a state or a list of states."""
        return list(self.iter_jobs(state, limit, page_size))

    def iter_jobs(self, state: Union[str, Collection[str], None] = None,
                  limit: Optional[int] = None, page_size: int = 1000) -> Iterator[Job]:
        """job.list page by page (next_cursor), oldest first: yields each
        Job as its page arrives, up to `limit` of them."""
        cursor: Optional[str] = None
        n = 0
        while True:
            p: Dict[str, Any] = {"limit": page_size, "cursor": cursor}
            if state is not None:
                p["state"] = state if isinstance(state, str) else list(state)
            r = self.call("job.list", p)
            for j in r["jobs"]:
                if limit is not None and n >= limit:
                    return
                n += 1
                yield Job.from_json(j)
            cursor = r["next_cursor"]
            if cursor is None:
                return

    def cancel(self, job_id: JobRef, reason: Optional[str] = None) -> Job:
        """job.cancel: the job, now CANCELLED (loom.InvalidState if it had ended)."""
        p: Dict[str, Any] = {"id": _job_id(job_id)}
        if reason is not None:
            p["reason"] = reason
        return Job.from_json(self.call("job.cancel", p)["job"])

    def job_usage(self, job_id: JobRef,
                  since: Optional[float] = None) -> Dict[str, List[Any]]:
        """The job's usage over time (job.usage) as columns, one list per
        quantity, all as long as "time" (Unix seconds, the end of each
        sample): span_seconds, cpu_cores, memory_bytes, memory_peak_bytes,
        read_bytes_per_second, write_bytes_per_second, and per GPU index I
        gpuI_util_percent, gpuI_util_peak_percent, gpuI_memory_bytes,
        gpuI_memory_peak_bytes, gpuI_power_watts. None: not known.
        pandas.DataFrame(c.job_usage(7)) makes a frame of it. since: only
        samples that end after this Unix time."""
        params: Dict[str, Any] = {"id": _job_id(job_id)}
        if since is not None:
            params["since"] = since
        r = self.call("job.usage", params)
        cols: Dict[str, List[Any]] = dict(r["columns"])
        for g in r["gpus"]:
            for k, v in g.items():
                if k != "index":
                    cols["gpu%d_%s" % (g["index"], k)] = v
        return cols

    def nodes(self) -> List[Node]:
        """node.list as loom.Node objects."""
        return [Node.from_json(n) for n in self.call("node.list")["nodes"]]

    def _job_call(self, method: str, job_id: JobRef) -> Job:
        return Job.from_json(self.call(method, {"id": _job_id(job_id)})["job"])

    def hold(self, job_id: JobRef) -> Job:
        """job.hold: the PENDING job stays PENDING (reason JobHeld) until
        released. Returns the Job; loom.InvalidState if it is not PENDING."""
        return self._job_call("job.hold", job_id)

    def release(self, job_id: JobRef) -> Job:
        """job.release: a held job is scheduled again. Returns the Job."""
        return self._job_call("job.release", job_id)

    def requeue(self, job_id: JobRef) -> Job:
        """job.requeue: a FAILED, CANCELLED or TIMEOUT job goes back to
        PENDING; a RUNNING one is stopped first (the Job returned is still
        RUNNING then). loom.InvalidState for a PENDING or COMPLETED job (a
        completed job is never run again: submit it again)."""
        return self._job_call("job.requeue", job_id)

    def update(self, job_id: JobRef, *, name: Optional[str] = None,
               time_limit: Union[int, float, datetime.timedelta, None] = None,
               priority: Optional[int] = None,
               time: Union[int, float, datetime.timedelta, None] = None) -> Job:
        """job.update: a PENDING job's name, time limit (seconds or a
        timedelta; job.update takes no duration strings) or priority.
        time= is the deprecated name of time_limit= (it shadows Python's
        time). Returns the Job; loom.InvalidState if it is not PENDING."""
        time_limit = _renamed({"time": time}, "time", "time_limit", time_limit, "update")
        p: Dict[str, Any] = {"id": _job_id(job_id)}
        for k, v in (("name", name), ("time_limit", _seconds(time_limit, "time")),
                     ("priority", priority)):
            if v is not None:
                p[k] = v
        if isinstance(p.get("time_limit"), str):
            raise TypeError("update: time_limit is seconds or a timedelta "
                            "(job.update takes integers)")
        if len(p) == 1:
            raise TypeError("update: give at least one of name, time_limit, priority")
        return Job.from_json(self.call("job.update", p)["job"])

    def wait(self, job_id: JobRef, timeout: Optional[float] = None,
             states: Collection[str] = TERMINAL_STATES) -> Job:
        """The job (a loom.Job) once it has ended, through job.wait's
        long-poll (called again while `ended` is false; no polling here).
        states: return as soon as the job is in one of these states
        (e.g. {"RUNNING"}); a non-terminal one is seen by job.wait calls of
        1 s, loomd having no long-poll for it. Raises loom.WaitTimeout after
        `timeout` seconds (None: no limit; the last call's share is rounded
        up to a whole second)."""
        want = {s.upper() for s in states}
        terminal_only = want <= set(TERMINAL_STATES)
        deadline = None if timeout is None else _time.monotonic() + timeout
        while True:
            hold = _WAIT_CHUNK if terminal_only else 1
            if deadline is not None:
                hold = min(hold, max(0, math.ceil(deadline - _time.monotonic())))
            r = self._long_call("job.wait", {"ids": [_job_id(job_id)], "timeout": hold}, hold)
            state = r["jobs"][0]["state"]
            if r["ended"] or state in want:
                return self.get(job_id)
            if timeout is not None and deadline is not None and _time.monotonic() >= deadline:
                raise WaitTimeout(_job_id(job_id), state, timeout)

    def _long_call(self, method: str, params: Mapping[str, Any], hold: float) -> Any:
        try:
            return self.call(method, params, wait=hold)
        except errors.MethodNotFound as e:
            raise NotSupported(f"this loomd has no {method} (an older loomd)") from e

    def _logs(self, job_id: JobRef, stream: str, offset: int, timeout: float) -> Any:
        if stream not in ("stdout", "stderr"):
            raise ValueError(f"stream '{stream}': expected stdout or stderr")
        return self._long_call("job.logs", {"id": _job_id(job_id), "stream": stream,
                                            "offset": offset, "max_bytes": _LOG_PAGE,
                                            "timeout": timeout}, timeout)

    def logs(self, job_id: JobRef, stream: str = "stdout", tail: Optional[int] = None,
             offset: int = 0) -> str:
        """The job's output so far (text), read through job.logs page by
        page from `offset` (bytes): works from any machine that reaches
        loomd. tail: only the last N bytes of it."""
        parts: List[str] = []
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

    def follow(self, job_id: JobRef, stream: str = "stdout", offset: int = 0) -> Iterator[str]:
        """Yields the job's output as it grows (job.logs long-polls from the
        last offset), until the job has ended and all of it was read."""
        while True:
            r = self._logs(job_id, stream, offset, _WAIT_CHUNK)
            if r["data"]:
                yield r["data"]
            if r["eof"]:
                return
            offset = r["next_offset"]
