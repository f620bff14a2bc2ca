"""bench/fairshare_live: fair share with real jobs (issue 19). Two accounts
that this script creates (useradd, removed at the end) submit to a
multi-user loomd (as root) with one GPU: every 2 s the first submits four
2-second one-GPU jobs and the second one, so both keep a backlog. The GPU
time each got between warm-up and the end (usage.report over that window)
is compared under --queue-policy fairshare:2m, tiresias+fairshare:2m, drf
and fifo (--policies to choose). Needs root (the
accounts submit over the Unix socket, so no munged); without root it says
so and exits 0.

    python3 bench/fairshare_live.py BUILD_DIR [--out DIR] [--seconds S] [--policies P...]

Writes DIR/fairshare_live.md (default /tmp/loom-bench; make bench: docs/bench)."""

import argparse
import datetime
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "integration"))
from loomd_client import Loomd  # noqa: E402

TAG = "%d" % (os.getpid() % 100000)
USERS = ["loomfa" + TAG, "loomfb" + TAG]


def as_user(user, args, sock, cwd):
    pw = pwd.getpwnam(user)
    env = {"PATH": "/usr/bin:/bin", "HOME": pw.pw_dir, "LOOM_URL": "unix:" + sock}
    return subprocess.Popen(args, env=env, cwd=cwd, user=pw.pw_uid, group=pw.pw_gid,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def run(build, policy, seconds, warmup):
    sockdir = tempfile.mkdtemp(prefix="loom-fs-sock-")
    os.chmod(sockdir, 0o755)
    sock = os.path.join(sockdir, "loomd.sock")
    os.environ["LOOM_BUILD_DIR"] = build
    d = Loomd(extra_args=["--multi-user", "--socket", sock, "--executor", "local", "--node",
                          "name=n1,cpus=64,memory=64GiB,gpus=1,gpu_type=virtual",
                          "--queue-policy", policy, "--grace", "500ms"]).start()
    loom = os.path.join(build, "loom")
    work = {}
    for u in USERS:
        pw = pwd.getpwnam(u)
        work[u] = os.path.join(pw.pw_dir, "fs")
        os.makedirs(work[u], exist_ok=True)
        with open(os.path.join(work[u], "job.sh"), "w") as f:
            f.write("#!/bin/bash\n#SBATCH --gres=gpu:1 --output=/dev/null\nsleep 2\n")
        os.chown(work[u], pw.pw_uid, pw.pw_gid)
    t0 = time.monotonic()
    since = None
    procs = []
    tick = 0
    while time.monotonic() - t0 < seconds:
        for k, u in enumerate(USERS):
            for _ in range(4 if k == 0 else 1):
                procs.append(as_user(u, [loom, "submit", "job.sh"], sock, work[u]))
        if since is None and time.monotonic() - t0 >= warmup:
            since = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        tick += 1
        time.sleep(max(0.0, t0 + 2 * tick - time.monotonic()))
    failed = sum(1 for p in procs if p.wait() != 0)
    c = d.client()
    usage = c.call("usage.report", {"since": since})["rows"]
    c.close()
    d.cleanup()
    shutil.rmtree(sockdir, ignore_errors=True)
    gpu = {u: 0.0 for u in USERS}
    for r in usage:
        if r["user"] in gpu:
            gpu[r["user"]] += r["gpu_seconds"]
    return gpu, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--out", default="/tmp/loom-bench")
    ap.add_argument("--seconds", type=float, default=80)
    ap.add_argument("--warmup", type=float, default=20)
    ap.add_argument("--policies", nargs="+",
                    default=["fairshare:2m", "tiresias+fairshare:2m", "drf", "fifo"])
    a = ap.parse_args()
    if os.geteuid() != 0:
        print("fairshare_live: skipped: needs root (accounts and a multi-user loomd)")
        return 0
    build = os.path.abspath(a.build)
    for u in USERS:
        subprocess.run(["useradd", "-m", "-U", "-s", "/bin/bash", u], check=True)
    try:
        rows = []
        for policy in a.policies:
            gpu, failed = run(build, policy, a.seconds, a.warmup)
            total = sum(gpu.values())
            rows.append((policy, gpu[USERS[0]], gpu[USERS[1]],
                         gpu[USERS[0]] / total if total else 0, failed))
    finally:
        for u in USERS:
            subprocess.run(["pkill", "-KILL", "-u", u], capture_output=True)
            subprocess.run(["userdel", "-r", "-f", u], capture_output=True)
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = ["# Fair share with real jobs", "",
          f"`python3 bench/fairshare_live.py BUILD --seconds {a.seconds:g} --warmup "
          f"{a.warmup:g} --policies {' '.join(a.policies)}`, {when}, on {os.cpu_count()} CPUs (load average at the end "
          f"{os.getloadavg()[0]:.2f}).", "",
          "A multi-user loomd (root) with one virtual GPU runs real 2-second one-GPU jobs "
          "(`sleep 2`) of two accounts: every 2 s the first submits four, the second one "
          "(4:1), so both keep a backlog. GPU-seconds each got from the end of the warm-up to "
          "the end, from `usage.report`:", "",
          "| queue policy | GPU-s user A (4/tick) | GPU-s user B (1/tick) | A's part | failed submits |",
          "|---|---|---|---|---|"]
    for p, ga, gb, part, failed in rows:
        md.append(f"| `{p}` | {ga:.1f} | {gb:.1f} | {part:.3f} | {failed} |")
    md.append("")
    text = "\n".join(md) + "\n"
    print(text)
    os.makedirs(a.out, exist_ok=True)
    path = os.path.join(a.out, "fairshare_live.md")
    old = open(path).read() if os.path.exists(path) else ""
    keep = old[old.find("## Notes"):] if "## Notes" in old else ""
    with open(path, "w") as f:
        f.write(text + ("\n" + keep if keep else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
