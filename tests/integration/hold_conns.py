#!/usr/bin/env python3
"""A hostile client for the fair-share tests and the multi-user soak (run as
the attacking user): N connections, each holding a long-poll (`job.wait` on
JOB with a 30 s timeout) for as long as it can, for SECONDS. Over TCP with
--munge each connection shows its own MUNGE credential (made with `munge
-s loomd`; --munge-payload puts another payload into it). Every answer that is not a
wait is counted by kind; a refused call is retried on the same connection
after 0.2 s (so the connection stays held), a closed one is reopened.

Prints one JSON line: {"outcome": count, ...} where outcome is "waited",
"rpc <code>", "http <status>", or "conn <exception>"."""

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loomd_client import Client, HttpError, RpcError  # noqa: E402


def credential(payload):
    args = ["munge", "-s", "loomd" if payload is None else payload]
    return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()


def hold(args, counts, lock, end):
    headers = None
    c = Client(args.url, timeout=40)
    while time.monotonic() < end:
        if args.munge and headers is None:
            headers = {"Authorization": "Munge " + credential(args.munge_payload)}
        req = {"jsonrpc": "2.0", "id": 1, "method": "job.wait",
               "params": {"ids": [args.job], "timeout": 30}}
        try:
            resp = c.post(req, headers=headers)
            err = resp.get("error")
            kind = "waited" if not err else "rpc %d" % err["code"]
        except HttpError as e:
            kind = "http %d" % e.status
            with lock:  # the first body of each refusal, for the tests to read
                counts.setdefault("body " + kind, e.body.decode(errors="replace")[:400])
            c.close()
            headers = None
        except (OSError, ValueError) as e:
            kind = "conn " + type(e).__name__
            c.close()
            headers = None
        with lock:
            counts[kind] += 1
        if kind != "waited":
            time.sleep(0.2)
    c.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--url", required=True)
    p.add_argument("--conns", type=int, default=140)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--job", type=int, required=True)
    p.add_argument("--munge", action="store_true")
    p.add_argument("--munge-payload")
    args = p.parse_args()
    counts, lock = collections.Counter(), threading.Lock()  # kinds -> n; "body KIND" -> text
    end = time.monotonic() + args.seconds
    # SIGTERM ends the attack early, still printing what it saw (the tests
    # stop it once their checks are done).
    def stop(signum, frame):
        with lock:
            print(json.dumps(dict(counts)), flush=True)
        os._exit(0)
    signal.signal(signal.SIGTERM, stop)
    threads = [threading.Thread(target=hold, args=(args, counts, lock, end), daemon=True)
               for _ in range(args.conns)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(args.seconds + 45)
    print(json.dumps(dict(counts)), flush=True)


if __name__ == "__main__":
    main()
