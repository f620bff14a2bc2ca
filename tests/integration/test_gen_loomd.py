"""loom gen -> loomd: every generated job is in `loom jobs` exactly once,
also when loomd is killed (SIGKILL) and restarted twice during the run.

The generator submits over loomd's Unix socket (a path that survives the
restarts); its sink resends a batch whose answer it did not get with the
same submit_ids, and loomd keeps the first job per submit_id. At the end
`loom jobs --json --limit 0` must list N jobs whose submit_ids are exactly
PREFIX-0 .. PREFIX-(N-1), each once. Nothing here asserts speed."""

import json
import os
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, build_dir  # noqa: E402

N = 1200


def loom(*args, **kw):
    return subprocess.run([os.path.join(build_dir(), "loom")] + list(args),
                          capture_output=True, text=True, **kw)


class GenToLoomd(unittest.TestCase):
    def test_exactly_once_across_kill9(self):
        d = Loomd().start()
        # Cheap jobs (should loomd run them), three kinds with weights.
        catalog = os.path.join(d.state_dir, "catalog.json")
        with open(catalog, "w") as f:
            json.dump({"version": 1,
                       "defaults": {"executable": "/bin/true", "arguments": ["${n}"],
                                    "resources": {"cpus": 1, "memory": "64MiB"},
                                    "time_limit": "1m",
                                    "parameters": {"n": {"type": "int", "min": 1, "max": 9}}},
                       "jobs": [{"name": "a", "weight": 3}, {"name": "b", "weight": 2},
                                {"name": "c", "weight": 1}]}, f)
        try:
            url = "unix:" + d.socket_path
            gen = subprocess.Popen(
                [os.path.join(build_dir(), "loom"), "gen", "--catalog", catalog,
                 "--rate", "400/s", "--count", str(N), "--seed", "11", "--submit", url,
                 "--window", "128", "--batch", "16", "--retry-for", "60s", "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            client = d.client(unix=True)
            kills = 0
            for target in (N // 4, N // 2):
                # Wait until loomd holds `target` jobs, then kill -9 and restart.
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        have = len(client.list_all())
                    except Exception:
                        have = 0
                        client.close()
                    if have >= target or gen.poll() is not None:
                        break
                    time.sleep(0.05)
                if gen.poll() is not None:
                    break
                client.close()
                d.kill9()
                kills += 1
                # Down longer than the rpc client's own retries (0.7 s), so
                # the sink's retry loop carries batches over the outage.
                time.sleep(1.5)
                d.start()
                client = d.client(unix=True)
            out, err = gen.communicate(timeout=300)
            retries = err.count("gen submit retry")
            print(f"loomd killed {kills} times; the sink resent {retries} batches", file=sys.stderr)
            self.assertEqual(gen.returncode, 0, err)
            self.assertGreaterEqual(kills, 1, "the run ended before loomd could be killed")
            s = json.loads(out)
            self.assertEqual(s["count"], N)
            self.assertEqual(s["ok"], N, s.get("first_error"))
            r = loom("--url", url, "jobs", "--json", "--limit", "0")
            self.assertEqual(r.returncode, 0, r.stderr)
            jobs = json.loads(r.stdout)["jobs"]
            ids = [j["submit_id"] for j in jobs]
            self.assertEqual(len(ids), N, "one job per generated job")
            self.assertEqual(len(set(ids)), N, "no submit_id twice")
            prefixes = {i.rsplit("-", 1)[0] for i in ids}
            self.assertEqual(len(prefixes), 1, prefixes)
            self.assertEqual(sorted(int(i.rsplit("-", 1)[1]) for i in ids), list(range(N)))
            self.assertEqual(len({j["id"] for j in jobs}), N)
            client.close()
        finally:
            d.cleanup()


if __name__ == "__main__":
    unittest.main()
