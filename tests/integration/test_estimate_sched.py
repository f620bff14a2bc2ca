"""Scheduler integration of the estimator (issue 8): a submission that names
a model gets its GPU memory request from the estimate plus loomd's margin,
and placement on shared GPUs respects it.

The models are tiny hand-written ONNX files (onnx_tiny.py: weights declared
by shape, no data), so a "4 GiB" model is a file of 200 bytes and no torch
is needed. The expected requests are computed here from `loom estimate
--json` (the estimator's total) and the documented margin formula, so the
test checks loomd's arithmetic and bookkeeping, not the estimator again.

loomd runs the local executor with one virtual node of two 8 GiB GPUs:
  (a) the request equals the estimate plus the margin, and the job record
      shows where it came from (job.get, loom show);
  (b) two jobs whose requests fit together share one GPU;
  (c) a job whose request does not fit the free memory of the shared GPU
      goes to the other GPU, and one that fits neither waits until memory
      is freed.
Also: errors (-32006 naming the model, -32602), an explicit gpu_memory,
the estimate cache, a configured margin, the catalog -> loom gen path, and
the default node built from NVML's GPUs (through the NVML test double)."""

import json
import math
import os
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import onnx_tiny  # noqa: E402
from loomd_client import Loomd, RpcError, build_dir  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30
LOOM = os.path.join(build_dir(), "loom")
SRC = os.environ.get("LOOM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
DEVICES = os.path.join(SRC, "workloads", "devices")


def estimate_total(path, batch, train=False):
    """The estimator's own total (bytes) for the h200 device."""
    args = [LOOM, "estimate", path, "--batch", str(batch), "--json", "--device", "h200"]
    if train:
        args.append("--train")
    p = subprocess.run(args, capture_output=True, text=True,
                       env=dict(os.environ, LOOM_DEVICE_DIR=DEVICES), timeout=60)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["memory"]["total"]


def request(total, fraction=0.10, extra=256 * MIB):
    """docs/estimate.md: total x (1 + fraction) + extra, up to whole MiB."""
    b = total + math.ceil(total * fraction) + extra
    return (b + MIB - 1) // MIB * MIB


def wait_for(pred, what, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out waiting for " + what)


class EstimateScheduling(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="loom-estsched-")
        # small: ~1.6 GiB at inference (1 GiB of weights + the 512 MiB context),
        # ~2 GiB requested
        cls.small = os.path.join(cls.tmp, "small.onnx")
        onnx_tiny.mlp(cls.small, 16384, 16384, 1000)
        # big: ~3.8 GiB for a training step with Adam (0.5 GiB of weights,
        # gradients, two states, Adam's temporaries), ~4.4 GiB requested
        cls.big = os.path.join(cls.tmp, "big.onnx")
        onnx_tiny.mlp(cls.big, 8192, 16384, 1000)
        cls.bad = os.path.join(cls.tmp, "loop.onnx")
        onnx_tiny.unsupported(cls.bad)
        cls.req_small = request(estimate_total(cls.small, 8))
        cls.req_big = request(estimate_total(cls.big, 8, train=True))
        # the scenario below needs: two small fit one GPU, small + big do not
        assert 2 * cls.req_small <= 8 * GIB < cls.req_small * 2 + cls.req_big, \
            (cls.req_small, cls.req_big)
        assert cls.req_big <= 8 * GIB - cls.req_small
        cls.d = Loomd(extra_args=["--executor", "local", "--placement", "firstfit",
                                  "--node", "name=n1,cpus=16,memory=32GiB,gpus=2,"
                                  "gpu_type=virtual,gpu_memory=8GiB",
                                  "--grace", "1s"]).start()
        cls.c = cls.d.client(unix=True)

    @classmethod
    def tearDownClass(cls):
        for j in cls.c.list_all(state=["PENDING", "RUNNING"]):
            cls.c.cancel(j["id"])
        wait_for(lambda: not cls.c.list_all(state=["RUNNING"]), "jobs to stop")
        cls.c.close()
        cls.d.stop()
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def submit(self, name, model, share=300, **extra):
        res = {"gpu_share": share}
        res.update(extra.pop("resources", {}))
        return self.c.submit(name, "#!/bin/sh\nsleep 300\n", resources=res, model=model,
                             **extra)["id"]

    def state(self, jid):
        return self.c.get(jid)["state"]

    def gpu_of(self, jid):
        run = wait_for(lambda: self.c.get(jid)["run"], f"job {jid} to be placed")
        return run["node"], run["gpus"]

    def gpus(self):
        return self.c.call("node.list")["nodes"][0]["gpus"]

    def test_placement_by_estimate(self):
        small = {"path": self.small, "batch": 8}
        big = {"path": self.big, "batch": 8, "train": True}
        # (a) the request is the estimate plus 10% + 256 MiB, recorded
        j1 = self.submit("small-1", small)
        job = self.c.get(j1)
        self.assertEqual(job["resources"]["gpu_memory"], self.req_small)
        est = job["estimate"]
        self.assertTrue(est["applied"])
        self.assertEqual(est["request_bytes"], self.req_small)
        self.assertEqual(est["memory"]["total"], estimate_total(self.small, 8))
        self.assertEqual(est["margin"], {"fraction": 0.1, "extra_bytes": 256 * MIB})
        self.assertEqual(est["model"], {"path": self.small, "batch": 8, "train": False,
                                        "optimizer": "adam", "precision": "fp32",
                                        "device": "h200"})
        p = subprocess.run([LOOM, "--url", "unix:" + self.d.socket_path, "show", str(j1)],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("(from the model's estimate)", p.stdout)
        self.assertIn("estimate + 10% + 256MiB (the job's gpu memory)", p.stdout)
        self.assertEqual(self.gpu_of(j1), ("n1", [0]))
        # (b) a second small job shares GPU 0: both requests fit its 8 GiB
        j2 = self.submit("small-2", small)
        self.assertEqual(self.gpu_of(j2), ("n1", [0]))
        wait_for(lambda: self.state(j1) == "RUNNING" and self.state(j2) == "RUNNING",
                 "both small jobs to run")
        g = self.gpus()
        self.assertEqual(g[0]["free_milli"], 400)
        self.assertEqual(g[0]["memory_free_bytes"], 8 * GIB - 2 * self.req_small)
        # (c) a big job fits GPU 0's share (400 left) but not its memory:
        # it goes to GPU 1
        j3 = self.submit("big-1", big)
        self.assertEqual(self.gpu_of(j3), ("n1", [1]))
        self.assertEqual(self.c.get(j3)["resources"]["gpu_memory"], self.req_big)
        # ... and a second big job fits neither GPU's memory: it waits
        j4 = self.submit("big-2", big)
        self.c.wait_steps(5)  # five scheduling steps that saw it
        self.assertEqual(self.state(j4), "PENDING")
        self.assertIsNone(self.c.get(j4)["run"])
        # an explicit gpu_memory wins over the estimate (kept for comparison)
        j5 = self.submit("big-explicit", big, resources={"gpu_memory": "1GiB"})
        job = self.c.get(j5)
        self.assertEqual(job["resources"]["gpu_memory"], GIB)
        self.assertFalse(job["estimate"]["applied"])
        self.assertEqual(job["estimate"]["request_bytes"], self.req_big)
        self.assertEqual(self.gpu_of(j5), ("n1", [0]))  # 1 GiB fits beside the two small
        self.assertEqual(self.state(j4), "PENDING")
        # memory comes back when the big job on GPU 1 ends: the waiting one runs there
        self.c.cancel(j3)
        self.assertEqual(self.gpu_of(j4), ("n1", [1]))
        wait_for(lambda: self.state(j4) == "RUNNING", "the waiting big job to start")
        # the same model submitted again came from the cache
        est = self.c.info()["estimator"]
        self.assertEqual(est["margin"], "10%+256MiB")
        self.assertGreaterEqual(est["cache_hits"], 3)

    def test_errors_store_nothing(self):
        before = len(self.c.list_all())
        with self.assertRaises(RpcError) as e:
            self.submit("x", {"path": self.bad, "batch": 2})
        self.assertEqual(e.exception.code, -32006)
        self.assertIn("node 'mix' (Loop): operator 'Loop' is not supported",
                      e.exception.message)
        self.assertEqual(e.exception.data["model"], self.bad)
        missing = os.path.join(self.tmp, "missing.onnx")
        with self.assertRaises(RpcError) as e:
            self.submit("x", {"path": missing, "batch": 2})
        self.assertEqual(e.exception.code, -32006)
        self.assertIn(missing, e.exception.message)
        for model, needle in [({"path": "small.onnx", "batch": 2}, "model.path"),
                              ({"path": self.small}, "model.batch: required"),
                              ({"path": self.small, "batch": 2, "precision": "fp8"},
                               "model.precision"),
                              ({"path": self.small, "batch": 2, "device": "nope"}, None)]:
            with self.assertRaises(RpcError) as e:
                self.submit("x", model)
            if needle:
                self.assertEqual(e.exception.code, -32602)
                self.assertIn(needle, e.exception.message)
            else:  # a device loomd does not have
                self.assertEqual(e.exception.code, -32006)
                self.assertIn("device 'nope'", e.exception.message)
        with self.assertRaises(RpcError) as e:  # no GPU asked: nothing to size
            self.c.submit("x", "true", model={"path": self.small, "batch": 2})
        self.assertEqual(e.exception.code, -32602)
        self.assertIn("asks for no GPU", e.exception.message)
        # loom submit: exit 1 with loomd's message
        script = os.path.join(self.tmp, "s.sh")
        with open(script, "w") as f:
            f.write("#!/bin/sh\ntrue\n")
        p = subprocess.run([LOOM, "--url", "unix:" + self.d.socket_path, "submit", script,
                            "--gpu-share", "0.1", "--model", self.bad, "--batch", "2"],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 1)
        self.assertIn("cannot estimate the model", p.stderr)
        self.assertEqual(len(self.c.list_all()), before)


class MarginCatalogAndNvml(unittest.TestCase):
    """A configured margin, generated jobs from a catalog's model object, and
    the default node from NVML (the test double of tests/nvml)."""

    def test_margin_and_catalog(self):
        tmp = tempfile.mkdtemp(prefix="loom-estsched-cat-")
        model = os.path.join(tmp, "m.onnx")
        onnx_tiny.mlp(model, 4096, 4096, 100)
        d = Loomd(extra_args=["--estimate-margin", "25%+1GiB", "--device-dir", DEVICES,
                              "--estimate-device", "cpu-local"]).start()
        try:
            c = d.client(unix=True)
            jid = c.submit("m", "true", resources={"gpus": 1},
                           model={"path": model, "batch": 4, "train": True,
                                  "device": "h200"})["id"]
            job = c.get(jid)
            total = estimate_total(model, 4, train=True)
            self.assertEqual(job["resources"]["gpu_memory"], request(total, 0.25, GIB))
            self.assertEqual(job["estimate"]["margin"], {"fraction": 0.25, "extra_bytes": GIB})
            # without a device in the reference, loomd's --estimate-device
            jid = c.submit("m", "true", resources={"gpus": 1},
                           model={"path": model, "batch": 4})["id"]
            self.assertEqual(c.get(jid)["estimate"]["model"]["device"], "cpu-local")
            # the catalog's model object, batch drawn from a parameter, through loom gen
            catalog = os.path.join(tmp, "cat.json")
            with open(catalog, "w") as f:
                json.dump({"version": 1, "jobs": [{
                    "name": "mlp", "executable": "/bin/true",
                    "resources": {"cpus": 1, "memory": "64MiB", "gpus": 1, "gpu_share": 250},
                    "model": {"path": "m.onnx", "batch": "${batch}", "train": True,
                              "device": "h200"},
                    "parameters": {"batch": {"type": "choice", "values": [2, 8]}}}]}, f)
            before = c.info()["estimator"]
            p = subprocess.run([LOOM, "gen", "--catalog", catalog, "--count", "12",
                                "--rate", "200/s", "--seed", "5", "--submit",
                                "unix:" + d.socket_path, "--json"],
                               capture_output=True, text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stderr)
            want = {b: request(estimate_total(model, b, train=True), 0.25, GIB) for b in (2, 8)}
            gen = [j for j in c.list_all() if j["name"] == "mlp"]
            self.assertEqual(len(gen), 12)
            seen = set()
            for j in gen:
                b = j["estimate"]["model"]["batch"]
                seen.add(b)
                self.assertEqual(j["estimate"]["model"]["path"], model)
                self.assertEqual(j["resources"]["gpu_share"], 250)
                self.assertEqual(j["resources"]["gpu_memory"], want[b])
            self.assertEqual(seen, {2, 8})
            # each generated submission consulted the estimator once (hits
            # vary: the generator's senders may miss the same key at once)
            after = c.info()["estimator"]
            self.assertEqual(after["cache_hits"] + after["cache_misses"] -
                             before["cache_hits"] - before["cache_misses"], 12)
            c.close()
        finally:
            d.stop()
            d.cleanup()
            subprocess.run(["rm", "-rf", tmp])

    def test_default_node_from_nvml(self):
        double = os.path.join(build_dir(), "nvml-double", "libnvidia-ml.so.1")
        if not os.path.exists(double):
            self.skipTest("no NVML test double in this build")
        env = {"LOOM_NVML_LIB": double,
               "LOOM_NVML_SCENARIO": os.path.join(SRC, "tests", "nvml", "h200x2.json")}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            d = Loomd(extra_args=["--executor", "local"]).start()
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
        try:
            c = d.client(unix=True)
            n = c.call("node.list")["nodes"][0]
            self.assertEqual(n["gpu_type"], "h200")
            self.assertEqual(n["gpu_count"], 3)
            # NVML's 150754820096 bytes, in the whole MiB the model counts
            self.assertEqual([g["memory_free_bytes"] for g in n["gpus"]],
                             [150754820096 // MIB * MIB] * 3)
            c.close()
        finally:
            d.stop()
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
