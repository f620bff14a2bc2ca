"""Crash test: several clients submit continuously (each submission with a
submit_id, some in batches) while loomd is killed with SIGKILL at random
moments, at least 20 times, and restarted. Clients resend a submission whose
answer they did not get (same submit_id) until it is acknowledged. At the end
every acknowledged job must be in the store exactly once, with the id it was
acknowledged with, and nothing may exist that no client submitted."""

import os
import random
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, Client  # noqa: E402

KILLS = int(os.environ.get("LOOM_CRASH_KILLS", "20"))
CLIENTS = 4
BATCH_CLIENTS = 1  # of CLIENTS, this many submit in batches of 10


class Submitter(threading.Thread):
    def __init__(self, tid, target, batch):
        super().__init__(daemon=True)
        self.tid = tid
        self.target = target  # dict with the current "url" and "token"
        self.batch = batch
        self.stop = threading.Event()
        self.acked = {}       # submit_id -> job id
        self.attempted = set()
        self.errors = []
        self.retries = 0

    def client(self):
        return Client(self.target["url"], self.target["token"], timeout=10)

    def run(self):
        seq = 0
        c = self.client()
        while not self.stop.is_set():
            n = 10 if self.batch else 1
            keys = [f"c{self.tid}-{seq + i}" for i in range(n)]
            seq += n
            self.attempted.update(keys)
            # Until acknowledged: the same submit_ids again after a failure.
            while True:
                try:
                    if self.batch:
                        out = c.batch([("job.submit", {"name": k, "script": "x", "submit_id": k})
                                       for k in keys])
                        for k, (kind, r) in zip(keys, out):
                            if kind != "ok":
                                raise AssertionError(f"{k}: {r}")
                            self.acked[k] = r["id"]
                    else:
                        r = c.submit(keys[0], "x", submit_id=keys[0])
                        self.acked[keys[0]] = r["id"]
                    break
                except AssertionError as e:
                    self.errors.append(str(e))
                    return
                except Exception:
                    # loomd is down (killed) or restarting: retry.
                    self.retries += 1
                    c.close()
                    if self.stop.is_set() and self.target.get("final"):
                        return
                    time.sleep(0.02)
                    c = self.client()
        c.close()


class Crash(unittest.TestCase):
    def test_kill9_loses_no_acknowledged_job(self):
        rng = random.Random(int(os.environ.get("LOOM_CRASH_SEED", str(int(time.time())))))
        d = Loomd().start()
        target = {"url": d.url, "token": d.token}
        threads = [Submitter(i, target, i < BATCH_CLIENTS) for i in range(CLIENTS)]
        for t in threads:
            t.start()
        try:
            t0 = time.monotonic()
            for k in range(KILLS):
                time.sleep(rng.uniform(0.05, 0.4))
                d.kill9()
                time.sleep(rng.uniform(0, 0.05))
                d.start()
                target["url"] = d.url
            # Let every client get its last submission acknowledged.
            time.sleep(0.5)
            for t in threads:
                t.stop.set()
            for t in threads:
                t.join(60)
                self.assertFalse(t.is_alive(), "a client hung")
            elapsed = time.monotonic() - t0
            for t in threads:
                self.assertEqual(t.errors, [])
            acked = {}
            for t in threads:
                acked.update(t.acked)
            attempted = set().union(*(t.attempted for t in threads))
            # A clean restart, then compare.
            self.assertEqual(d.stop(), 0)
            d.start()
            c = d.client()
            jobs = c.list_all()
            c.close()
            by_key = {}
            for j in jobs:
                self.assertNotIn(j["submit_id"], by_key, "duplicate job for a submit_id")
                by_key[j["submit_id"]] = j["id"]
            self.assertEqual(len({j["id"] for j in jobs}), len(jobs))
            missing = [k for k in acked if k not in by_key]
            self.assertEqual(missing, [], "acknowledged jobs lost")
            wrong = [k for k in acked if by_key[k] != acked[k]]
            self.assertEqual(wrong, [], "acknowledged with one id, stored with another")
            self.assertTrue(set(by_key) <= attempted, "jobs nobody submitted")
            self.assertGreater(len(acked), 100)
            print(f"crash test: {KILLS} kills in {elapsed:.1f}s, {len(acked)} acknowledged, "
                  f"{len(jobs)} stored, {sum(t.retries for t in threads)} retries",
                  file=sys.stderr)
        finally:
            for t in threads:
                t.stop.set()
            d.cleanup()


if __name__ == "__main__":
    unittest.main(verbosity=2)
