"""The Python SDK (python/loom) against a real loomd running jobs on this
machine: every Client method over the Unix socket and TCP, typed errors
carrying the JSON-RPC error, results as dataclasses; loom.Executor (a
result, a raised exception, a cancelled job, a job killed by its time
limit); loom.monitor still working; and `pip install ./python`.

Functions given to the Executor live at module level and the test runs
under `if __name__ == "__main__":`, as the SDK's docs require."""

import concurrent.futures
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.environ.get("LOOM_SOURCE_DIR") or os.path.join(HERE, "..", "..")
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(SRC, "python"))

import loom  # noqa: E402
from loomd_client import Loomd  # noqa: E402


class Oops(Exception):
    """Raised inside a job; the future re-raises this very class."""


def add(a, b=1):
    return {"sum": a + b, "pid": os.getpid()}


def fail(msg):
    raise Oops(msg)


def sleep(s):
    time.sleep(s)
    return s


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def expect(exc, fn, *a, **kw):
    try:
        fn(*a, **kw)
    except exc as e:
        return e
    raise AssertionError(f"{fn.__name__}: expected {exc.__name__}")


def client_methods(d, tmp):
    c = loom.Client("unix:" + d.socket_path)
    tcp = loom.Client(d.url, d.token)
    info = c.info()
    check(isinstance(info, loom.ServerInfo) and info.name == "loomd" and info.api_version == 1,
          "info: a ServerInfo")
    check("job.submit" in info.methods and tcp.info().pid == info.pid, "info over TCP too")
    e = expect(loom.AuthError, loom.Client(d.url, "0" * 64).info)
    check(e.status == 401, "a wrong token: AuthError 401")
    e = expect(loom.TransportError, loom.Client("unix:" + tmp + "/none.sock").info)
    check("none.sock" in str(e), "no loomd: TransportError naming the address")

    # submit: a script with resources, a file; idempotency
    r = c.submit("#!/bin/sh\necho out-$LOOM_JOB_ID; echo err >&2\n", name="hello", cpus=1,
                 memory="64MiB", gpu_share=0.5, time=datetime.timedelta(minutes=5),
                 priority=3, labels={"team": "sdk"}, error="%x-%j.err")
    check(isinstance(r, loom.SubmitResult) and r.created and r.state == "PENDING",
          "submit: a SubmitResult")
    path = os.path.join(tmp, "job.sh")
    with open(path, "w") as f:
        f.write("#!/bin/sh\nsleep 30\n")
    long = tcp.submit(file=path, gpus=2, submit_id="sdk-long")
    again = tcp.submit(file=path, gpus=2, submit_id="sdk-long")
    check(again.id == long.id and not again.created, "submit: same submit_id, same job")

    # wait: job.wait's long-poll, then one job.get (no polling of job.get)
    calls = []
    plain_call = c.call
    c.call = lambda m, p=None, wait=0: calls.append(m) or plain_call(m, p, wait)
    job = c.wait(r.id, timeout=60)
    del c.call
    check(calls.count("job.get") == 1 and set(calls) == {"job.wait", "job.get"},
          f"wait: rides job.wait ({calls})")
    check(job.state == "COMPLETED" and job.run.outcome.exit_code == 0, "wait: COMPLETED, exit 0")
    job = c.get(r.id)
    check(isinstance(job, loom.Job) and job.name == "hello" and job.priority == 3
          and job.labels == {"team": "sdk"} and job.time_limit == 300, "get: a Job")
    check(job.resources.gpu_share == 500 and job.resources.memory == 64 << 20,
          "get: resources (0.5 GPU as 500 milli, 64MiB)")
    check(job.script.startswith("#!/bin/sh") and [e.to for e in job.events][0] == "PENDING"
          and job.events[-1].to == "COMPLETED", "get: script and events")
    check(isinstance(job.submit_time, datetime.datetime) and job.end_time >= job.start_time,
          "get: times as datetimes")
    out = c.logs(r.id)
    check(out.startswith("out-") or out.startswith("out"), f"logs: stdout {out!r}")
    check(c.logs(r.id, "stderr") == "err\n" and c.logs(r.id, tail=2) == out[-2:],
          "logs: stderr, tail")
    check("".join(c.follow(r.id)) == out, "follow: the whole output of an ended job")

    # wait with a timeout on a job still running; cancel it
    c.wait(long.id, timeout=30, states={"RUNNING"})
    e = expect(loom.WaitTimeout, c.wait, long.id, timeout=0.3)
    check(e.job_id == long.id and e.state == "RUNNING", "wait: WaitTimeout while RUNNING")
    job = c.cancel(long.id, reason="sdk test")
    check(job.state == "CANCELLED", "cancel: CANCELLED")
    e = expect(loom.InvalidState, c.cancel, long.id)
    check(e.code == -32002 and e.data == {"id": long.id} and e.error["code"] == -32002,
          "cancel of an ended job: InvalidState carrying the JSON-RPC error")
    e = expect(loom.JobNotFound, c.get, 99999)
    check(e.code == -32001 and e.data == {"id": 99999}, "get: JobNotFound")
    e = expect(loom.InvalidParams, c.submit, "x", cpus=0)
    check(e.code == -32602 and "cpus" in e.message, "submit cpus=0: InvalidParams naming cpus")

    # list: all, by state, pages, a limit
    for i in range(5):
        c.submit("#!/bin/sh\ntrue\n", name=f"many-{i}", gpus=0)
    jobs = c.list(page_size=2)
    check([j.id for j in jobs] == sorted(j.id for j in jobs) and len(jobs) == 7,
          "list: every job, oldest first, over pages of 2")
    check([j.id for j in c.list(state="CANCELLED")] == [long.id], "list: by state")
    check(len(c.list(limit=3)) == 3, "list: a limit")

    nodes = c.nodes()
    check(len(nodes) == 1 and nodes[0].gpu_count == 2 and len(nodes[0].gpus) == 2
          and isinstance(nodes[0].gpus[0], loom.Gpu), "nodes: Node and Gpu dataclasses")
    check("loom_" in c.metrics(), "metrics: Prometheus text")

    queue_methods(c, tcp, tmp)
    c.close()
    tcp.close()


def jobs_of_array(c, array_id):
    return sorted((j for j in c.list() if j.raw["options"].get("array_job_id") == array_id),
                  key=lambda j: j.raw["options"]["array_task_id"])


def queue_methods(c, tcp, tmp):
    # logs following a growing output, over TCP (job.logs: no file read here)
    g = tcp.submit("#!/bin/sh\nfor i in 1 2 3 4; do echo line-$i; sleep 0.5; done\n",
                   name="grows")
    chunks, states = [], []
    for chunk in tcp.follow(g.id):
        chunks.append(chunk)
        states.append(tcp.get(g.id).state)
    check("".join(chunks) == "line-1\nline-2\nline-3\nline-4\n",
          f"follow: the whole growing output ({chunks})")
    check(len(chunks) >= 2 and states[0] == "RUNNING",
          f"follow: text as it grows, the first while RUNNING ({len(chunks)} chunks, {states})")
    check(tcp.logs(g.id, offset=7) == "line-2\nline-3\nline-4\n", "logs: from an offset")
    check(tcp.get(g.id).state == "COMPLETED", "follow: ends once the job has ended")

    # hold at submission, update, release; hold/release of a pending job
    h = c.submit("#!/bin/sh\necho held-ran\n", name="held", hold=True)
    job = c.get(h.id)
    check(job.state == "PENDING" and job.raw["options"].get("hold") is True,
          "submit hold=True: PENDING, options.hold")
    e = expect(loom.WaitTimeout, c.wait, h.id, timeout=1)
    check(e.state == "PENDING", "wait: a held job is still PENDING after 1 s")
    job = c.update(h.id, name="renamed", priority=7, time=datetime.timedelta(minutes=2))
    check(job.name == "renamed" and job.priority == 7 and job.time_limit == 120,
          "update: name, priority, time limit of a pending job")
    job = c.release(h.id)
    check(not job.raw["options"].get("hold"), "release: options.hold removed")
    job = c.wait(h.id, timeout=60)
    check(job.state == "COMPLETED" and c.logs(h.id) == "held-ran\n", "release: the job ran")
    e = expect(loom.InvalidState, c.hold, h.id)
    check(e.code == -32002, "hold of an ended job: InvalidState")
    e = expect(loom.InvalidState, c.update, h.id, priority=1)
    check(e.code == -32002, "update of an ended job: InvalidState")
    later = c.submit("#!/bin/sh\ntrue\n", name="later", begin="now+1hours")
    job = c.hold(later.id)
    check(job.state == "PENDING" and job.raw["options"].get("hold") is True,
          "hold: a pending job held")
    job = c.release(later.id)
    check(job.state == "PENDING" and not job.raw["options"].get("hold"), "release: unheld")
    c.cancel(later.id)

    # requeue of a COMPLETED job is refused (its work is never run twice);
    # a FAILED job is queued again and runs a second time
    e = expect(loom.InvalidState, c.requeue, h.id)
    check(e.code == -32002 and "COMPLETED" in str(e), f"requeue of a COMPLETED job: {e}")
    job = c.get(h.id)
    check(job.state == "COMPLETED" and [e.to for e in job.events].count("RUNNING") == 1,
          "requeue refused: the completed job ran once and stays COMPLETED")
    f = c.submit("#!/bin/sh\necho failed-ran\nexit 3\n", name="fails")
    job = c.wait(f.id, timeout=60)
    check(job.state == "FAILED", f"a job that exits 3: {job.state}")
    job = c.requeue(f.id)
    check(job.state == "PENDING", "requeue: a FAILED job is PENDING again")
    job = c.wait(f.id, timeout=60)
    check(job.state == "FAILED" and [e.to for e in job.events].count("RUNNING") == 2,
          "requeue: the FAILED job ran a second time")

    # an array: one job per task
    a = c.submit("#!/bin/sh\necho task-$LOOM_ARRAY_TASK_ID\n", name="arr", array="0-3")
    check(a.array == {"job_id": a.id, "tasks": 4}, f"submit array: {a.array}")
    tasks = jobs_of_array(c, a.id)
    check([t.raw["options"]["array_task_id"] for t in tasks] == [0, 1, 2, 3],
          "array: four tasks")
    for i, t in enumerate(tasks):
        job = c.wait(t.id, timeout=60)
        check(job.state == "COMPLETED" and c.logs(t.id) == f"task-{i}\n",
              f"array task {i}: ran with its index")

    # dependencies: afterok on a job (given as a SubmitResult); one never satisfied
    first = c.submit("#!/bin/sh\nsleep 1\n", name="first")
    bad = c.submit("#!/bin/sh\nexit 3\n", name="bad")
    after = c.submit("#!/bin/sh\ntrue\n", name="after", dependency=first)
    never = c.submit("#!/bin/sh\ntrue\n", name="never", dependency=[bad.id])
    check(c.get(after.id).raw["options"].get("dependency") == f"afterok:{first.id}",
          "dependency: sent as options.dependency afterok:ID")
    job, one = c.wait(after.id, timeout=60), c.get(first.id)
    check(job.state == "COMPLETED" and job.start_time >= one.end_time,
          "dependency: started after the job it depends on completed")
    job = c.wait(never.id, timeout=60)
    check(job.state == "CANCELLED" and "DependencyNeverSatisfied" in (job.reason or ""),
          f"dependency on a failed job: CANCELLED ({job.reason})")
    e = expect(loom.InvalidParams, c.submit, "x", dependency="sometime:1")
    check("dependency" in e.message, "a malformed dependency: InvalidParams naming it")


def executor(d, tmp):
    c = loom.Client("unix:" + d.socket_path)
    folder = os.path.join(tmp, "ex")
    with loom.Executor(client=c, cpus=1, time="1m", folder=folder) as ex:
        f1 = ex.submit(add, 2, b=5)
        f2 = ex.submit(fail, "from the job")
        r = f1.result(timeout=60)
        check(r["sum"] == 7 and r["pid"] != os.getpid(), "executor: a result, from another process")
        e = f2.exception(timeout=60)
        check(isinstance(e, Oops) and str(e) == "from the job", "executor: the job's exception")
        check(isinstance(e.__cause__, loom.RemoteTraceback) and "fail" in str(e.__cause__),
              "executor: the remote traceback as __cause__")
        job = c.get(f2.job_id)
        check(job.state == "FAILED", "executor: a raising function's job is FAILED")
        check([x["sum"] for x in ex.map(add, [1, 2, 3], timeout=60)] == [2, 3, 4],
              "executor: map results in order")

        f3 = ex.submit(sleep, 60)
        c.wait(f3.job_id, timeout=30, states={"RUNNING"})
        check(f3.cancel() and f3.cancelled(), "executor: cancel() of a running job")
        check(c.get(f3.job_id).state == "CANCELLED", "executor: its job is CANCELLED")
        expect(concurrent.futures.CancelledError, f3.result, timeout=1)

        f4 = ex.submit(sleep, 60)
        c.cancel(f4.job_id)  # from outside the future
        check(isinstance(f4.exception(timeout=60), loom.JobCancelled),
              "executor: a job cancelled elsewhere: JobCancelled")
    with loom.Executor(client=c, time=2, folder=folder) as ex:
        f5 = ex.submit(sleep, 60)
        t0 = time.monotonic()
        e = f5.exception(timeout=90)
        check(isinstance(e, loom.JobTimeout) and e.job.state == "TIMEOUT",
              f"executor: killed by its 2 s time limit after {time.monotonic() - t0:.1f} s: "
              "JobTimeout")
    executor_rides_wait(c, folder)
    check(os.listdir(folder) == [], "executor: task files removed")
    e = expect(Exception, loom.Executor(client=c, folder=folder).submit, lambda: 1)
    check("pickle" in type(e).__name__.lower() or "pickle" in str(e).lower(),
          "executor: an unpicklable function fails at submit")


def wait_held(c, calls, timeout=30):
    """Until the executor's watcher has called job.wait and loomd holds the
    call (a JSON-RPC call in flight; the test itself has none)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if any(m == "job.wait" for m, _ in calls):
            gauge = [ln for ln in c.metrics().splitlines()
                     if ln.startswith("loom_rpc_calls_in_flight ")]
            if gauge and float(gauge[0].split()[1]) >= 1:
                return
        time.sleep(0.02)
    fail(f"the executor's job.wait was not held by loomd within {timeout} s")


def executor_rides_wait(c, folder):
    """The executor's watcher: job.wait calls with `any` (at most the batch's
    ids), one job.get per ended job, never a job.get poll; a short job behind
    a long one completes at once; several batches at once."""
    r = c.call("job.submit", {"name": "w-long", "script": "#!/bin/sh\nsleep 30\n"})
    q = c.call("job.submit", {"name": "w-short", "script": "#!/bin/sh\ntrue\n"})
    t0 = time.monotonic()
    w = c.call("job.wait", {"ids": [r["id"], q["id"]], "any": True, "timeout": 20}, wait=20)
    check(w["ended"] and w["jobs"][1]["state"] == "COMPLETED"
          and w["jobs"][0]["state"] in ("PENDING", "RUNNING") and time.monotonic() - t0 < 15,
          f"job.wait any: answered when one of two ended ({w})")
    w = c.call("job.wait", {"ids": [r["id"], q["id"]], "timeout": 1}, wait=1)
    check(not w["ended"], "job.wait without any: not ended while one runs")
    expect(loom.InvalidParams, c.call, "job.wait", {"ids": [q["id"]], "any": "yes"})
    c.cancel(r["id"])

    calls = []
    plain = c.call

    def counting(method, params=None, wait=0):
        calls.append((method, dict(params or {})))
        return plain(method, params, wait)
    c.call = counting
    try:
        with loom.Executor(client=c, cpus=1, time="1m", folder=folder, hold=20) as ex:
            slow = ex.submit(sleep, 20)
            wait_held(c, calls)
            t0 = time.monotonic()
            fast = ex.submit(add, 1, b=1)
            check(fast.result(timeout=60)["sum"] == 2 and time.monotonic() - t0 < 12,
                  f"executor: a short job behind a held wait completes at once "
                  f"({time.monotonic() - t0:.1f} s)")
            slow.cancel()
        mark = len(calls)
        with loom.Executor(client=c, cpus=1, time="1m", folder=folder, hold=5) as ex:
            ex._wait_ids = 2  # batches of two: several waiters and batches at once
            futs = [ex.submit(add, i, b=0) for i in range(5)]
            check([f.result(timeout=120)["sum"] for f in futs] == list(range(5)),
                  "executor: five futures in batches of two")
            check(max(len(p["ids"]) for m, p in calls[mark:] if m == "job.wait") <= 2,
                  "executor: no job.wait names more than its batch")
    finally:
        del c.call
    waits = [p for m, p in calls if m == "job.wait"]
    gets = [p["id"] for m, p in calls if m == "job.get"]
    check(waits and all(p.get("any") is True and 1 <= len(p["ids"]) <= 100 for p in waits),
          f"executor: its watcher calls job.wait with any ({len(waits)} calls)")
    check(len(gets) == len(set(gets)) and len(gets) <= 6,
          f"executor: one job.get per ended job, no job.get polling ({gets})")
    check({m for m, _ in calls} <= {"job.submit", "job.wait", "job.get", "job.cancel"},
          f"executor: only submit, wait, get, cancel ({sorted({m for m, _ in calls})})")


def monitor():
    plain = os.environ.get("LOOM_PLAIN_BUILD_DIR") or os.path.join(SRC, "build")
    lib = os.path.join(plain, "libloom.so")
    if not os.path.exists(lib):
        print(f"SKIP monitor: no unsanitized libloom.so at {lib}")
        return
    os.environ["LOOM_LIB"] = lib
    snap = loom.monitor.Monitor().snapshot("memory")
    check(snap["memory"]["total_bytes"] > 0, "loom.monitor: a snapshot through libloom")


def pip_install(d, tmp):
    """pip install ./python (copied: the build writes beside the sources),
    offline, with Debian's setuptools, then the installed package used."""
    copy = os.path.join(tmp, "python")
    shutil.copytree(os.path.join(SRC, "python"), copy,
                    ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
    target = os.path.join(tmp, "site")
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--no-build-isolation",
                        "--no-cache-dir", "--disable-pip-version-check", "--target", target, copy],
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise AssertionError(f"pip install ./python: {p.stdout[-500:]}{p.stderr[-1000:]}")
    check(os.path.exists(os.path.join(target, "loom", "executor.py")), "pip install ./python")
    code = ("import loom, sys; c = loom.Client(sys.argv[1]); "
            "print(loom.__file__, c.info().name, c.submit('#!/bin/sh\\ntrue\\n').id > 0)")
    env = dict(os.environ, PYTHONPATH=target)
    p = subprocess.run([sys.executable, "-c", code, "unix:" + d.socket_path], capture_output=True,
                       text=True, env=env, cwd=tmp)
    check(p.returncode == 0 and p.stdout.startswith(target) and "loomd True" in p.stdout,
          f"the installed package talks to loomd: {p.stdout} {p.stderr[-500:]}")


def main():
    tmp = tempfile.mkdtemp(prefix="loom-sdk-")
    os.chdir(tmp)  # submit's default workdir: the jobs' loom-%j.out land here
    try:
        with Loomd(extra_args=["--executor", "local", "--gpus", "2", "--grace", "1s"]) as d:
            client_methods(d, tmp)
            executor(d, tmp)
            pip_install(d, tmp)
        monitor()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("PASS")


if __name__ == "__main__":
    main()
