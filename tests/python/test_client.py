"""loom.Client against an in-process fake loomd (fake_loomd.py): the JSON-RPC
requests it sends, how loomd's answers and failures become exceptions,
job.list's pagination, job.logs' paging and long-poll, job.wait. Needs no
loomd and no build: /usr/bin/python3 -m unittest (in tests/python)."""

import datetime
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))

import loom  # noqa: E402
from fake_loomd import Fault, FakeLoomd, http_response, job_json  # noqa: E402


def submitted(params):
    return {"id": 7, "created": True, "state": "PENDING"}


class Base(unittest.TestCase):
    tcp = False
    token = None

    def setUp(self):
        self.d = FakeLoomd(tcp=self.tcp, token=self.token)
        self.addCleanup(self.d.close)
        self.c = loom.Client(self.d.url, token=self.token, timeout=10)
        self.addCleanup(self.c.close)
        self.d.methods["job.submit"] = submitted


class Framing(Base):
    def test_request_object_and_http(self):
        self.d.methods["server.info"] = lambda p: {"name": "loomd", "version": "1",
                                                   "api_version": 1, "methods": ["job.get"]}
        self.c.info()
        self.c.info()
        first, second = self.d.requests
        self.assertEqual((first.method, first.path), ("POST", "/rpc"))
        self.assertEqual(first.headers["content-type"], "application/json")
        self.assertEqual(first.headers["host"], "localhost")  # protocol.md: Unix socket
        self.assertNotIn("authorization", first.headers)  # no token on the socket
        self.assertEqual(first.rpc, {"jsonrpc": "2.0", "method": "server.info", "id": 1})
        self.assertEqual(second.rpc["id"], 2)  # ids increase
        self.assertEqual(int(first.headers["content-length"]), len(first.body))
        self.assertEqual(self.d.connections, 1, "the second call reuses the kept-alive one")

    def test_server_info_decoded(self):
        self.d.methods["server.info"] = lambda p: {
            "name": "loomd", "version": "0.9", "api_version": 3, "pid": 12,
            "started_at": "2026-01-02T03:04:05.5Z", "methods": ["job.wait"], "new": 1}
        info = self.c.info()
        self.assertEqual((info.name, info.api_version, info.methods), ("loomd", 3, ["job.wait"]))
        self.assertEqual(info.started_at, datetime.datetime(2026, 1, 2, 3, 4, 5, 500000,
                                                            tzinfo=datetime.timezone.utc))
        self.assertEqual(info.raw["new"], 1)  # members a later loomd adds are kept

    def test_closed_idle_connection_is_retried_once(self):
        self.d.methods["job.get"] = lambda p: {"job": job_json(p["id"])}
        self.c.get(1)
        self.d.replies.append(None)  # loomd closed the idle connection: not answered
        self.assertEqual(self.c.get(2).id, 2)
        self.assertEqual([p["id"] for p in self.d.params("job.get")], [1, 2, 2])
        self.assertEqual(self.d.connections, 2)

    def test_fresh_connection_closed_is_a_transport_error(self):
        self.d.replies.append(None)
        with self.assertRaises(loom.TransportError) as cm:
            self.c.get(1)
        self.assertIn(self.d.url, str(cm.exception))
        self.assertEqual(len(self.d.requests), 1, "a fresh connection is not tried again")

    def test_nothing_listening(self):
        c = loom.Client("unix:" + os.path.join(tempfile.gettempdir(), "no-such-loomd.sock"))
        with self.assertRaises(loom.TransportError) as cm:
            c.info()
        self.assertIsInstance(cm.exception, ConnectionError)

    def test_bad_url(self):
        with self.assertRaisesRegex(ValueError, "expected http://HOST:PORT or unix:PATH"):
            loom.Client("ftp://x")

    def test_metrics(self):
        self.d.metrics_text = "loom_jobs_total 3\n"
        self.assertEqual(self.c.metrics(), "loom_jobs_total 3\n")
        self.assertEqual((self.d.requests[0].method, self.d.requests[0].path),
                         ("GET", "/metrics"))


class Tcp(Base):
    tcp = True
    token = "ab" * 32

    def test_bearer_token(self):
        self.d.methods["node.list"] = lambda p: {"nodes": [{"name": "n1", "gpu_count": 2,
                                                             "gpus": [{"index": 0}]}]}
        nodes = self.c.nodes()
        self.assertEqual(self.d.requests[0].headers["authorization"], "Bearer " + self.token)
        self.assertEqual((nodes[0].name, nodes[0].gpus[0].index), ("n1", 0))

    def test_wrong_token_is_auth_error(self):
        c = loom.Client(self.d.url, token="wrong")
        self.addCleanup(c.close)
        with self.assertRaises(loom.AuthError) as cm:
            c.info()
        self.assertEqual(cm.exception.status, 401)
        with self.assertRaises(loom.AuthError):
            c.metrics()


class Errors(Base):
    CODES = {-32700: loom.errors.ParseError, -32600: loom.InvalidRequest,
             -32601: loom.MethodNotFound, -32602: loom.InvalidParams,
             -32603: loom.errors.InternalError, -32001: loom.JobNotFound,
             -32002: loom.InvalidState, -32003: loom.Overloaded, -32004: loom.StoreFailed,
             -32005: loom.ShuttingDown, -32006: loom.EstimateFailed}

    def test_each_code_maps_to_its_class(self):
        for code, cls in self.CODES.items():
            def fail(p, code=code):
                raise Fault(code, f"message {code}", {"id": 9})
            self.d.methods["job.get"] = fail
            with self.assertRaises(cls) as cm:
                self.c.get(9)
            e = cm.exception
            self.assertIs(type(e), cls)
            self.assertEqual((e.code, e.message, e.data, e.method),
                             (code, f"message {code}", {"id": 9}, "job.get"))
            self.assertEqual(e.error, {"code": code, "message": f"message {code}",
                                       "data": {"id": 9}})
            self.assertIn(f"job.get: message {code} ({code})", str(e))

    def test_unknown_code_is_rpc_error(self):
        def fail(p):
            raise Fault(-32099, "something new")
        self.d.methods["job.get"] = fail
        with self.assertRaises(loom.RpcError) as cm:
            self.c.get(1)
        self.assertIs(type(cm.exception), loom.RpcError)
        self.assertEqual(cm.exception.error, {"code": -32099, "message": "something new"})

    def test_method_not_found(self):
        with self.assertRaises(loom.MethodNotFound):
            self.c.call("no.such")

    def test_http_status_without_rpc(self):
        self.d.replies.append(http_response(503, b"stopping", "text/plain", close=True))
        with self.assertRaises(loom.HttpError) as cm:
            self.c.get(1)
        self.assertNotIsInstance(cm.exception, loom.AuthError)
        self.assertEqual((cm.exception.status, cm.exception.body), (503, "stopping"))

    def test_malformed_json(self):
        self.d.replies.append(http_response(200, b"{not json"))
        with self.assertRaisesRegex(loom.LoomError, "job.get: loomd answered with malformed"):
            self.c.get(1)

    def test_all_derive_from_loom_error(self):
        for cls in list(self.CODES.values()) + [loom.TransportError, loom.HttpError,
                                               loom.NotSupported, loom.WaitTimeout]:
            self.assertTrue(issubclass(cls, loom.LoomError), cls)


class Jobs(Base):
    def setUp(self):
        super().setUp()
        for m in ("job.get", "job.hold", "job.release", "job.requeue", "job.cancel",
                  "job.update"):
            self.d.methods[m] = lambda p, m=m: {"job": job_json(p["id"], name=m)}

    def test_job_methods(self):
        r = self.c.submit("#!/bin/sh\ntrue\n", submit_id="s1", workdir=False)
        self.assertEqual(self.c.get(r).name, "job.get")  # a SubmitResult names its job
        self.c.hold(7)
        self.c.release(7)
        self.c.requeue(7)
        self.c.cancel(7, reason="wrong lr")
        self.c.cancel(7)
        self.assertEqual(self.d.calls[1:], [
            ("job.get", {"id": 7}), ("job.hold", {"id": 7}), ("job.release", {"id": 7}),
            ("job.requeue", {"id": 7}), ("job.cancel", {"id": 7, "reason": "wrong lr"}),
            ("job.cancel", {"id": 7})])

    def test_job_decoded(self):
        self.d.methods["job.get"] = lambda p: {"job": job_json(
            3, "COMPLETED", labels={"team": "nlp"},
            run={"node": "n1", "gpus": [0, 1], "outcome": {"exit_code": 0, "end": "exit",
                                                           "ended_at": "2026-01-02T03:04:06Z"}},
            events=[{"time": "2026-01-02T03:04:05Z", "from": None, "to": "PENDING"}])}
        j = self.c.get(3)
        self.assertTrue(j.done)
        self.assertEqual((j.run.node, j.run.gpus, j.run.outcome.exit_code), ("n1", [0, 1], 0))
        self.assertEqual(j.events[0].to, "PENDING")
        self.assertEqual(j.events[0].time.tzinfo, datetime.timezone.utc)
        self.assertEqual(j.labels, {"team": "nlp"})

    def test_update(self):
        self.c.update(7, name="n", time_limit=datetime.timedelta(minutes=2), priority=3)
        self.assertEqual(self.d.calls[-1], ("job.update", {"id": 7, "name": "n",
                                                           "time_limit": 120, "priority": 3}))
        with self.assertWarns(DeprecationWarning):
            self.c.update(7, time=60)
        self.assertEqual(self.d.calls[-1], ("job.update", {"id": 7, "time_limit": 60}))
        with self.assertRaisesRegex(TypeError, "at least one of name, time_limit, priority"):
            self.c.update(7)
        with self.assertRaisesRegex(TypeError, "takes integers"):
            self.c.update(7, time_limit="1h")
        with self.assertRaisesRegex(TypeError, "both given"):
            self.c.update(7, time=1, time_limit=2)


class Pagination(Base):
    def setUp(self):
        super().setUp()
        self.pages = {None: ([1, 2], "c1"), "c1": ([3, 4], "c2"), "c2": ([5], None)}
        self.d.methods["job.list"] = lambda p: {
            "jobs": [job_json(i) for i in self.pages[p["cursor"]][0]],
            "next_cursor": self.pages[p["cursor"]][1]}

    def test_every_page(self):
        jobs = self.c.list(state=("PENDING", "RUNNING"), page_size=2)
        self.assertEqual([j.id for j in jobs], [1, 2, 3, 4, 5])
        self.assertEqual(self.d.params("job.list"), [
            {"limit": 2, "cursor": None, "state": ["PENDING", "RUNNING"]},
            {"limit": 2, "cursor": "c1", "state": ["PENDING", "RUNNING"]},
            {"limit": 2, "cursor": "c2", "state": ["PENDING", "RUNNING"]}])

    def test_limit_stops_paging(self):
        self.assertEqual([j.id for j in self.c.list(limit=3, page_size=2)], [1, 2, 3])
        self.assertEqual(len(self.d.params("job.list")), 2, "no page past the limit")
        self.assertEqual(self.d.params("job.list")[0], {"limit": 2, "cursor": None})

    def test_iter_jobs_is_lazy(self):
        it = self.c.iter_jobs(state="RUNNING", page_size=2)
        self.assertEqual(next(it).id, 1)
        self.assertEqual(len(self.d.params("job.list")), 1)
        self.assertEqual(self.d.params("job.list")[0]["state"], "RUNNING")


class Logs(Base):
    def setUp(self):
        super().setUp()
        self.text = "line-1\nline-2\nline-3\n"

        def logs(p):
            data = self.text[p["offset"]:p["offset"] + 7]
            end = p["offset"] + len(data)
            return {"data": data, "next_offset": end, "eof": end == len(self.text),
                    "state": "COMPLETED", "path": "/x", "exists": True, "reason": None}
        self.d.methods["job.logs"] = logs

    def test_logs_pages_until_eof(self):
        self.assertEqual(self.c.logs(5), self.text)
        ps = self.d.params("job.logs")
        self.assertEqual([p["offset"] for p in ps], [0, 7, 14])
        self.assertEqual(ps[0], {"id": 5, "stream": "stdout", "offset": 0,
                                 "max_bytes": 1 << 20, "timeout": 0})
        self.assertEqual(self.c.logs(5, "stderr", tail=7), "line-3\n")
        self.assertEqual(self.d.params("job.logs")[-1]["stream"], "stderr")
        self.assertEqual(self.c.logs(5, tail=0), "")

    def test_follow_long_polls(self):
        self.assertEqual(list(self.c.follow(5, offset=7)), ["line-2\n", "line-3\n"])
        self.assertEqual([(p["offset"], p["timeout"]) for p in self.d.params("job.logs")],
                         [(7, 20), (14, 20)])

    def test_bad_stream(self):
        with self.assertRaisesRegex(ValueError, "stream 'both': expected stdout or stderr"):
            self.c.logs(5, "both")
        self.assertEqual(self.d.requests, [])

    def test_old_loomd(self):
        del self.d.methods["job.logs"]
        with self.assertRaisesRegex(loom.NotSupported, "no job.logs"):
            self.c.logs(5)


class Wait(Base):
    def setUp(self):
        super().setUp()
        self.states = ["PENDING", "RUNNING", "COMPLETED"]
        self.d.methods["job.get"] = lambda p: {"job": job_json(p["id"], self.states[0])}

        def wait(p):
            state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
            return {"ended": state in loom.TERMINAL_STATES,
                    "jobs": [{"id": p["ids"][0], "state": state, "reason": None,
                              "exit_code": None}]}
        self.d.methods["job.wait"] = wait

    def test_until_ended(self):
        self.assertEqual(self.c.wait(4).state, "COMPLETED")
        self.assertEqual(self.d.calls, [("job.wait", {"ids": [4], "timeout": 20})] * 3 +
                         [("job.get", {"id": 4})])

    def test_until_running(self):
        self.assertEqual(self.c.wait(4, states={"running"}).state, "COMPLETED")
        self.assertEqual(self.d.params("job.wait"), [{"ids": [4], "timeout": 1}] * 2)

    def test_timeout(self):
        with self.assertRaises(loom.WaitTimeout) as cm:
            self.c.wait(4, timeout=0)
        self.assertEqual((cm.exception.job_id, cm.exception.state), (4, "PENDING"))
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertEqual(self.d.params("job.wait"), [{"ids": [4], "timeout": 0}])

    def test_old_loomd(self):
        del self.d.methods["job.wait"]
        with self.assertRaises(loom.NotSupported):
            self.c.wait(4)


class Address(unittest.TestCase):
    def setUp(self):
        self.env = {k: os.environ.pop(k) for k in ("LOOM_URL", "LOOM_STATE_DIR", "LOOM_TOKEN",
                                                   "LOOM_SYSTEM_SOCKET") if k in os.environ}
        self.addCleanup(os.environ.update, self.env)
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        for k in ("LOOM_URL", "LOOM_STATE_DIR", "LOOM_TOKEN", "LOOM_SYSTEM_SOCKET"):
            os.environ.pop(k, None)

    def test_default_url(self):
        os.environ["LOOM_URL"] = "http://h:1"
        self.assertEqual(loom.default_url(), "http://h:1")
        del os.environ["LOOM_URL"]
        os.environ["LOOM_STATE_DIR"] = self.tmp
        self.assertEqual(loom.default_url(), "unix:" + os.path.join(self.tmp, "loomd.sock"))

    def test_token_file_over_tcp(self):
        os.environ["LOOM_STATE_DIR"] = self.tmp
        with open(os.path.join(self.tmp, "token"), "w") as f:
            f.write("cd" * 32 + "\n")
        self.assertEqual(loom.Client("http://127.0.0.1:1").token, "cd" * 32)
        self.assertIsNone(loom.Client("unix:/x").token)
        os.environ["LOOM_TOKEN"] = "t"
        self.assertEqual(loom.Client("http://127.0.0.1:1").token, "t")


if __name__ == "__main__":
    unittest.main()
