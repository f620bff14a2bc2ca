"""Malformed and hostile requests, table-driven. Each must get the right
JSON-RPC error (or HTTP status), loomd must stay up, and the store must be
unchanged (job.list and server.info job counts compared before and after
every case)."""

import json
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, Client  # noqa: E402


def req(method, params=None, id=1):
    r = {"jsonrpc": "2.0", "method": method, "id": id}
    if params is not None:
        r["params"] = params
    return json.dumps(r).encode()


def submit(**kw):
    p = {"name": "n", "script": "x"}
    p.update(kw)
    return req("job.submit", p)


def res(**kw):
    return submit(resources=kw)


BIG = 2 * 1024 * 1024
# (name, body bytes, expected) where expected is an int (a JSON-RPC error
# code of a single response), a list of codes (a batch; None = a result), or
# ("http", status). Options per case: headers, auth, method, path.
CASES = [
    ("truncated json", b'{"jsonrpc":"2.0","method":"job.get","params":{"id":1},"id":1', -32700),
    ("not json", b"hello", -32700),
    ("empty body", b"", -32700),
    ("trailing garbage", req("server.info") + b"xyz", -32700),
    ("invalid utf-8 in string", b'{"jsonrpc":"2.0","method":"job.submit","params":{"name":"\xff\xfe","script":""},"id":1}', -32700),
    ("invalid utf-8 in key", b'{"jsonrpc":"2.0","method":"server.info","\xc3\x28":1,"id":1}', -32700),
    ("NUL escape in string", b'{"jsonrpc":"2.0","method":"job.submit","params":{"name":"a\\u0000b","script":""},"id":1}', -32700),
    ("duplicate keys", b'{"jsonrpc":"2.0","method":"job.submit","method":"server.info","id":1}', -32700),
    ("integer too big", b'{"jsonrpc":"2.0","method":"job.get","params":{"id":99999999999999999999999},"id":1}', -32700),
    ("deep nesting 10000", b"[" * 10000 + b"]" * 10000, -32600),
    ("deep params", b'{"jsonrpc":"2.0","method":"job.submit","params":{"labels":' + b'{"a":' * 100 + b'1' + b'}' * 100 + b'},"id":1}', -32600),
    ("null request", b"null", -32600),
    ("number request", b"42", -32600),
    ("string request", b'"job.submit"', -32600),
    ("empty batch", b"[]", -32600),
    ("batch of junk", b"[1,2,3]", [-32600, -32600, -32600]),
    ("wrong jsonrpc version", b'{"jsonrpc":"1.0","method":"server.info","id":1}', -32600),
    ("missing jsonrpc", b'{"method":"server.info","id":1}', -32600),
    ("method not a string", b'{"jsonrpc":"2.0","method":5,"id":1}', -32600),
    ("missing method", b'{"jsonrpc":"2.0","id":1}', -32600),
    ("params a string", b'{"jsonrpc":"2.0","method":"job.list","params":"PENDING","id":1}', -32600),
    ("id an object", b'{"jsonrpc":"2.0","method":"server.info","id":{}}', -32600),
    ("batch over 1000", json.dumps([json.loads(req("server.info", id=i)) for i in range(1001)]).encode(), -32600),
    ("unknown method", req("job.delete", {"id": 1}), -32601),
    ("reserved rpc. method", req("rpc.discover"), -32601),
    ("method case", req("JOB.SUBMIT", {"name": "n", "script": ""}), -32601),
    ("server.info with params", req("server.info", {"verbose": True}), -32602),
    ("submit no params", req("job.submit"), -32602),
    ("submit missing name", req("job.submit", {"script": ""}), -32602),
    ("submit missing script", req("job.submit", {"name": "n"}), -32602),
    ("name not a string", submit(name=7), -32602),
    ("name empty", submit(name=""), -32602),
    ("name too long", submit(name="x" * 300), -32602),
    ("name with newline", submit(name="a\nb"), -32602),
    ("script too large", submit(script="#" * (600 * 1024)), -32602),
    ("format unknown", submit(format="docker"), -32602),
    ("yaml job not YAML", submit(format="yaml", script="a: [1"), -32602),
    ("yaml job not a Job manifest", submit(format="yaml", script="kind: Pod\n"), -32602),
    ("resources not object", submit(resources=[1]), -32602),
    ("cpus string", res(cpus="4"), -32602),
    ("cpus zero", res(cpus=0), -32602),
    ("cpus huge", res(cpus=10 ** 9), -32602),
    ("cpus real", res(cpus=1.5), -32602),
    ("gpus negative", res(gpus=-1), -32602),
    ("gpu_share over 1000", res(gpu_share=1001), -32602),
    ("gpus and gpu_share", res(gpus=1, gpu_share=500), -32602),
    ("memory unparsable", res(memory="lots"), -32602),
    ("memory negative", res(memory=-1), -32602),
    ("memory overflow", res(memory="99999999999PiB"), -32602),
    ("gpu_type not string", res(gpu_type=3), -32602),
    ("unknown resource", res(tpus=1), -32602),
    ("time_limit unparsable", submit(time_limit="forever"), -32602),
    ("time_limit too long", submit(time_limit=10 ** 12), -32602),
    ("priority string", submit(priority="high"), -32602),
    ("labels not object", submit(labels=["a"]), -32602),
    ("label bad key", submit(labels={"bad key!": "v"}), -32602),
    ("label value not string", submit(labels={"k": 1}), -32602),
    ("too many labels", submit(labels={f"k{i}": "v" for i in range(65)}), -32602),
    ("submit_id too long", submit(submit_id="s" * 200), -32602),
    ("submit_id not string", submit(submit_id=12), -32602),
    ("unknown parameter", submit(colour="red"), -32602),
    ("too many positional", req("job.submit", ["n", "s", "batch", {}, 0, 0, {}, None, "extra"]), -32602),
    ("get id string", req("job.get", {"id": "1"}), -32602),
    ("get id negative", req("job.get", {"id": -1}), -32602),
    ("get id real", req("job.get", {"id": 1.5}), -32602),
    ("get missing id", req("job.get", {}), -32602),
    ("get unknown job", req("job.get", {"id": 424242}), -32001),
    ("cancel unknown job", req("job.cancel", {"id": 424242}), -32001),
    ("cancel terminal job", req("job.cancel", {"id": 1}), -32002),
    ("cancel reason not string", req("job.cancel", {"id": 2, "reason": 5}), -32602),
    ("list limit zero", req("job.list", {"limit": 0}), -32602),
    ("list limit huge", req("job.list", {"limit": 5000}), -32602),
    ("list bad state", req("job.list", {"state": "DONE"}), -32602),
    ("list empty state array", req("job.list", {"state": []}), -32602),
    ("list state array with number", req("job.list", {"state": ["PENDING", 3]}), -32602),
    ("list bad cursor", req("job.list", {"cursor": "abc"}), -32602),
    ("list cursor number", req("job.list", {"cursor": 3}), -32602),
    ("batch: bad calls around a read",
     b'[' + req("job.get", {"id": 2}) + b',5,' + submit(name=1) + b',' + req("nope") + b']',
     [None, -32600, -32602, -32601]),
    ("batch: cancels that all fail", b'[' + req("job.cancel", {"id": 1}, 1) + b',' + req("job.cancel", {"id": 9999}, 2) + b']',
     [-32002, -32001]),
    ("notification with bad params", b'{"jsonrpc":"2.0","method":"job.submit","params":{"name":5}}', ("http", 204)),
    # Beyond 8x the limit loomd answers 413 on the headers alone (smaller
    # oversized bodies are read and dropped first: docs/rpc.md).
    ("huge body, Content-Length", 8 * BIG + 1, ("http", 413), {"headers_only": True}),
    ("huge body, chunked", b'{"jsonrpc":"2.0","method":"job.submit","params":{"name":"n","script":"' + b"a" * BIG + b'"},"id":1}', ("http", 413), {"chunked": True}),
    ("wrong content type", submit(), ("http", 415), {"headers": {"Content-Type": "text/plain"}}),
    ("missing token", submit(), ("http", 401), {"auth": False}),
    ("wrong token", submit(), ("http", 401), {"auth": False, "headers": {"Authorization": "Bearer " + "f" * 64}}),
    ("token prefix only", submit(), ("http", 401), {"auth": False, "headers": {"Authorization": "Bearer "}}),
    ("basic auth", submit(), ("http", 401), {"auth": False, "headers": {"Authorization": "Basic dXNlcjpwYXNz"}}),
    ("GET /rpc", None, ("http", 405), {"method": "GET"}),
    ("POST to unknown path", submit(), ("http", 404), {"path": "/jobs"}),
]


class BadInput(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd().start()
        c = cls.d.client()
        # Job 1 is cancelled (terminal), job 2 pending.
        c.submit("one", "x", submit_id="one")
        c.cancel(1)
        c.submit("two", "y", labels={"a": "b"})
        c.close()

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()

    def headers_only(self, length):
        """Announces a body of `length` bytes and reads the answer before
        sending it (what a client that honours an early 413 does)."""
        import socket
        host, port = self.d.url.split("://")[1].rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=10) as s:
            s.sendall(f"POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      f"Authorization: Bearer {self.d.token}\r\nContent-Length: {length}\r\n"
                      f"\r\n".encode())
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        return int(data.split(b" ", 2)[1]), data

    def snapshot(self, c):
        return c.list_all(), c.info()["jobs"]

    def test_cases(self):
        self.assertGreaterEqual(len(CASES), 40)
        c = self.d.client()
        before = self.snapshot(c)
        for case in CASES:
            name, body, expected = case[:3]
            opts = case[3] if len(case) > 3 else {}
            with self.subTest(case=name):
                if opts.get("headers_only"):
                    status, data = self.headers_only(body)
                else:
                    if opts.get("chunked"):
                        whole = body
                        body = (whole[i:i + 65536] for i in range(0, len(whole), 65536))
                    raw = Client(self.d.url, self.d.token)
                    status, _, data = raw.request(opts.get("method", "POST"),
                                                  opts.get("path", "/rpc"), body,
                                                  opts.get("headers"), opts.get("auth", True))
                    raw.close()
                if isinstance(expected, tuple):
                    self.assertEqual(status, expected[1], f"{name}: body {data[:300]!r}")
                else:
                    self.assertEqual(status, 200, f"{name}: body {data[:300]!r}")
                    resp = json.loads(data)
                    if isinstance(expected, list):
                        self.assertIsInstance(resp, list)
                        got = [r["error"]["code"] if "error" in r else None for r in resp]
                        self.assertEqual(got, expected, name)
                    else:
                        self.assertIsInstance(resp, dict, name)
                        self.assertIn("error", resp, name)
                        self.assertEqual(resp["error"]["code"], expected, f"{name}: {resp}")
                        self.assertIsInstance(resp["error"]["message"], str)
                        if expected == -32602:
                            self.assertTrue(resp["error"]["message"].startswith("Invalid params"),
                                            resp["error"]["message"])
                self.assertTrue(self.d.alive(), f"loomd died on {name}: {self.d.read_log()}")
                self.assertEqual(self.snapshot(c), before, f"store changed by {name}")
        status, _, body = c.request("GET", "/healthz", auth=False)
        self.assertEqual(status, 200)
        c.close()

    def test_messages_name_the_parameter(self):
        c = self.d.client()
        for body, needle in [(res(cpus="4"), "resources.cpus"), (submit(labels={"k": 1}), "labels/k"),
                             (submit(time_limit="forever"), "time_limit"),
                             (req("job.list", {"state": ["PENDING", 3]}), "state[1]"),
                             (req("job.get", {"id": "1"}), "id"),
                             (submit(colour="red"), "colour")]:
            resp = c.post(body)
            self.assertIn(needle, resp["error"]["message"])
        c.close()

    def test_slow_and_abandoned_clients(self):
        import socket
        import time
        host, port = self.d.url.split("://")[1].rsplit(":", 1)
        c = self.d.client()

        def accepted():
            status, _, body = c.request("GET", "/metrics")
            self.assertEqual(status, 200)
            n = [ln for ln in body.decode().splitlines()
                 if ln.startswith("loom_http_connections_total ")]
            return float(n[0].split()[1])
        before = accepted()
        # Half a request, then silence; and a connection that sends nothing.
        s1 = socket.create_connection((host, int(port)))
        s1.sendall(b"POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"")
        s2 = socket.create_connection((host, int(port)))
        deadline = time.monotonic() + 30  # until loomd has accepted both
        while accepted() < before + 2:
            self.assertLess(time.monotonic(), deadline, "loomd did not accept two connections")
            time.sleep(0.01)
        c.close()
        c = self.d.client()  # a newcomer is still served
        self.assertEqual(c.info()["name"], "loomd")
        c.close()
        s1.close()
        s2.close()
        self.assertTrue(self.d.alive())


if __name__ == "__main__":
    unittest.main(verbosity=2)
