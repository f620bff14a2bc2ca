"""An in-process stand-in for loomd, for the SDK's unit tests: no loomd, no
build. It listens where a loomd would (a Unix socket in a temporary
directory, or a loopback TCP port), so loom.Client runs unchanged down to
its socket: the fake replaces loomd at the wire, not a method of the client.
It speaks the transport of docs/protocol.md: HTTP/1.1 with Content-Length
framing and keep-alive, `POST /rpc` with a JSON-RPC 2.0 request object,
answered 200 with `{"jsonrpc": "2.0", "result"|"error", "id"}`, 401 over TCP
without the bearer token, `GET /metrics` as text.

    with FakeLoomd() as d:
        d.methods["job.get"] = lambda p: {"job": {...}}
        loom.Client(d.url).get(1)
        d.calls[-1] == ("job.get", {"id": 1})

Every request is recorded (`requests`: method, path, headers, raw body and
the decoded JSON-RPC request). A handler raises Fault(code, message, data)
for a JSON-RPC error. `replies` is a queue of raw HTTP answers sent instead
of the next ones (bytes, or None: close the connection without answering)."""

import json
import os
import shutil
import socket
import tempfile
import threading

_MAX_BODY = 1 << 20  # loomd's default request limit (protocol.md, Limits)


class Fault(Exception):
    """Raised by a handler: the JSON-RPC error object to answer with."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Request:
    def __init__(self, method, path, headers, body):
        self.method, self.path, self.headers, self.body = method, path, headers, body
        self.rpc = json.loads(body) if body else None


def http_response(status, body, ctype="application/json", close=False):
    reason = {200: "OK", 204: "No Content", 400: "Bad Request", 401: "Unauthorized",
              404: "Not Found", 500: "Internal Server Error", 503: "Service Unavailable"}
    head = [f"HTTP/1.1 {status} {reason.get(status, 'Status')}",
            f"Content-Type: {ctype}", f"Content-Length: {len(body)}"]
    if close:
        head.append("Connection: close")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class FakeLoomd:
    def __init__(self, tcp=False, token=None):
        self.token = token
        self.methods = {}  # JSON-RPC method -> handler(params) -> result
        self.requests = []
        self.replies = []  # raw answers (bytes) or None (drop), used before the handlers
        self.metrics_text = "loom_jobs 0\n"
        self.connections = 0
        self._lock = threading.Lock()
        self._dir = tempfile.mkdtemp(prefix="loom-fake-")
        if tcp:
            self._srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            self._srv.bind(("127.0.0.1", 0))
            self.url = "http://127.0.0.1:%d" % self._srv.getsockname()[1]
        else:
            path = os.path.join(self._dir, "loomd.sock")
            self._srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self._srv.bind(path)
            self.url = "unix:" + path
        self._srv.listen(16)
        self._conns = []
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    # ---------------------------------------------------------------- views
    @property
    def calls(self):
        """(JSON-RPC method, params) of every /rpc request, in order."""
        with self._lock:
            return [(r.rpc["method"], r.rpc.get("params")) for r in self.requests
                    if r.path == "/rpc" and r.rpc]

    def params(self, method):
        """The params of every call of `method`, in order."""
        return [p for m, p in self.calls if m == method]

    # ------------------------------------------------------------ lifecycle
    def close(self):
        try:
            self._srv.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._srv.close()
        with self._lock:
            conns, self._conns = self._conns, []
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            c.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---------------------------------------------------------------- serve
    def _accept(self):
        while True:
            try:
                conn, _ = self._srv.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
                self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        buf = b""
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path, version = lines[0].split(" ")
                if version != "HTTP/1.1":
                    conn.sendall(http_response(400, b"expected HTTP/1.1", "text/plain", True))
                    return
                headers = {}
                for line in lines[1:]:
                    k, _, v = line.partition(":")
                    k = k.strip().lower()
                    if k in headers:  # two Content-Length headers: 400 (protocol.md)
                        conn.sendall(http_response(400, b"repeated header", "text/plain", True))
                        return
                    headers[k] = v.strip()
                if "transfer-encoding" in headers:
                    conn.sendall(http_response(400, b"no chunked bodies", "text/plain", True))
                    return
                n = int(headers.get("content-length", "0"))
                if not 0 <= n <= _MAX_BODY:
                    conn.sendall(http_response(413, b"body too large", "text/plain", True))
                    return
                while len(buf) < n:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                body, buf = buf[:n], buf[n:]
                req = Request(method, path, headers, body)
                with self._lock:
                    self.requests.append(req)
                    canned = self.replies.pop(0) if self.replies else False
                if canned is None:
                    return  # dropped: as loomd closing an idle keep-alive connection
                out = canned if canned is not False else self._answer(req)
                conn.sendall(out)
                if b"\r\nConnection: close\r\n" in out.split(b"\r\n\r\n", 1)[0] + b"\r\n":
                    return
        except OSError:
            return
        finally:
            conn.close()

    def _answer(self, req):
        if self.url.startswith("http://") and self.token is not None and \
                req.headers.get("authorization") != "Bearer " + self.token:
            return http_response(401, b"missing or wrong bearer token", "text/plain")
        if req.path == "/metrics" and req.method == "GET":
            return http_response(200, self.metrics_text.encode(), "text/plain; version=0.0.4")
        if req.path != "/rpc":
            return http_response(404, b"not found", "text/plain")
        if req.headers.get("content-type") != "application/json":
            return http_response(415, b"expected application/json", "text/plain")
        rpc = req.rpc
        if "id" not in rpc:
            return http_response(204, b"")
        out = {"jsonrpc": "2.0", "id": rpc["id"]}
        handler = self.methods.get(rpc.get("method"))
        if rpc.get("jsonrpc") != "2.0":
            out["error"] = {"code": -32600, "message": "Invalid Request",
                            "data": "jsonrpc: expected \"2.0\""}
        elif handler is None:
            out["error"] = {"code": -32601, "message": "Method not found"}
        else:
            try:
                out["result"] = handler(rpc.get("params"))
            except Fault as f:
                out["error"] = {"code": f.code, "message": f.message}
                if f.data is not None:
                    out["error"]["data"] = f.data
        return http_response(200, json.dumps(out).encode())


def job_json(job_id, state="PENDING", **more):
    """A job object as loomd writes it (protocol.md, The job object)."""
    j = {"id": job_id, "name": "job", "state": state, "reason": None, "submit_id": None,
         "format": "batch", "resources": {"cpus": 1, "memory": 0, "gpus": 0, "gpu_share": 0,
                                          "gpu_memory": 0, "gpu_type": None},
         "time_limit": 0, "priority": 0, "labels": {},
         "submit_time": "2026-01-02T03:04:05.000001Z", "start_time": None, "end_time": None,
         "update_time": "2026-01-02T03:04:05.000001Z", "run": None}
    j.update(more)
    return j
