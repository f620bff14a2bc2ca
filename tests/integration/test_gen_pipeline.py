"""loom gen -> loomd with a catalog's pipelines and arrays (docs/generator.md#pipelines):
an entry with "then" becomes one submission per stage, each later stage afterok the id
loomd gave the one before, and the stages run in that order; an entry with "array"
becomes a job array. Checked in job.get against a real loomd with the local executor."""

import datetime
import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

N = 4  # generated jobs: each is a pipeline or an array


def stamp(text):
    """An RFC 3339 time from loomd as seconds since the epoch."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def stage(name):
    # Appends its name to order.txt, after a short sleep so that
    # a stage started early would be seen out of order.
    return {"name": name, "executable": "/bin/sh",
            "arguments": ["-c", "sleep 0.2; echo " + name + " >> ${catalog_dir}/order.txt"]}


class GenPipeline(unittest.TestCase):
    def test_pipeline_and_array(self):
        d = Loomd(extra_args=["--executor", "local", "--node",
                              "name=n1,cpus=4,memory=4GiB", "--grace", "500ms"]).start()
        try:
            catalog = os.path.join(d.state_dir, "catalog.json")
            pre, train, ev = stage("preprocess"), stage("train"), stage("evaluate")
            pre["then"] = ["train", "evaluate"]
            sweep = {"name": "sweep", "executable": "/bin/true", "array": "0-3%2"}
            with open(catalog, "w") as f:
                json.dump({"version": 1,
                           "defaults": {"resources": {"cpus": 1, "memory": "64MiB"},
                                        "time_limit": "1m"},
                           "jobs": [pre, train, ev, sweep]}, f)
            url = "unix:" + d.socket_path
            r = subprocess.run(
                [os.path.join(build_dir(), "loom"), "gen", "--catalog", catalog, "--rate",
                 "20/s", "--count", str(N), "--seed", "2", "--submit", url, "--json"],
                capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            s = json.loads(r.stdout)
            self.assertEqual(s["count"], N)
            self.assertEqual(s["ok"], N, s.get("first_error"))
            # Stage jobs are never drawn alone: a pipeline is one arrival.
            chosen = {k: v["chosen"] for k, v in s["jobs"].items()} \
                if isinstance(s["jobs"], dict) else {j["name"]: j["chosen"] for j in s["jobs"]}
            self.assertEqual(chosen.get("train", 0), 0)
            self.assertEqual(chosen.get("evaluate", 0), 0)
            self.assertEqual(chosen["preprocess"] + chosen["sweep"], N)
            c = d.client(unix=True)
            jobs = c.list_all()
            by_sid = {j["submit_id"]: j for j in jobs if j.get("submit_id")}
            pipes = [sid for sid, j in by_sid.items() if j["name"] == "preprocess"]
            arrays = [sid for sid, j in by_sid.items() if j["name"] == "sweep"]
            self.assertEqual(len(pipes), chosen["preprocess"])
            self.assertEqual(len(arrays), chosen["sweep"])
            self.assertGreater(len(pipes), 0, "seed 2 draws no pipeline: pick another seed")
            self.assertGreater(len(arrays), 0, "seed 2 draws no array: pick another seed")
            self.assertEqual(len(jobs), 3 * len(pipes) + 4 * len(arrays), [
                (j["id"], j["name"], j.get("submit_id")) for j in jobs])
            for sid in pipes:
                first = by_sid[sid]
                second, third = by_sid[sid + ".1"], by_sid[sid + ".2"]
                self.assertEqual((second["name"], third["name"]), ("train", "evaluate"))
                g2 = c.call("job.get", {"id": second["id"]})["job"]
                g3 = c.call("job.get", {"id": third["id"]})["job"]
                self.assertEqual(g2["options"]["dependency"], f"afterok:{first['id']}")
                self.assertEqual(g3["options"]["dependency"], f"afterok:{second['id']}")
            for sid in arrays:
                head = c.call("job.get", {"id": by_sid[sid]["id"]})["job"]
                tasks = [j for j in jobs
                         if j.get("options", {}).get("array_job_id") == head["id"]]
                self.assertEqual(sorted(j["options"]["array_task_id"] for j in tasks),
                                 [0, 1, 2, 3])
            # Every job ends COMPLETED; the stages ran in order.
            end = time.monotonic() + 60
            while time.monotonic() < end:
                states = [c.call("job.get", {"id": j["id"]})["job"]["state"] for j in jobs]
                if all(st not in ("PENDING", "RUNNING") for st in states):
                    break
                time.sleep(0.1)
            self.assertEqual(set(states), {"COMPLETED"}, states)
            for sid in pipes:
                ids = [by_sid[x]["id"] for x in (sid, sid + ".1", sid + ".2")]
                got = [c.call("job.get", {"id": i})["job"] for i in ids]
                for a, b in zip(got, got[1:]):
                    self.assertLessEqual(stamp(a["end_time"]), stamp(b["start_time"]), (a, b))
            with open(os.path.join(d.state_dir, "order.txt")) as f:
                names = [line.split()[0] for line in f]
            # Pipelines interleave, but no train before its preprocess, no evaluate
            # before its train: every prefix holds at least as many of the stage before.
            self.assertEqual(sorted(names), sorted(["preprocess", "train", "evaluate"] * len(pipes)))
            for k in range(len(names) + 1):
                seen = names[:k]
                self.assertGreaterEqual(seen.count("preprocess"), seen.count("train"), names)
                self.assertGreaterEqual(seen.count("train"), seen.count("evaluate"), names)
            c.close()
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
