"""Lock-out attempt against loomd (issue 18, finding 4) and the cost of the
store's start-up check (finding 7). Writes docs/bench/hostile.md.

1. loomd (release build, --executor none) on 127.0.0.1:0. An attacker on
   127.0.0.1 keeps 1,000 connection attempts going: each connection sends
   nothing (or a request line without CRLF) and is reopened as soon as the
   server closes it. Meanwhile legitimate clients make requests, each on a
   fresh connection (the worst case: every request must get past accept):
   authenticated from the attacker's own address, authenticated from
   another address (127.0.0.2), and over the Unix socket. Latency per
   request (connect to full response), p50, p99 and max; loomd's peak RSS.
2. PRAGMA quick_check on a database of N jobs (made with loomd's schema,
   rows inserted directly), and loomd's time from exec to listening.

usage: python3 bench/hostile.py BUILD_DIR [--out DIR] [--seconds S] [--jobs N]
"""

import argparse
import os
import platform
import selectors
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def start_loomd(build, state, *extra):
    exe = os.path.join(build, "loomd")
    url_file = os.path.join(state, "loomd.url")
    log = open(os.path.join(os.path.dirname(state), "loomd.log"), "ab")
    t0 = time.monotonic()
    p = subprocess.Popen([exe, "--listen", "127.0.0.1:0", "--state-dir", state, "--executor",
                          "none", "--log-level", "error"] + list(extra), stdout=log, stderr=log)
    while not os.path.exists(url_file):
        if p.poll() is not None:
            raise RuntimeError("loomd exited")
        time.sleep(0.002)
    started = time.monotonic() - t0
    with open(url_file) as f:
        url = f.read().strip()
    with open(os.path.join(state, "token")) as f:
        token = f.read().strip()
    return p, url, token, started


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


class Attacker(threading.Thread):
    """Keeps n silent connections open from `source`, reopening closed ones."""

    def __init__(self, port, n, source="127.0.0.1"):
        super().__init__(daemon=True)
        self.port, self.n, self.source = port, n, source
        self.stop = False
        self.opened = 0

    def open_one(self, sel):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        s.bind((self.source, 0))
        try:
            s.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            return
        if self.opened % 2:
            try:
                s.send(b"GET /healthz HTTP/1.1")  # a request line without CRLF
            except OSError:
                pass
        sel.register(s, selectors.EVENT_READ)
        self.opened += 1

    def run(self):
        sel = selectors.DefaultSelector()
        while not self.stop:
            while len(sel.get_map()) < self.n and not self.stop:
                self.open_one(sel)
            for key, _ in sel.select(timeout=0.05):
                s = key.fileobj
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(s)
                    s.close()
        for key in list(sel.get_map().values()):
            key.fileobj.close()


def one_request(kind, port, token, sock_path):
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sock_path)
        auth = ""
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(10)
        s.bind(("127.0.0.1" if kind == "same address" else "127.0.0.2", 0))
        s.connect(("127.0.0.1", port))
        auth = f"Authorization: Bearer {token}\r\n"
    body = b'{"jsonrpc":"2.0","method":"server.info","id":1}'
    s.sendall(f"POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{auth}"
              f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode() + body)
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    if not data.startswith(b"HTTP/1.1 200"):
        raise RuntimeError(data[:100])


def quantile(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def lockout(build, seconds, hostile):
    tmp = tempfile.mkdtemp(prefix="loom-bench-hostile-")
    state = os.path.join(tmp, "state")
    p, url, token, _ = start_loomd(build, state)
    port = int(url.rsplit(":", 1)[1])
    att = Attacker(port, hostile)
    att.start()
    time.sleep(2)  # let the attacker fill what it can
    rows = []
    try:
        for kind in ("same address", "other address", "unix"):
            lat, fails = [], 0
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                t0 = time.monotonic()
                try:
                    one_request(kind, port, token, os.path.join(state, "loomd.sock"))
                    lat.append(time.monotonic() - t0)
                except Exception:  # noqa: BLE001 -- a failed request is the figure
                    fails += 1
                time.sleep(0.01)
            rows.append((kind, len(lat), fails, quantile(lat, 0.5) if lat else None,
                         quantile(lat, 0.99) if lat else None, max(lat) if lat else None))
    finally:
        att.stop = True
        att.join()
        rss = peak_rss_kib(p.pid)
        p.terminate()
        p.wait(30)
        shutil.rmtree(tmp, ignore_errors=True)
    return rows, att.opened, rss


def make_db(build, n):
    tmp = tempfile.mkdtemp(prefix="loom-bench-qc-")
    state = os.path.join(tmp, "state")
    p, _, _, _ = start_loomd(build, state)
    p.terminate()
    p.wait(30)
    db = os.path.join(state, "loom.db")
    con = sqlite3.connect(db)
    con.execute("PRAGMA journal_mode=WAL")
    now = time.time_ns()
    script = "#!/bin/bash\npython3 train.py --epochs 10 --lr 0.001 --batch 64\n"
    rows = ((f"job-{i}", script, "batch", 1, now, now, "COMPLETED") for i in range(n))
    con.executemany("INSERT INTO jobs (name, script, format, cpus, submit_time_ns, update_time_ns,"
                    " state) VALUES (?,?,?,?,?,?,?)", rows)
    con.commit()
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    return tmp, state, db


def quick_check(build, n):
    tmp, state, db = make_db(build, n)
    try:
        size = os.path.getsize(db)
        con = sqlite3.connect(db)
        t0 = time.monotonic()
        r = con.execute("PRAGMA quick_check(1)").fetchone()[0]
        qc = time.monotonic() - t0
        con.close()
        starts = []
        for _ in range(3):
            p, _, _, started = start_loomd(build, state)
            starts.append(started)
            p.terminate()
            p.wait(30)
        return size, r, qc, min(starts)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--out", default="/tmp/loom-bench")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--hostile", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1000000)
    a = ap.parse_args()
    rows, opened, rss = lockout(a.build, a.seconds, a.hostile)
    size, qc_result, qc_s, start_s = quick_check(a.build, a.jobs)
    os.makedirs(a.out, exist_ok=True)
    # The multi-user tables (issue 30) are kept by hand, from the tests that
    # cover each finding: a new run keeps them, from "## Multi-user" on.
    kept = ""
    path = os.path.join(a.out, "hostile.md")
    if os.path.exists(path):
        old = open(path).read()
        at = old.find("\n## Multi-user")
        kept = old[at:] if at >= 0 else ""
    with open(path, "w") as f:
        f.write(f"""# Hostile clients (issue 18)

Measured by `python3 bench/hostile.py {a.build} --out {a.out} --seconds {a.seconds:g} \\
--hostile {a.hostile} --jobs {a.jobs}` on {platform.node()} ({os.cpu_count()} CPUs), \\
{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}. The machine was shared with other
developers' builds and tests while this ran: absolute times are noisy; compare rows of one run.

## Lock-out (finding 4)

An attacker on 127.0.0.1 keeps {a.hostile} silent connections (half of them with a request line
and no CRLF) going, reopening each as loomd closes it: {opened} connections opened in all. Each
legitimate request below uses a fresh connection (connect, one `server.info`, close), one every
10 ms, for {a.seconds:g} s per row. Before the fix, 140 such connections held all 128 slots and
`/healthz` succeeded 0 of 25 times.

| legitimate client | requests | failed | p50 | p99 | max |
|---|---|---|---|---|---|
""")
        for kind, n, fails, p50, p99, mx in rows:
            fmt = (lambda x: f"{x * 1000:.1f} ms" if x is not None else "-")
            who = {"same address": "token, from the attacker's address",
                   "other address": "token, from 127.0.0.2",
                   "unix": "Unix socket"}[kind]
            f.write(f"| {who} | {n} | {fails} | {fmt(p50)} | {fmt(p99)} | {fmt(mx)} |\n")
        f.write(f"""
Target: p99 under 1 s. loomd's peak RSS over the run: {rss / 1024:.1f} MiB.

Failed requests from the attacker's own address are connections evicted before their request
arrived: at the attacker's rate (thousands of connections a second) its newer connections push out
even a fresh one within milliseconds; a client that retries gets through, and a client from any
other address or on the Unix socket is not affected. In a run before the listen backlog was raised
from 128 to SOMAXCONN, SYNs dropped under the flood cost 1 s retransmissions (p99 1035 ms from
127.0.0.2); with it, none.

## Start-up check (finding 7)

A database of {a.jobs} jobs ({size / 2**20:.0f} MiB, rows inserted with loomd's schema):
`PRAGMA quick_check(1)` took {qc_s:.2f} s (result `{qc_result}`, the first read of the file: a
cold page cache); loomd's time from exec to listening, which includes it, {start_s:.2f} s (best
of 3, warm cache).

## Inputs by class

The hostile suite (`make test` runs it: tests/unit/test_rpc_hostile.c, test_methods.c's
`response_budget`, test_yaml_job.c's `deep_nesting` and rejected cases, test_exec_local.c's
`inheritance_and_exec_errors` and `lost_job_is_killed`, tests/integration/test_hostile.py) covers:
HTTP framing (two Content-Lengths, Content-Length with chunked), silent and half-sent connections
from one and several addresses, response amplification by batches of `job.list`, YAML nesting
(100k levels) and environment edges, a FIFO and `/etc/shadow` and the token file as model or
device, terminal control characters in names and reasons, a state directory with loose modes,
a foreign token, a removed lock file, job directories without their database, a damaged
database, a full disk, a job's shepherd killed with -9. No crash in any of them (all run under
ASan and UBSan in `make test`).
""")
        f.write(kept)
    print(open(path).read())


if __name__ == "__main__":
    main()
