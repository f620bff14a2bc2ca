"""Conformance of loom's reading of Kubernetes Job manifests against what
the Kubernetes documentation specifies (kubernetes.io: "Resource
Management for Pods and Containers", "Jobs", "Schedule GPUs"):

- memory quantities: 128974848, 129e6, 129M, 128974848000m and 123Mi are
  the documentation's own examples (decimal and binary suffixes, exponent,
  milli); cpu "0.1" is "100m"; a fractional CPU is rounded up to a whole
  CPU by loom (with a warning);
- a container that gives only a limit gets that limit as its request;
  GPUs (nvidia.com/gpu) are given in limits;
- spec.activeDeadlineSeconds bounds the Job's run time; spec.backoffLimit
  defaults to 6; completions with parallelism run that many indexed tasks
  (indices 0..completions-1), parallelism at a time;
- a Job's pod template may only have restartPolicy Never or OnFailure;
- metadata.generateName names a Job without metadata.name.

Each manifest is submitted with `loom submit` to loomd (no executor) and the
job loom stored is compared with the documented meaning.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")


def job(name, spec_extra="", container="", pod=""):
    return ("apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: " + name + "\nspec:\n"
            + spec_extra + "  template:\n    spec:\n      restartPolicy: Never\n" + pod
            + "      containers:\n      - name: main\n        image: python:3.11\n"
            "        command: [python3, -c, 'print(1)']\n" + container)


def limits(**kv):
    body = ", ".join(f"{k.replace('_', '.').replace('nvidia.com.gpu', 'nvidia.com/gpu')}: "
                     f"\"{v}\"" for k, v in kv.items())
    return "        resources:\n          limits: {" + body + "}\n"


# name, manifest, expected {path: value} in loom's job object
CASES = [
    ("mem-plain", job("mem-plain", container=limits(memory="128974848")),
     {"resources.memory": 128974848}),
    ("mem-exp", job("mem-exp", container=limits(memory="129e6")),
     {"resources.memory": 129000000}),
    ("mem-decimal", job("mem-decimal", container=limits(memory="129M")),
     {"resources.memory": 129000000}),
    ("mem-milli", job("mem-milli", container=limits(memory="128974848000m")),
     {"resources.memory": 128974848}),
    ("mem-binary", job("mem-binary", container=limits(memory="123Mi")),
     {"resources.memory": 128974848}),
    ("mem-gi", job("mem-gi", container=limits(memory="1.5Gi")),
     {"resources.memory": 1610612736}),
    ("cpu-tenth", job("cpu-tenth", container=limits(cpu="0.1")), {"resources.cpus": 1}),
    ("cpu-milli", job("cpu-milli", container=limits(cpu="2500m")), {"resources.cpus": 3}),
    ("cpu-whole", job("cpu-whole", container=limits(cpu="4")), {"resources.cpus": 4}),
    ("request-only", job("request-only", container="        resources:\n          requests: "
                         "{cpu: \"2\", memory: 1Gi}\n"),
     {"resources.cpus": 2, "resources.memory": 1 << 30}),
    ("limit-over-request", job("limit-over-request", container="        resources:\n"
                               "          requests: {cpu: \"1\", memory: 1Gi}\n"
                               "          limits: {cpu: \"2\", memory: 2Gi}\n"),
     {"resources.cpus": 2, "resources.memory": 2 << 30}),
    ("gpus", job("gpus", container=limits(nvidia_com_gpu="2", cpu="8", memory="32Gi")),
     {"resources.gpus": 2, "resources.cpus": 8, "resources.memory": 32 << 30}),
    ("deadline", job("deadline", spec_extra="  activeDeadlineSeconds: 100\n"),
     # no backoffLimit: no retries stored, so no "not acted on" warning (issue 31)
     {"time_limit": 100, "options.retries": None}),
    ("backoff", job("backoff", spec_extra="  backoffLimit: 4\n"), {"options.retries": 4}),
    ("indexed", job("indexed", spec_extra="  completions: 5\n  parallelism: 2\n"
                    "  completionMode: Indexed\n"), {"options.array": "0-4%2"}),
    ("all-at-once", job("all-at-once", spec_extra="  completions: 3\n  parallelism: 3\n"),
     {"options.array": "0-2"}),
    ("workdir-env", job("workdir-env", container="        workingDir: /tmp\n"
                        "        env:\n        - {name: EPOCHS, value: \"3\"}\n"),
     {"options.workdir": "/tmp", "options.env": ["EPOCHS=3"]}),
]


def get(obj, path):
    """The member at path; None if it is absent."""
    for k in path.split("."):
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


class K8sJobFiles(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = Loomd().start()
        cls.tmp = tempfile.mkdtemp(prefix="loom-k8s-")

    @classmethod
    def tearDownClass(cls):
        cls.d.cleanup()
        subprocess.run(["rm", "-rf", cls.tmp])

    def loom(self, *args):
        e = {k: v for k, v in os.environ.items() if not k.startswith("LOOM_")}
        e["LOOM_STATE_DIR"] = self.d.state_dir
        p = subprocess.run([LOOM] + list(args), capture_output=True, text=True, env=e,
                           cwd=self.tmp, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def submit(self, name, text):
        path = os.path.join(self.tmp, name + ".yaml")
        with open(path, "w") as f:
            f.write(text)
        return self.loom("submit", "--json", path)

    def test_documented_meanings(self):
        for name, manifest, want in CASES:
            with self.subTest(manifest=name):
                rc, out, err = self.submit(name, manifest)
                self.assertEqual(rc, 0, err)
                self.assertIn("containers[0].image python:3.11", err)  # named, not honoured
                rc, out, err = self.loom("show", "--json", str(json.loads(out)["id"]))
                j = json.loads(out)
                self.assertEqual(j["name"], name)
                for path, value in want.items():
                    self.assertEqual(get(j, path), value, path)

    def test_generate_name_and_restart_policy(self):
        text = job("x").replace("  name: x\n", "  generateName: train-\n")
        rc, out, err = self.submit("gen", text)
        self.assertEqual(rc, 0, err)
        rc, out, _ = self.loom("show", "--json", str(json.loads(out)["id"]))
        self.assertEqual(json.loads(out)["name"], "train-")
        rc, _, err = self.submit("always", job("always").replace("Never", "Always"))
        self.assertEqual(rc, 5)
        self.assertIn("always.yaml:8: spec.template.spec.restartPolicy: expected Never or "
                      "OnFailure", err)
        rc, _, err = self.submit("badmem", job("badmem", container=limits(memory="1GB")))
        self.assertEqual(rc, 5)
        self.assertIn("containers[0].resources.limits.memory: expected a quantity", err)


if __name__ == "__main__":
    unittest.main(verbosity=2)
