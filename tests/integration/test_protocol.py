"""Every loomd method through a standard-library Python client written from
docs/protocol.md, over TCP (with the token) and the Unix socket; batches;
clean shutdown on SIGTERM and the data after a restart."""

import os
import time
import stat
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, RpcError, HttpError, Client  # noqa: E402

MANIFEST = """apiVersion: batch/v1
kind: Job
metadata:
  name: y
spec:
  template:
    spec:
      containers:
      - name: main
        command: [python, train.py]
      restartPolicy: Never
"""


class Protocol(unittest.TestCase):
    def setUp(self):
        self.d = Loomd().start()
        self.c = self.d.client()

    def tearDown(self):
        self.c.close()
        self.d.cleanup()

    def test_server_info(self):
        info = self.c.info()
        self.assertEqual(info["name"], "loomd")
        self.assertEqual(info["api_version"], 1)
        self.assertEqual(info["durability"], "normal")
        self.assertEqual(info["tcp"], self.d.url)
        self.assertEqual(info["socket"], self.d.socket_path)
        self.assertEqual(info["state_dir"], self.d.state_dir)
        self.assertEqual(sorted(info["methods"]),
                         sorted(["server.info", "job.submit", "job.get", "job.list", "job.cancel",
                                 "node.list", "monitor.snapshot", "job.wait", "job.logs",
                                 "usage.report", "job.hold", "job.release", "job.requeue",
                                 "job.update", "zoo.add", "zoo.get", "zoo.list", "zoo.remove",
                                 "zoo.match", "zoo.warm", "dash.login", "job.usage",
                                 "cluster.usage"]))
        self.assertIsNone(info["scheduler"])  # --executor none: jobs are only queued
        self.assertEqual(info["jobs"]["PENDING"], 0)
        self.assertEqual(self.c.call("server.info", [])["name"], "loomd")
        self.assertEqual(self.c.call("server.info", {})["name"], "loomd")
        # The token file: 64 hex characters, mode 0600.
        st = os.stat(os.path.join(self.d.state_dir, "token"))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertRegex(self.d.token, r"^[0-9a-f]{64}$")

    def test_submit_get_full(self):
        r = self.c.submit("resnet", "#!/bin/bash\npython train.py\n", format="batch",
                          resources={"cpus": 8, "memory": "16GiB", "gpu_share": 500,
                                     "gpu_memory": 10 << 30, "gpu_type": "A100"},
                          time_limit="1h30m", priority=5, labels={"team": "vision", "exp": "7"},
                          submit_id="t-1")
        self.assertTrue(r["created"])
        self.assertGreater(r["id"], 0)
        self.assertEqual(r["state"], "PENDING")
        got = self.c.get(r["id"])
        self.assertEqual(got["script"], "#!/bin/bash\npython train.py\n")
        self.assertEqual(got["resources"], {"cpus": 8, "memory": 16 << 30, "gpus": 0,
                                            "gpu_share": 500, "gpu_memory": 10 << 30,
                                            "gpu_type": "A100"})
        self.assertEqual(got["time_limit"], 5400)
        self.assertEqual(got["priority"], 5)
        self.assertEqual(got["labels"], {"team": "vision", "exp": "7"})
        self.assertEqual(got["submit_id"], "t-1")
        self.assertIsNone(got["start_time"])
        self.assertRegex(got["submit_time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        self.assertEqual(len(got["events"]), 1)
        self.assertIsNone(got["events"][0]["from"])
        self.assertEqual(got["events"][0]["to"], "PENDING")
        # Defaults.
        d = self.c.get(self.c.submit("d", "")["id"])
        self.assertEqual(d["format"], "batch")
        self.assertEqual(d["resources"], {"cpus": 1, "memory": 0, "gpus": 0, "gpu_share": 0,
                                          "gpu_memory": 0, "gpu_type": None})
        self.assertEqual(d["time_limit"], 0)
        self.assertEqual(d["labels"], {})
        self.assertIsNone(d["submit_id"])
        # Positional params in the documented order.
        p = self.c.get(self.c.call("job.submit", ["pos", MANIFEST, "yaml", {"gpus": 2}, 60,
                                                  -1, {"k": "v"}, "t-pos"])["id"])
        self.assertEqual((p["name"], p["format"], p["resources"]["gpus"], p["time_limit"],
                          p["priority"], p["submit_id"]), ("pos", "yaml", 2, 60, -1, "t-pos"))
        self.assertEqual(self.c.call("job.get", [p["id"]])["job"]["script"], MANIFEST)
        # A YAML job must be a runnable batch/v1 Job manifest (docs/exec.md).
        for bad, needle in [("steps: [1\n", "line"), ("steps: 1\n", "batch/v1"),
                            (MANIFEST.replace("command: [python, train.py]", "image: x"),
                             "command")]:
            with self.assertRaises(RpcError) as e:
                self.c.submit("bad", bad, format="yaml")
            self.assertEqual(e.exception.code, -32602)
            self.assertIn("script (format yaml)", e.exception.message)
            self.assertIn(needle, e.exception.message)

    def test_idempotent_submit_id(self):
        a = self.c.submit("first", "a", submit_id="same")
        b = self.c.submit("second", "b", submit_id="same")
        self.assertTrue(a["created"])
        self.assertFalse(b["created"])
        self.assertEqual(a["id"], b["id"])
        self.assertEqual(self.c.get(b["id"])["name"], "first")
        # In one batch, and over the Unix socket as well.
        u = self.d.client(unix=True)
        res = u.batch([("job.submit", {"name": "x", "script": "", "submit_id": "b1"})] * 5)
        ids = {r[1]["id"] for r in res}
        self.assertEqual(len(ids), 1)
        self.assertEqual(sum(r[1]["created"] for r in res), 1)
        u.close()
        self.assertEqual(len(self.c.list_all()), 2)

    def test_list_pagination_and_filter(self):
        ids = [self.c.submit(f"j{i}", "")["id"] for i in range(23)]
        for i in ids[::4]:
            self.c.cancel(i)
        pages, seen, cursor = 0, [], None
        while True:
            r = self.c.call("job.list", {"limit": 10, "cursor": cursor})
            seen += [j["id"] for j in r["jobs"]]
            pages += 1
            cursor = r["next_cursor"]
            if cursor is None:
                break
        self.assertEqual(seen, ids)
        self.assertEqual(pages, 3)
        self.assertEqual([j["id"] for j in self.c.list_all(state="CANCELLED")], ids[::4])
        self.assertEqual(len(self.c.list_all(state=["pending", "CANCELLED"])), 23)
        self.assertEqual(len(self.c.list_all(state="RUNNING")), 0)
        # Positional: state, limit.
        r = self.c.call("job.list", ["PENDING", 2])
        self.assertEqual(len(r["jobs"]), 2)
        self.assertIsNotNone(r["next_cursor"])
        # Keyset: a job submitted while paging shows up on a later page.
        first = self.c.call("job.list", {"limit": 20})
        new = self.c.submit("late", "")["id"]
        rest = self.c.call("job.list", {"limit": 20, "cursor": first["next_cursor"]})
        self.assertEqual([j["id"] for j in rest["jobs"]], ids[20:] + [new])

    def test_cancel(self):
        jid = self.c.submit("c", "")["id"]
        job = self.c.cancel(jid, reason="no longer needed")
        self.assertEqual(job["state"], "CANCELLED")
        self.assertEqual(job["reason"], "no longer needed")
        self.assertIsNotNone(job["end_time"])
        with self.assertRaises(RpcError) as e:
            self.c.cancel(jid)
        self.assertEqual(e.exception.code, -32002)
        self.assertIn("already CANCELLED", e.exception.message)
        self.assertEqual(e.exception.data, {"id": jid})
        with self.assertRaises(RpcError) as e:
            self.c.cancel(jid + 1000)
        self.assertEqual(e.exception.code, -32001)
        got = self.c.get(jid)
        self.assertEqual([(e["from"], e["to"]) for e in got["events"]],
                         [(None, "PENDING"), ("PENDING", "CANCELLED")])
        self.assertEqual(got["events"][1]["reason"], "no longer needed")
        with self.assertRaises(RpcError) as e:
            self.c.get(jid + 1000)
        self.assertEqual(e.exception.code, -32001)
        self.assertEqual(self.c.info()["jobs"]["CANCELLED"], 1)

    def test_batch_mixed(self):
        jid = self.c.submit("m", "")["id"]
        res = self.c.batch([("job.submit", {"name": "b", "script": ""}),
                            ("job.get", {"id": jid}),
                            ("job.cancel", {"id": jid}),
                            ("job.cancel", {"id": 99999}),
                            ("job.submit", {"name": 5, "script": ""}),
                            ("nope", None),
                            ("server.info", None)])
        kinds = [r[0] for r in res]
        self.assertEqual(kinds, ["ok", "ok", "ok", "error", "error", "error", "ok"])
        self.assertEqual([r[1]["code"] for r in res if r[0] == "error"], [-32001, -32602, -32601])
        self.assertIn("name", res[4][1]["message"])
        # Notifications only: HTTP 204, but the submission happens.
        before = len(self.c.list_all())
        self.assertIsNone(self.c.post([{"jsonrpc": "2.0", "method": "job.submit",
                                        "params": {"name": "n", "script": ""}}]))
        self.assertEqual(len(self.c.list_all()), before + 1)

    def test_auth_and_http(self):
        status, _, body = self.c.request("GET", "/healthz", auth=False)
        self.assertEqual(status, 200)
        nobody = Client(self.d.url)
        with self.assertRaises(HttpError) as e:
            nobody.call("server.info")
        self.assertEqual(e.exception.status, 401)
        nobody.close()
        wrong = Client(self.d.url, "0" * 64)
        with self.assertRaises(HttpError) as e:
            wrong.submit("x", "")
        self.assertEqual(e.exception.status, 401)
        wrong.close()
        self.assertEqual(self.c.list_all(), [])
        # The Unix socket needs no token and is mode 0600.
        self.assertEqual(stat.S_IMODE(os.stat(self.d.socket_path).st_mode), 0o600)
        u = self.d.client(unix=True)
        self.assertEqual(u.info()["name"], "loomd")
        u.close()

    def test_monitor_rates(self):
        """monitor.snapshot gives CPU utilisation over the interval since its
        last reading (the dashboard's CPU bar read 0% from a one-shot
        reading without rates)."""
        first = self.c.call("monitor.snapshot", {"groups": "cpu"})
        time.sleep(1.2)
        second = self.c.call("monitor.snapshot", {"groups": "cpu,memory"})
        cpu = second["snapshot"]["cpu"]
        self.assertGreaterEqual(second["rates_interval_seconds"], 1.0)
        self.assertTrue(0.0 <= cpu["busy_fraction"] <= 1.0, cpu.get("busy_fraction"))
        self.assertTrue(all(0.0 <= c["busy_fraction"] <= 1.0 for c in cpu["cores"]))
        # a reading right after: too close to measure, the same last kept
        third = self.c.call("monitor.snapshot", {"groups": "cpu"})
        if "rates_interval_seconds" in third:
            self.assertGreaterEqual(third["rates_interval_seconds"], 1.0)
        self.assertIn("snapshot", first)

    def test_metrics(self):
        self.c.submit("a", "")
        self.c.cancel(self.c.submit("b", "")["id"])
        status, headers, body = self.c.request("GET", "/metrics")
        self.assertEqual(status, 200)
        text = body.decode()
        self.assertIn('loom_jobs{state="PENDING"} 1\n', text)
        self.assertIn('loom_jobs{state="CANCELLED"} 1\n', text)
        self.assertIn("loom_store_queue_depth 0\n", text)
        self.assertIn("loom_store_commits_total ", text)
        self.assertIn("# TYPE loom_store_wal_restarts_total counter\nloom_store_wal_restarts_total ",
                      text)
        # two submissions and a cancel each wrote to the WAL
        frames = int(text.split("\nloom_store_wal_frames_max ")[1].split("\n")[0])
        self.assertGreater(frames, 0)
        self.assertIn("# TYPE loom_jobs gauge", text)
        import shutil
        import subprocess
        if shutil.which("promtool"):  # optional (DESIGN.md): lint when present
            p = subprocess.run(["promtool", "check", "metrics"], input=body, capture_output=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_sigterm_and_restart(self):
        ids = [self.c.submit(f"r{i}", "x", submit_id=f"r{i}")["id"] for i in range(10)]
        self.c.cancel(ids[0])
        self.c.close()
        self.assertEqual(self.d.stop(), 0)
        self.assertFalse(os.path.exists(self.d.socket_path))
        self.d.start()
        self.c = self.d.client()
        jobs = self.c.list_all()
        self.assertEqual([j["id"] for j in jobs], ids)
        self.assertEqual(jobs[0]["state"], "CANCELLED")
        self.assertEqual(self.c.submit("again", "", submit_id="r3")["id"], ids[3])
        self.assertGreater(self.c.submit("new", "")["id"], ids[-1])
        self.assertEqual(self.c.info()["jobs"], {"PENDING": 10, "RUNNING": 0, "COMPLETED": 0,
                                                 "FAILED": 0, "CANCELLED": 1, "TIMEOUT": 0})

    def test_sigterm_under_load(self):
        """SIGTERM while clients submit: loomd exits 0, every acknowledged
        job is there after a restart, requests in flight get answers."""
        import threading
        acked, errors = {}, []
        stop = threading.Event()

        def submitter(tid):
            c = self.d.client()
            seq = 0
            while not stop.is_set():
                keys = [f"t{tid}-{seq + i}" for i in range(20)]
                seq += 20
                try:
                    out = c.batch([("job.submit", {"name": k, "script": "", "submit_id": k})
                                   for k in keys])
                except Exception:
                    break  # loomd stopped accepting: fine
                for k, (kind, r) in zip(keys, out):
                    if kind == "ok":
                        acked[k] = r["id"]
                    elif r["code"] != -32005:  # shutting down
                        errors.append(r)
            c.close()

        threads = [threading.Thread(target=submitter, args=(i,)) for i in range(3)]
        for t in threads:
            t.start()
        import time
        # until every submitter has had a batch acknowledged: loomd stops
        # while all three are submitting
        deadline = time.monotonic() + 30
        while len({k.split("-")[0] for k in list(acked)}) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        self.assertEqual(len({k.split("-")[0] for k in list(acked)}), 3, errors)
        self.assertEqual(self.d.stop(), 0)
        stop.set()
        for t in threads:
            t.join(30)
        self.assertEqual(errors, [])
        self.assertGreater(len(acked), 0)
        self.d.start()
        self.c = self.d.client()
        stored = {j["submit_id"]: j["id"] for j in self.c.list_all()}
        self.assertEqual({k: stored.get(k) for k in acked}, acked)

    def test_second_loomd_refused(self):
        other = Loomd(state_dir=self.d.state_dir)
        with self.assertRaises(RuntimeError) as e:
            other.start(timeout=10)
        self.assertIn("another loomd", str(e.exception))
        self.assertTrue(self.d.alive())


class LoomdOptions(unittest.TestCase):
    def run_loomd(self, *args):
        import subprocess
        from loomd_client import build_dir
        p = subprocess.run([os.path.join(build_dir(), "loomd")] + list(args),
                           capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr

    def test_usage(self):
        rc, out, _ = self.run_loomd("--help")
        self.assertEqual(rc, 0)
        self.assertIn("usage: loomd", out)
        self.assertIn("--durability", out)
        rc, out, _ = self.run_loomd("--version")
        self.assertEqual(rc, 0)
        self.assertRegex(out, r"^loomd \d+\.\d+\.\d+")
        rc, _, err = self.run_loomd("--durability", "fsync")
        self.assertEqual(rc, 2)
        self.assertIn("--durability", err)
        self.assertIn("fsync", err)
        rc, _, err = self.run_loomd("--log-level", "loud")
        self.assertEqual(rc, 2)
        self.assertEqual(self.run_loomd("--bogus")[0], 2)
        self.assertEqual(self.run_loomd("extra")[0], 2)
        rc, _, err = self.run_loomd("--state-dir", "/proc/loom-cannot-create")
        self.assertEqual(rc, 1)
        self.assertIn("/proc/loom-cannot-create", err)

    def test_durability_full(self):
        with Loomd(durability="full") as d:
            c = d.client(unix=True)
            self.assertEqual(c.info()["durability"], "full")
            jid = c.submit("f", "x", submit_id="f1")["id"]
            c.close()
            self.assertEqual(d.stop(), 0)
            d.start()
            c = d.client()
            self.assertEqual(c.get(jid)["submit_id"], "f1")
            c.close()

    def test_no_tcp(self):
        # With TCP off there is no loomd.url to wait for, so start by hand.
        import subprocess
        import tempfile
        import time
        from loomd_client import build_dir
        state = tempfile.mkdtemp(prefix="loom-it-")
        p = subprocess.Popen([os.path.join(build_dir(), "loomd"), "--listen", "none",
                              "--state-dir", state, "--log-level", "warn"])
        try:
            sock = os.path.join(state, "loomd.sock")
            for _ in range(300):
                if os.path.exists(sock):
                    break
                time.sleep(0.02)
            time.sleep(0.1)
            c = Client("unix:" + sock)
            info = c.info()
            c.close()
            self.assertIsNone(info["tcp"])
            self.assertFalse(os.path.exists(os.path.join(state, "loomd.url")))
        finally:
            p.terminate()
            self.assertEqual(p.wait(30), 0)
            import shutil
            shutil.rmtree(state, ignore_errors=True)


if __name__ == "__main__":
    unittest.main(verbosity=2)
