"""Client.submit's job.submit request (against fake_loomd.py, no loomd):
what each keyword becomes, and that the grouped form (loom.ResourceSpec,
FileSpec, ScheduleSpec) sends byte for byte the request of today's flat
keywords; format= and time= still work, deprecated, as job_format= and
time_limit=. Also what loom.Executor submits."""

import dataclasses
import datetime
import os
import re
import sys
import tempfile
import unittest
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "python"))

import loom  # noqa: E402
from fake_loomd import FakeLoomd  # noqa: E402

SCRIPT = "#!/bin/sh\ntrue\n"


class Submit(unittest.TestCase):
    def setUp(self):
        self.d = FakeLoomd()
        self.addCleanup(self.d.close)
        self.n = 0

        def submit(p):
            self.n += 1
            r = {"id": self.n, "created": True, "state": "PENDING"}
            if "array" in p.get("options", {}):
                r["array"] = {"job_id": self.n, "tasks": 4}
            return r
        self.d.methods["job.submit"] = submit
        self.c = loom.Client(self.d.url)
        self.addCleanup(self.c.close)

    def sent(self, *args, **kw):
        """The params of the job.submit request submit(*args, **kw) sends."""
        self.c.submit(*args, **kw)
        return self.d.params("job.submit")[-1]

    def body(self, *args, **kw):
        """The raw HTTP body of that request, its JSON-RPC id set to 0."""
        self.c.submit(*args, **kw)
        body = self.d.requests[-1].body
        self.assertEqual(len(re.findall(rb'"id": \d+', body)), 1)
        return re.sub(rb'"id": \d+', b'"id": 0', body)

    # ---------------------------------------------------------- the request
    def test_minimal(self):
        p = self.sent(SCRIPT)
        self.assertEqual(set(p), {"name", "script", "submit_id", "options"})
        self.assertEqual((p["name"], p["script"]), ("job", SCRIPT))
        self.assertRegex(p["submit_id"], r"^py-[0-9a-f]{32}$")
        self.assertEqual(p["options"], {"workdir": os.getcwd()})
        self.assertNotEqual(self.sent(SCRIPT)["submit_id"], p["submit_id"])

    def test_flat_keywords(self):
        prev = self.c.submit(SCRIPT, submit_id="first", workdir=False)
        p = self.sent(SCRIPT.encode(), name="train", cpus=2, memory="16GiB", gpus=1,
                      gpu_share=0.25, gpu_memory=1 << 30, gpu_type="A100",
                      time_limit=datetime.timedelta(seconds=90.5), priority=5,
                      labels={"team": "nlp"}, submit_id="s-1", model="/m.onnx", array="0-3%2",
                      dependency=[prev, 3], hold=True, begin="now+1hours", workdir="/w",
                      output="o-%j", error="e-%j", env={"LR": "0.1"}, account="nlp",
                      comment="c", options={"x": 1}, extra_param=True)
        self.assertEqual(p, {
            "name": "train", "script": SCRIPT, "submit_id": "s-1",
            "resources": {"cpus": 2, "memory": "16GiB", "gpus": 1, "gpu_share": 250,
                          "gpu_memory": 1 << 30, "gpu_type": "A100"},
            "time_limit": 91, "priority": 5, "labels": {"team": "nlp"}, "model": "/m.onnx",
            "options": {"x": 1, "array": "0-3%2", "dependency": "afterok:1:3", "hold": True,
                        "begin": "now+1hours", "workdir": "/w", "output": "o-%j",
                        "error": "e-%j", "env": ["LR=0.1"], "account": "nlp", "comment": "c"},
            "extra_param": True})

    def test_values(self):
        self.assertEqual(self.sent(SCRIPT, gpu_share="250m")["resources"], {"gpu_share": 250})
        self.assertEqual(self.sent(SCRIPT, gpu_share=300)["resources"], {"gpu_share": 300})
        self.assertEqual(self.sent(SCRIPT, time_limit="1h30m")["time_limit"], "1h30m")
        self.assertEqual(self.sent(SCRIPT, dependency="afterany:4")["options"]["dependency"],
                         "afterany:4")
        self.assertEqual(self.sent(SCRIPT, env=["A=1"])["options"]["env"], ["A=1"])
        self.assertNotIn("options", self.sent(SCRIPT, workdir=False))
        self.assertEqual(self.sent(SCRIPT, options={"workdir": "/o"})["options"],
                         {"workdir": "/o"})
        self.assertEqual(self.sent(SCRIPT, hold=False)["options"]["hold"], False)

    def test_bad_values(self):
        with self.assertRaisesRegex(TypeError, "'30' is ambiguous"):
            self.c.submit(SCRIPT, time_limit="30")
        with self.assertRaisesRegex(TypeError, "expected seconds"):
            self.c.submit(SCRIPT, time_limit=-1)
        with self.assertRaisesRegex(ValueError, "gpu_share: expected a fraction"):
            self.c.submit(SCRIPT, gpu_share=1.5)
        with self.assertRaisesRegex(ValueError, "dependency: an empty list"):
            self.c.submit(SCRIPT, dependency=[])
        with self.assertRaisesRegex(TypeError, "either script .* or file"):
            self.c.submit()
        with self.assertRaisesRegex(TypeError, "env: expected a dict"):
            self.c.submit(SCRIPT, env=5)
        self.assertEqual(self.d.requests, [], "nothing sent for a bad call")

    def test_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "job.yaml")
            with open(path, "w") as f:
                f.write("kind: Job\n")
            p = self.sent(file=path, workdir=False)
        self.assertEqual((p["name"], p["format"], p["script"]), ("job.yaml", "yaml", "kind: Job\n"))

    def test_array_result(self):
        r = self.c.submit(SCRIPT, array="0-3")
        self.assertEqual(r.array, {"job_id": r.id, "tasks": 4})
        self.assertEqual(r.raw["state"], "PENDING")

    # ------------------------------------------------- grouped == flat, bytes
    FLAT = dict(name="n", cpus=2, memory="1GiB", gpus=1, gpu_share="500m", gpu_memory="2GiB",
                gpu_type="A100", time_limit=3600, priority=4, array="0-9", dependency=[1, 2],
                hold=True, begin="now", workdir="/w", output="o", error="e", env={"A": "1"},
                account="acct", comment="c", labels={"k": "v"}, submit_id="fixed",
                model="/m.onnx", options={"x": 1})
    GROUPED = dict(name="n", resources=loom.ResourceSpec(cpus=2, memory="1GiB", gpus=1,
                                                         gpu_share="500m", gpu_memory="2GiB",
                                                         gpu_type="A100", time_limit=3600),
                   files=loom.FileSpec(workdir="/w", output="o", error="e", env={"A": "1"}),
                   scheduling=loom.ScheduleSpec(priority=4, array="0-9", dependency=[1, 2],
                                                hold=True, begin="now", account="acct"),
                   comment="c", labels={"k": "v"}, submit_id="fixed", model="/m.onnx",
                   options={"x": 1})

    def test_grouped_sends_the_flat_request(self):
        flat = self.body(SCRIPT, **self.FLAT)
        self.assertEqual(self.body(SCRIPT, **self.GROUPED), flat)
        # each group on its own, the rest flat
        for group, names in (("resources", loom.spec.RESOURCE_KEYWORDS),
                             ("files", loom.spec.FILE_KEYWORDS),
                             ("scheduling", loom.spec.SCHEDULE_KEYWORDS)):
            kw = {k: v for k, v in self.FLAT.items() if k not in names}
            kw[group] = self.GROUPED[group]
            self.assertEqual(self.body(SCRIPT, **kw), flat, group)

    # What the SDK before the groups (main at e8b00c6) sent for this call, byte for byte (its
    # JSON-RPC id set to 0): the old keywords, and the groups, still send exactly this.
    BEFORE = (b'{"jsonrpc": "2.0", "method": "job.submit", "id": 0, "params": {"name": "n", '
              b'"script": "s", "submit_id": "fixed", "resources": {"cpus": 2, "memory": "1GiB", '
              b'"gpus": 1, "gpu_share": 500, "gpu_memory": "2GiB", "gpu_type": "A100"}, '
              b'"format": "yaml", "time_limit": "1h", "priority": 4, "labels": {"k": "v"}, '
              b'"model": "/m.onnx", "options": {"x": 1, "array": "0-9", "dependency": '
              b'"afterok:1:2", "hold": true, "begin": "now", "workdir": "/w", "output": "o", '
              b'"error": "e", "env": ["A=1"], "account": "acct", "comment": "c"}, "extra": 5}}')

    def test_request_as_before(self):
        common = dict(name="n", labels={"k": "v"}, submit_id="fixed", model="/m.onnx",
                      comment="c", options={"x": 1}, extra=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            old = self.body("s", format="yaml", cpus=2, memory="1GiB", gpus=1, gpu_share=0.5,
                            gpu_memory="2GiB", gpu_type="A100", time="1h", priority=4,
                            array="0-9", dependency=[1, 2], hold=True, begin="now",
                            workdir="/w", output="o", error="e", env={"A": "1"},
                            account="acct", **common)
        self.assertEqual(old, self.BEFORE)
        new = self.body("s", job_format="yaml", resources=loom.ResourceSpec(
            cpus=2, memory="1GiB", gpus=1, gpu_share=0.5, gpu_memory="2GiB", gpu_type="A100",
            time_limit="1h"), files=loom.FileSpec(workdir="/w", output="o", error="e",
                                                  env={"A": "1"}),
            scheduling=loom.ScheduleSpec(priority=4, array="0-9", dependency=[1, 2], hold=True,
                                         begin="now", account="acct"), **common)
        self.assertEqual(new, self.BEFORE)

    def test_grouped_defaults_send_nothing(self):
        self.assertEqual(self.body(SCRIPT, submit_id="a", resources=loom.ResourceSpec(),
                                   files=loom.FileSpec(), scheduling=loom.ScheduleSpec()),
                         self.body(SCRIPT, submit_id="a"))

    def test_deprecated_names(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "j.txt")
            with open(path, "w") as f:
                f.write(SCRIPT)
            new = self.body(file=path, submit_id="a", job_format="yaml", time_limit="1h")
            with warnings.catch_warnings(record=True) as w:
                warnings.simplefilter("always")
                old = self.body(file=path, submit_id="a", format="yaml", time="1h")
        self.assertEqual(old, new)
        self.assertIn(b'"format": "yaml"', new)
        self.assertEqual(sorted(str(x.message).split(":")[1].strip() for x in w),
                         ["format= is deprecated (it shadows Python's format)",
                          "time= is deprecated (it shadows Python's time)"])
        self.assertTrue(all(x.category is DeprecationWarning for x in w))
        self.assertTrue(all(x.filename == __file__ for x in w), "warned at the caller")
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # None is not a use of the old name
            self.c.submit(SCRIPT, format=None, time=None)

    def test_conflicts(self):
        with self.assertRaisesRegex(TypeError, "job_format= and its deprecated name format="):
            self.c.submit(SCRIPT, format="yaml", job_format="batch")
        with self.assertRaisesRegex(TypeError, "time_limit= and its deprecated name time="):
            self.c.submit(SCRIPT, time=1, time_limit=2)
        with self.assertRaisesRegex(TypeError, r"gpus=, cpus= given beside resources=|"
                                               r"cpus=, gpus= given beside resources="):
            self.c.submit(SCRIPT, resources=loom.ResourceSpec(gpus=1), gpus=2, cpus=1)
        with self.assertRaisesRegex(TypeError, "hold= given beside scheduling="):
            self.c.submit(SCRIPT, scheduling=loom.ScheduleSpec(), hold=True)
        with self.assertRaisesRegex(TypeError, "files: expected a loom.FileSpec"):
            self.c.submit(SCRIPT, files={"workdir": "/w"})
        self.assertEqual(self.d.requests, [])
        # a flat keyword left None beside its group is no conflict (forwarded defaults)
        base = loom.ResourceSpec(gpus=1)
        self.assertEqual(self.sent(SCRIPT, resources=base, gpus=None)["resources"], {"gpus": 1})
        self.assertEqual(self.sent(SCRIPT, resources=dataclasses.replace(base, gpus=2))
                         ["resources"], {"gpus": 2})

    def test_raw_resources_dict_as_before(self):
        # before the groups, resources={...} went to job.submit as given (an extra)
        p = self.sent(SCRIPT, resources={"cpus": 3, "gpus": 1}, cpus=9)
        self.assertEqual(p["resources"], {"cpus": 3, "gpus": 1})

    def test_specs_are_frozen(self):
        with self.assertRaises(dataclasses.FrozenInstanceError):
            loom.ResourceSpec().gpus = 1


class ExecutorRequest(unittest.TestCase):
    """What loom.Executor submits (its futures are watched, not resolved here)."""

    def test_request(self):
        with FakeLoomd() as d, tempfile.TemporaryDirectory() as folder:
            d.methods["job.submit"] = lambda p: {"id": 11, "created": True, "state": "PENDING"}
            d.methods["job.cancel"] = lambda p: {"job": {"id": 11, "name": "f",
                                                         "state": "CANCELLED"}}
            d.methods["job.wait"] = lambda p: {"ended": False, "jobs": [
                {"id": i, "state": "PENDING", "reason": None, "exit_code": None}
                for i in p["ids"]]}
            c = loom.Client(d.url)
            ex = loom.Executor(gpus=1, time_limit=60, memory="1GiB", priority=2,
                               labels={"a": "b"}, client=c, folder=folder, workdir="/w", hold=1)
            fut = ex.submit(len, "abc")
            self.assertEqual(fut.job_id, 11)
            p = d.params("job.submit")[0]
            self.assertEqual(p["name"], "len")
            self.assertEqual(p["resources"], {"memory": "1GiB", "gpus": 1})
            self.assertEqual((p["time_limit"], p["priority"]), (60, 2))
            self.assertEqual(p["labels"], {"a": "b", "loom.executor": "python"})
            self.assertEqual(p["options"]["workdir"], "/w")
            self.assertTrue(p["options"]["output"].endswith("/job-%j.out"))
            self.assertIn("-m loom._run", p["script"])
            self.assertTrue(fut.cancel())
            ex.shutdown(wait=True)
            with self.assertWarns(DeprecationWarning):
                old = loom.Executor(gpus=1, time=60, client=c, folder=folder)
            self.assertEqual(old._resources, loom.ResourceSpec(gpus=1, time_limit=60))
            old.shutdown()
            c.close()


if __name__ == "__main__":
    unittest.main()
