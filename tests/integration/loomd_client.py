"""A loomd client written from docs/protocol.md with Python's standard
library only (http.client, json, socket), plus helpers that start a real
loomd in a temporary state directory on a free port. Used by the
integration tests; also a reference for clients in other languages."""

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


class RpcError(Exception):
    """A JSON-RPC error response."""

    def __init__(self, code, message, data=None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.data = data


class HttpError(Exception):
    """An HTTP status other than 200/204 (no JSON-RPC response)."""

    def __init__(self, status, body):
        super().__init__(f"HTTP {status}: {body[:200]!r}")
        self.status = status
        self.body = body


class UnixHTTPConnection(http.client.HTTPConnection):
    """HTTP/1.1 over a Unix stream socket (docs/protocol.md, Transport)."""

    def __init__(self, path, timeout=30):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Client:
    """One keep-alive connection to loomd. url is http://HOST:PORT or
    unix:PATH; token is required over TCP."""

    def __init__(self, url, token=None, timeout=30):
        self.url = url
        self.token = token
        self.timeout = timeout
        self.next_id = 1
        self.conn = None

    def _connect(self):
        if self.url.startswith("unix:"):
            return UnixHTTPConnection(self.url[5:], timeout=self.timeout)
        rest = self.url.split("://", 1)[1].rstrip("/")
        host, port = rest.rsplit(":", 1)
        return http.client.HTTPConnection(host, int(port), timeout=self.timeout)

    def close(self):
        if self.conn:
            self.conn.close()
            self.conn = None

    def request(self, method, path, body=None, headers=None, auth=True):
        """Raw HTTP exchange: returns (status, headers dict, body bytes)."""
        h = {}
        if body is not None:
            h["Content-Type"] = "application/json"
        if auth and self.token and not self.url.startswith("unix:"):
            h["Authorization"] = "Bearer " + self.token
        if headers:
            h.update(headers)
        for attempt in range(2):
            if self.conn is None:
                self.conn = self._connect()
            try:
                self.conn.request(method, path, body=body, headers=h)
                r = self.conn.getresponse()
                data = r.read()
                if r.getheader("Connection", "").lower() == "close":
                    self.close()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, data
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                # A keep-alive connection the server closed while idle.
                self.close()
                if attempt == 1:
                    raise
        raise AssertionError("unreachable")

    def post(self, payload, headers=None, auth=True):
        """POST /rpc with a JSON-serialisable payload or raw bytes/str;
        returns the decoded JSON response, or None for HTTP 204."""
        if isinstance(payload, (bytes, bytearray)):
            body = bytes(payload)
        elif isinstance(payload, str):
            body = payload.encode()
        else:
            body = json.dumps(payload).encode()
        status, _, data = self.request("POST", "/rpc", body, headers, auth)
        if status == 204:
            return None
        if status != 200:
            raise HttpError(status, data)
        return json.loads(data)

    def call(self, method, params=None):
        req = {"jsonrpc": "2.0", "method": method, "id": self.next_id}
        self.next_id += 1
        if params is not None:
            req["params"] = params
        resp = self.post(req)
        if resp.get("id") != req["id"] or resp.get("jsonrpc") != "2.0":
            raise AssertionError(f"bad response {resp}")
        if "error" in resp:
            e = resp["error"]
            raise RpcError(e["code"], e["message"], e.get("data"))
        return resp["result"]

    def batch(self, calls):
        """calls: list of (method, params). Returns a list with, per call,
        either ("ok", result) or ("error", error-object), in call order."""
        reqs = []
        for method, params in calls:
            r = {"jsonrpc": "2.0", "method": method, "id": self.next_id}
            self.next_id += 1
            if params is not None:
                r["params"] = params
            reqs.append(r)
        resp = self.post(reqs)
        by_id = {r["id"]: r for r in resp}
        out = []
        for r in reqs:
            x = by_id[r["id"]]
            out.append(("ok", x["result"]) if "result" in x else ("error", x["error"]))
        return out

    # Convenience wrappers, one per method.
    def info(self):
        return self.call("server.info")

    def steps(self):
        """The runner's completed scheduling steps (server.info's scheduler.steps)."""
        return self.info()["scheduler"]["steps"]

    def wait_steps(self, n=3, timeout=30):
        """Waits until the runner has completed n more steps than now (each
        step after the first began after this call), so a check that a job
        is still pending has given the scheduler n chances to start it."""
        target = self.steps() + n
        deadline = time.monotonic() + timeout
        while self.steps() < target:
            if time.monotonic() > deadline:
                raise AssertionError(f"the runner did not complete {n} steps in {timeout} s")
            time.sleep(0.01)

    def submit(self, name, script, **kw):
        p = {"name": name, "script": script}
        p.update(kw)
        return self.call("job.submit", p)

    def get(self, job_id):
        return self.call("job.get", {"id": job_id})["job"]

    def list_all(self, state=None, limit=1000):
        jobs, cursor = [], None
        while True:
            p = {"limit": limit, "cursor": cursor}
            if state is not None:
                p["state"] = state
            r = self.call("job.list", p)
            jobs.extend(r["jobs"])
            cursor = r["next_cursor"]
            if cursor is None:
                return jobs

    def cancel(self, job_id, reason=None):
        p = {"id": job_id}
        if reason is not None:
            p["reason"] = reason
        return self.call("job.cancel", p)["job"]


def build_dir():
    return os.environ.get("LOOM_BUILD_DIR") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build")


class Loomd:
    """A loomd process in its own temporary state directory, TCP on a free
    port (127.0.0.1:0) and the Unix socket. Use as a context manager."""

    def __init__(self, state_dir=None, durability="normal", extra_args=(), wrapper=()):
        """wrapper: a command that execs loomd (same PID), e.g. nsenter into
        a network namespace."""
        self.wrapper = list(wrapper)
        self.own_dir = state_dir is None
        self.state_dir = state_dir or tempfile.mkdtemp(prefix="loom-it-")
        self.durability = durability
        self.extra_args = list(extra_args)
        # Protocol and store tests only queue jobs; tests of running them
        # choose an executor (and nodes) themselves.
        if "--executor" not in self.extra_args:
            self.extra_args += ["--executor", "none"]
        self.proc = None
        self.url = None
        self.token = None
        self.log_path = os.path.join(self.state_dir, "loomd.log")

    @property
    def socket_path(self):
        return os.path.join(self.state_dir, "loomd.sock")

    def start(self, timeout=30):
        url_file = os.path.join(self.state_dir, "loomd.url")
        if os.path.exists(url_file):
            os.unlink(url_file)
        exe = os.path.join(build_dir(), "loomd")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            self.wrapper + [exe, "--listen", "127.0.0.1:0", "--state-dir", self.state_dir,
             "--durability", self.durability, "--log-level", "warn"] + self.extra_args,
            stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.log.close()
                self.proc = None
                raise RuntimeError(f"loomd exited: {self.read_log()}")
            try:
                with open(url_file) as f:
                    self.url = f.read().strip()
                if self.url:
                    break
            except FileNotFoundError:
                pass
            time.sleep(0.01)
        else:
            self.cleanup_process()
            raise RuntimeError("loomd did not start: " + self.read_log())
        with open(os.path.join(self.state_dir, "token")) as f:
            self.token = f.read().strip()
        return self

    def read_log(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")[-4000:]
        except FileNotFoundError:
            return ""

    def client(self, unix=False):
        if unix:
            return Client("unix:" + self.socket_path)
        return Client(self.url, self.token)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Stops loomd; returns its exit status."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise RuntimeError("loomd did not stop within %ss" % timeout)
        finally:
            self.log.close()
            self.proc = None
        return rc

    def kill9(self):
        self.proc.kill()
        self.proc.wait()
        self.log.close()
        self.proc = None

    def cleanup_process(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.log.close()
            self.proc = None

    def cleanup(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.log.close()
            self.proc = None
        if self.own_dir:
            shutil.rmtree(self.state_dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.cleanup()
