"""Baselines for bench/mon.c, run with /usr/bin/python3 in the same run:
psutil doing what each loom collector does, and a node_exporter scrape.
Prints one JSON object: {"psutil": {name: {"median_us", "p99_us", "n"}},
"node_exporter": {...} or {"error": "..."}}."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import psutil


def timeit(fn, n):
    fn()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    ts.sort()
    return {"median_us": ts[n // 2] / 1e3, "p99_us": ts[min(n - 1, n * 99 // 100)] / 1e3, "n": n}


def fs():
    for p in psutil.disk_partitions(all=False):
        psutil.disk_usage(p.mountpoint)


def full():
    psutil.cpu_times(percpu=True)
    psutil.cpu_freq(percpu=True)
    os.getloadavg()
    psutil.virtual_memory()
    psutil.swap_memory()
    psutil.disk_io_counters(perdisk=True)
    psutil.net_io_counters(pernic=True)
    fs()
    psutil.sensors_temperatures()


n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
res = {"psutil_version": psutil.__version__, "psutil": {
    "cpu": timeit(lambda: (psutil.cpu_times(percpu=True), os.getloadavg()), n),
    "memory": timeit(lambda: (psutil.virtual_memory(), psutil.swap_memory()), n),
    "disk": timeit(lambda: psutil.disk_io_counters(perdisk=True), n),
    "net": timeit(lambda: psutil.net_io_counters(pernic=True), n),
    "fs": timeit(fs, n),
    "thermal": timeit(psutil.sensors_temperatures, n),
    "process": timeit(lambda: psutil.Process().as_dict(["cpu_times", "memory_info", "io_counters",
                                                         "num_threads", "num_ctx_switches"]), n),
    "host": timeit(full, n),
}}

s = socket.socket()
s.bind(("127.0.0.1", 0))
port = s.getsockname()[1]
s.close()
try:
    p = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{port}",
                          "--no-collector.systemd"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        deadline = time.monotonic() + 15
        while True:
            try:
                urllib.request.urlopen(url, timeout=5).read()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        res["node_exporter"] = timeit(lambda: urllib.request.urlopen(url, timeout=30).read(), 50)
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=10)
except Exception as e:  # noqa: BLE001
    res["node_exporter"] = {"error": str(e)}
print(json.dumps(res))
