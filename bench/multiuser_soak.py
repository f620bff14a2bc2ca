#!/usr/bin/env python3
"""Multi-user soak (issue 30): three honest users and one hostile user share
a multi-user loomd for --minutes; loomd must stay up, its RSS bounded, every
job it acknowledged kept, and the honest users served.

- loomd (BUILD_DIR/loomd) as root with --multi-user, the local executor and
  one node, its Unix socket open to everyone; four accounts made for the run
  (useradd, removed at the end).
- Each honest user, on its own Unix socket connections (SO_PEERCRED), loops:
  `job.submit` of a short job (it prints a line and sleeps 1 s), `job.list`
  (one page of 100), `job.wait` (timeout 2 s) on its last job, `job.logs` of
  it. The latency of every call is recorded (connect included, a fresh
  connection every 20 calls); every acknowledged job id is kept.
- The hostile user runs, on loop: tests/integration/hold_conns.py (140 Unix
  connections looping `job.wait`), batches of 300 `job.wait` calls whose
  connection is closed at once, batches of 50 `job.list` limit 1000, 20
  `dash.login` calls. With --file-attacks a second hostile user names, on
  loop, a FIFO and a 200 MiB file truncated under loomd as `job.submit`'s
  model (issue 30, findings 1 and 5; before their fix they hung or crashed
  loomd). A second user, because the first one's calls meet his own
  connection limit nearly always (11,683 of 11,686 in one run).
- Sampled every second: loomd's RSS (VmRSS) and whether it is alive.

At the end: every acknowledged job must be in the store (read with the
token), loomd alive. Prints a summary and, with --out, writes it as JSON.
Needs root and munge (scripts/munge-up.sh is run). Figures need a quiet
machine; on a shared one they show the shape, not the numbers.

usage: sudo python3 bench/multiuser_soak.py BUILD_DIR [--minutes M] [--out FILE]
       [--file-attacks]
"""

import argparse
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ITEST = os.path.join(HERE, "..", "tests", "integration")
sys.path.insert(0, ITEST)
from loomd_client import Client  # noqa: E402

NODE = "name=n1,cpus=8,memory=8GiB,gpus=2,gpu_type=virtual"

HONEST = r'''
import json, sys, time
sys.path.insert(0, %(itest)r)
from loomd_client import Client, HttpError, RpcError
url, seconds, work = %(url)r, %(seconds)r, %(work)r
lat = {"submit": [], "list": [], "wait": [], "logs": []}
errors, acked = {}, []
end = time.monotonic() + seconds
c, calls, last = None, 0, None
def timed(op, method, params):
    global c, calls
    t0 = time.monotonic()
    try:
        if c is None or calls %% 20 == 0:
            if c is not None:
                c.close()
            c = Client(url, timeout=60)
        calls += 1
        r = c.call(method, params)
        lat[op].append(time.monotonic() - t0)
        return r
    except Exception as e:
        key = "%%s %%s" %% (op, type(e).__name__)
        errors[key] = errors.get(key, 0) + 1
        c = None
        return None
while time.monotonic() < end:
    r = timed("submit", "job.submit", {"name": "soak", "script": "#!/bin/bash\necho hi\nsleep 1\n",
                                       "options": {"workdir": work, "output": work + "/o-%%j.out"}})
    if r:
        last = r["id"]
        acked.append(last)
    timed("list", "job.list", {"limit": 100})
    if last:
        timed("wait", "job.wait", {"ids": [last], "timeout": 2})
        timed("logs", "job.logs", {"id": last, "offset": 0})
print(json.dumps({"lat": lat, "errors": errors, "acked": acked}))
'''

HOSTILE = r'''
import json, socket, sys, time
sys.path.insert(0, %(itest)r)
from loomd_client import Client
url, sock, seconds, job = %(url)r, %(sock)r, %(seconds)r, %(job)r
end = time.monotonic() + seconds
counts = {}
def note(k):
    counts[k] = counts.get(k, 0) + 1
def raw(body):
    s = socket.socket(socket.AF_UNIX)
    s.connect(sock)
    s.sendall(b"POST /rpc HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
              b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
    return s
while time.monotonic() < end:
    try:
        waits = [{"jsonrpc": "2.0", "id": i, "method": "job.wait",
                  "params": {"ids": [job], "timeout": 1}} for i in range(300)]
        raw(json.dumps(waits).encode()).close()  # and leave
        note("abandoned batch")
        lists = [{"jsonrpc": "2.0", "id": i, "method": "job.list",
                  "params": {"limit": 1000}} for i in range(50)]
        s = raw(json.dumps(lists).encode())
        s.settimeout(30)
        while s.recv(1 << 20):
            pass
        s.close()
        note("list batch")
        c = Client(url, timeout=30)
        for i in range(20):
            try:
                c.call("dash.login")
                note("dash.login ok")
            except Exception as e:
                note("dash.login " + type(e).__name__)
                c.close()
                c = Client(url, timeout=30)
        c.close()
    except Exception as e:
        note("error " + type(e).__name__)
        time.sleep(0.2)
print(json.dumps(counts))
'''

FILES = r'''
import json, os, sys, time
sys.path.insert(0, %(itest)r)
from loomd_client import Client
url, seconds, work = %(url)r, %(seconds)r, %(work)r
end = time.monotonic() + seconds
counts = {}
fifo = os.path.join(work, "fifo.onnx")
if not os.path.exists(fifo):
    os.mkfifo(fifo)
big = os.path.join(work, "big.onnx")
while time.monotonic() < end:
    for model in (fifo, big):
        if model == big:
            with open(big, "wb") as f:
                f.truncate(200 << 20)
        c = Client(url, timeout=30)
        try:
            if model == big:
                pid = os.fork()
                if pid == 0:
                    time.sleep(0.01)
                    os.truncate(big, 0)
                    os._exit(0)
            c.call("job.submit", {"name": "f", "script": "true", "model": model})
            counts["accepted"] = counts.get("accepted", 0) + 1
        except Exception as e:
            k = type(e).__name__
            counts[k] = counts.get(k, 0) + 1
        finally:
            c.close()
            if model == big:
                os.waitpid(pid, 0)
print(json.dumps(counts))
'''


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


class Soak:
    def __init__(self, args):
        self.args = args
        self.tag = "%d" % (os.getpid() % 100000)
        # a, b, c honest; h hostile; f a second hostile user for the file
        # attacks (as h's, they would mostly meet h's own connection limit)
        self.users = ["loomsk%s%s" % (c, self.tag)
                      for c in ("abchf" if self.args.file_attacks else "abch")]
        self.procs = []

    def make_users(self):
        self.pw, self.work = {}, {}
        for u in self.users:
            subprocess.run(["useradd", "-m", "-U", "-s", "/bin/bash", u], check=True,
                           capture_output=True)
            self.pw[u] = pwd.getpwnam(u)
            w = os.path.join(self.pw[u].pw_dir, "work")
            os.makedirs(w, exist_ok=True)
            os.chown(w, self.pw[u].pw_uid, self.pw[u].pw_gid)
            os.chmod(self.pw[u].pw_dir, 0o711)
            self.work[u] = w

    def remove_users(self):
        for u in self.users:
            subprocess.run(["pkill", "-KILL", "-u", u], capture_output=True)
            subprocess.run(["userdel", "-r", "-f", u], capture_output=True)

    def start_loomd(self):
        self.state = tempfile.mkdtemp(prefix="loom-soak-")
        os.chmod(self.state, 0o755)
        self.sock = os.path.join(self.state, "sock", "loomd.sock")
        os.makedirs(os.path.dirname(self.sock))
        os.chmod(os.path.dirname(self.sock), 0o755)
        st = os.path.join(self.state, "state")
        log = open(os.path.join(self.state, "loomd.log"), "ab")
        self.loomd = subprocess.Popen(
            [os.path.join(self.args.build, "loomd"), "--listen", "127.0.0.1:0", "--state-dir", st,
             "--multi-user", "--socket", self.sock, "--executor", "local", "--node", NODE,
             "--grace", "500ms", "--log-level", "warn"], stdout=log, stderr=log)
        url_file = os.path.join(st, "loomd.url")
        for _ in range(3000):
            if os.path.exists(url_file) and open(url_file).read().strip():
                break
            if self.loomd.poll() is not None:
                raise RuntimeError("loomd exited; see " + log.name)
            time.sleep(0.01)
        self.url = open(url_file).read().strip()
        self.token = open(os.path.join(st, "token")).read().strip()

    def as_user(self, u, code):
        pw = self.pw[u]
        p = subprocess.Popen(["/usr/bin/python3", "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=self.work[u],
                             user=pw.pw_uid, group=pw.pw_gid, start_new_session=True,
                             env={"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir})
        self.procs.append(p)
        return p

    def sample(self, stop, out):
        while not stop.is_set():
            alive = self.loomd.poll() is None
            rss = 0
            if alive:
                try:
                    with open("/proc/%d/status" % self.loomd.pid) as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                rss = int(line.split()[1])
                except OSError:
                    pass
            out.append((time.monotonic(), alive, rss))
            stop.wait(1.0)

    def run(self):
        seconds = self.args.minutes * 60
        url = "unix:" + self.sock
        samples, stop = [], threading.Event()
        sampler = threading.Thread(target=self.sample, args=(stop, samples))
        sampler.start()
        h = self.users[3]
        # the hostile user's own held job, that hold_conns.py waits on
        p = self.as_user(h, (
            "import sys; sys.path.insert(0, %r)\nfrom loomd_client import Client\n"
            "print(Client(%r).call('job.submit', {'name': 'h', 'script': 'sleep 100000', "
            "'options': {'workdir': %r, 'hold': True}})['id'])\n") % (ITEST, url, self.work[h]))
        out, err = p.communicate(timeout=60)
        if p.returncode != 0:
            raise RuntimeError("the hostile user's job: " + err[-500:])
        hjob = int(out.split()[-1])
        honest = [self.as_user(u, HONEST % {"itest": ITEST, "url": url, "seconds": seconds,
                                             "work": self.work[u]}) for u in self.users[:3]]
        hold = subprocess.Popen(
            ["/usr/bin/python3", os.path.join(ITEST, "hold_conns.py"), "--url", url, "--conns",
             "140", "--seconds", str(seconds), "--job", str(hjob)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, cwd=self.work[h], user=self.pw[h].pw_uid,
            group=self.pw[h].pw_gid, start_new_session=True,
            env={"PATH": "/usr/bin:/bin", "HOME": self.pw[h].pw_dir})
        self.procs.append(hold)
        loops = self.as_user(h, HOSTILE % {"itest": ITEST, "url": url, "sock": self.sock,
                                           "seconds": seconds, "job": hjob})
        files = None
        if self.args.file_attacks:
            f = self.users[4]  # not h: h's connections are at his limit all along
            files = self.as_user(f, FILES % {"itest": ITEST, "url": url, "seconds": seconds,
                                             "work": self.work[f]})
        results = []
        for p in honest:
            out, err = p.communicate(timeout=seconds + 300)
            results.append(json.loads(out.strip().splitlines()[-1]) if out.strip()
                           else {"lat": {}, "errors": {"no output": err[-500:]}, "acked": []})
        attack = {}
        for name, p in (("hold_conns", hold), ("loops", loops), ("files", files)):
            if p is None:
                continue
            try:
                out, err = p.communicate(timeout=120)
                attack[name] = json.loads(out.strip().splitlines()[-1]) if out.strip() \
                    else {"stderr": err[-300:]}
            except (subprocess.TimeoutExpired, ValueError) as e:
                attack[name] = {"unfinished": str(e)[:200]}
        stop.set()
        sampler.join()
        return self.summary(results, attack, samples)

    def summary(self, results, attack, samples):
        alive = self.loomd.poll() is None
        kept = missing = 0
        acked = [i for r in results for i in r["acked"]]
        if alive:
            c = Client(self.url, self.token, timeout=120)
            have = set(j["id"] for j in c.list_all())
            c.close()
            kept = sum(1 for i in acked if i in have)
            missing = len(acked) - kept
        lat = {}
        for op in ("submit", "list", "wait", "logs"):
            xs = [x for r in results for x in r["lat"].get(op, [])]
            lat[op] = {"calls": len(xs), "p50_ms": round(1000 * (pct(xs, 50) or 0), 1),
                       "p99_ms": round(1000 * (pct(xs, 99) or 0), 1),
                       "max_ms": round(1000 * max(xs), 1) if xs else None}
        errors = {}
        for r in results:
            for k, v in r["errors"].items():
                errors[k] = errors.get(k, 0) + v
        rss = [s[2] for s in samples if s[1]]
        t0 = samples[0][0] if samples else 0
        by_minute = {}  # the largest RSS of each minute: growth or a plateau
        for t, up, r in samples:
            if up:
                m = int((t - t0) // 60)
                by_minute[m] = max(by_minute.get(m, 0), r)
        return {"minutes": self.args.minutes, "loomd_alive": alive,
                "down_samples": sum(1 for s in samples if not s[1]),
                "rss_kib": {"first": rss[0] if rss else None, "max": max(rss) if rss else None,
                            "last": rss[-1] if rss else None,
                            "max_by_minute": [by_minute[m] for m in sorted(by_minute)]},
                "acknowledged": len(acked), "kept": kept, "missing": missing,
                "honest_latency": lat, "honest_errors": errors, "attack": attack,
                "file_attacks": self.args.file_attacks}

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()
        if self.loomd.poll() is None:
            self.loomd.send_signal(signal.SIGTERM)
            try:
                self.loomd.wait(60)
            except subprocess.TimeoutExpired:
                self.loomd.kill()
                self.loomd.wait()
        shutil.rmtree(self.state, True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--out")
    ap.add_argument("--file-attacks", action="store_true")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("multiuser_soak.py: needs root (makes accounts, runs loomd --multi-user)")
    subprocess.run([os.path.join(HERE, "..", "scripts", "munge-up.sh")], check=True,
                   capture_output=True)
    soak = Soak(args)
    soak.make_users()
    try:
        soak.start_loomd()
        try:
            res = soak.run()
        finally:
            soak.cleanup()
    finally:
        soak.remove_users()
    text = json.dumps(res, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    ok = res["loomd_alive"] and res["missing"] == 0
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
