"""Usage over time (issue 35, docs/monitoring.md "Usage series"): a running
job's cgroup or process tree and its GPUs are sampled into the store;
job.usage returns the series as columns, `loom show ID --usage` draws it,
the Python client gives it as columns. The GPUs are NVML's test double
(tests/nvml/h200x2.json): a job holding GPU 0 whole sees that device's
37 % utilisation, 52613349376 bytes and 312.5 W in its series."""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, RpcError, build_dir  # noqa: E402

SRC = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(SRC, "python"))


class JobUsage(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        double = os.path.join(build_dir(), "nvml-double", "libnvidia-ml.so.1")
        if not os.path.exists(double):
            raise unittest.SkipTest("no NVML test double in this build")
        env = {"LOOM_NVML_LIB": double,
               "LOOM_NVML_SCENARIO": os.path.join(SRC, "tests", "nvml", "h200x2.json")}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            cls.d = Loomd(extra_args=["--executor", "local"]).start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        cls.c = cls.d.client(unix=True)

    @classmethod
    def tearDownClass(cls):
        cls.c.close()
        cls.d.stop()
        cls.d.cleanup()

    def wait_points(self, job, n, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            u = self.c.call("job.usage", {"id": job})
            if u["points"] >= n:
                return u
            time.sleep(0.2)
        self.fail(f"job {job}: fewer than {n} usage points in {timeout} s: {u}")

    def test_series_with_gpu(self):
        # a busy loop for CPU, then sleep: the series must show both
        script = "#!/bin/sh\ntimeout 3 sh -c 'while :; do :; done'\nsleep 60\n"
        job = self.c.submit("busy", script, resources={"gpus": 1})["id"]
        u = self.wait_points(job, 6)
        self.assertEqual(u["state"], "RUNNING")
        self.assertEqual(u["max_points"], 1000)
        cols = u["columns"]
        n = u["points"]
        for k in ("time", "span_seconds", "cpu_cores", "memory_bytes", "memory_peak_bytes",
                  "read_bytes_per_second", "write_bytes_per_second"):
            self.assertEqual(len(cols[k]), n, k)
        self.assertEqual(cols["time"], sorted(cols["time"]))
        self.assertTrue(all(0.5 < s < 3 for s in cols["span_seconds"]), cols["span_seconds"])
        # the busy loop, then sleep (on a loaded machine the loop gets well
        # under a core: the test compares the two phases)
        cpu = cols["cpu_cores"]
        self.assertGreater(max(cpu), 0.03, cpu)
        self.assertLess(cpu[-1], max(cpu) / 2, cpu)
        self.assertTrue(all(m > 0 for m in cols["memory_bytes"]), cols["memory_bytes"])
        # the GPU the job holds, whole: the device's figures from the double
        gpu_ids = self.c.get(job)["run"]["gpus"]
        self.assertEqual([g["index"] for g in u["gpus"]], gpu_ids)
        g = u["gpus"][0]
        want = {0: (37, 52613349376, 312.5), 1: (0, 0, 75.0)}.get(gpu_ids[0])
        if want:
            self.assertEqual(set(g["util_percent"]), {want[0]})
            self.assertEqual(set(g["memory_bytes"]), {want[1]})
            self.assertEqual(set(g["power_watts"]), {want[2]})
        # since: only newer points
        later = self.c.call("job.usage", {"id": job, "since": cols["time"][-2]})
        self.assertEqual(later["columns"]["time"][0], cols["time"][-1])

        # loom show ID --usage draws it, with units and axes
        env = dict(os.environ, LOOM_URL="unix:" + self.d.socket_path)
        out = subprocess.run([os.path.join(build_dir(), "loom"), "show", str(job), "--usage"],
                             capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        text = out.stdout
        self.assertIn("CPU (cores busy): mean", text)
        self.assertIn("memory: mean", text)
        self.assertIn(f"GPU {gpu_ids[0]} utilisation", text)
        self.assertIn("W", text.split(f"GPU {gpu_ids[0]} power")[1])
        self.assertIn("(time since the first sample)", text)
        self.assertRegex(text, r"█|▇|▆|▅|▄")

        # the Python client: columns
        from loom.client import Client
        py = Client("unix:" + self.d.socket_path)
        s = py.job_usage(job)
        self.assertGreaterEqual(len(s["time"]), n)
        self.assertIn(f"gpu{gpu_ids[0]}_util_percent", s)
        self.assertEqual(len(s[f"gpu{gpu_ids[0]}_util_percent"]), len(s["time"]))
        py.close()
        self.c.cancel(job)

    def test_summary_hint(self):
        # two GPUs asked, and in the double only GPU 0 is busy: once the job
        # ends, its summary says it used 1 and hints at asking for fewer
        job = self.c.submit("two", "#!/bin/sh\nsleep 5\n", resources={"gpus": 2})["id"]
        deadline = time.monotonic() + 60
        while self.c.get(job)["state"] in ("PENDING", "RUNNING"):
            self.assertLess(time.monotonic(), deadline, "the job did not end")
            time.sleep(0.2)
        j = self.c.get(job)
        self.assertEqual(j["state"], "COMPLETED")
        s = j["usage_summary"]
        gpus = j["run"]["gpus"]
        self.assertEqual(s["gpus"]["requested"], 2)
        self.assertEqual([g["index"] for g in s["gpus"]["per_gpu"]], gpus)
        self.assertGreaterEqual(s["points"], 3)
        self.assertLess(s["cpu"]["efficiency"], 0.2)  # sleep
        if gpus == [0, 1]:
            self.assertEqual(s["gpus"]["used"], 1)
            self.assertEqual(s["gpus"]["util_peak_percent"], 37)
            self.assertEqual(s["gpus"]["util_mean_percent"], 37 / 2)
            self.assertIn("asked for 2 GPUs, used 1", " ".join(s["hints"]))
        env = dict(os.environ, LOOM_URL="unix:" + self.d.socket_path)
        out = subprocess.run([os.path.join(build_dir(), "loom"), "show", str(job)],
                             capture_output=True, text=True, env=env, timeout=30)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("summary:     CPU", out.stdout)
        self.assertIn("(CPU efficiency", out.stdout)
        if gpus == [0, 1]:
            self.assertIn("hint:        asked for 2 GPUs, used 1", out.stdout)
            self.assertIn("GPUs 1 used of 2 held", out.stdout)
        # job.usage carries the same summary
        self.assertEqual(self.c.call("job.usage", {"id": job})["summary"], s)

    def test_cluster_series(self):
        # a point at start-up (nothing allocated), then one a minute: the
        # next shows the GPU job that started meanwhile
        first = self.c.call("cluster.usage")
        self.assertGreaterEqual(first["points"], 1)
        cols = first["columns"]
        self.assertEqual(cols["gpus_total"][0], 3)
        self.assertEqual(cols["cpus_total"][0], os.cpu_count())
        self.assertGreater(cols["memory_total_bytes"][0], 0)
        job = self.c.submit("held", "#!/bin/sh\nsleep 300\n", resources={"gpus": 1})["id"]
        deadline = time.monotonic() + 150
        while True:
            u = self.c.call("cluster.usage", {"since": cols["time"][-1]})
            c = u["columns"]
            if any(a >= 1 for a in c["gpus_allocated"]):
                break
            self.assertLess(time.monotonic(), deadline, f"no allocation seen: {u}")
            time.sleep(1)
        k = next(i for i, a in enumerate(c["gpus_allocated"]) if a >= 1)
        self.assertGreaterEqual(c["gpus_whole"][k], 1)
        self.assertEqual(c["gpus_shared"][k], 0)
        self.assertGreaterEqual(c["running"][k], 1)
        self.assertGreaterEqual(c["cpus_allocated"][k], 1)
        self.assertGreater(c["time"][0], cols["time"][-1])  # since: newer points only
        self.c.cancel(job)
        with self.assertRaises(RpcError) as e:
            self.c.call("cluster.usage", {"since": "an hour ago"})
        self.assertIn("since", e.exception.message)

    def test_bad_input(self):
        with self.assertRaises(RpcError) as e:
            self.c.call("job.usage", {"id": 999999})
        self.assertEqual(e.exception.code, -32001)
        with self.assertRaises(RpcError) as e:
            self.c.call("job.usage", {"id": "x"})
        self.assertEqual(e.exception.code, -32602)
        self.assertIn("id", e.exception.message)
        with self.assertRaises(RpcError) as e:
            self.c.call("job.usage", {"id": 1, "since": "yesterday"})
        self.assertIn("since", e.exception.message)


if __name__ == "__main__":
    unittest.main()
