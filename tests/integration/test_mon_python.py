"""python/loom/monitor.py against psutil (Debian python3-psutil): the same
counters read back to back must agree. Uses the unsanitized libloom.so of
LOOM_PLAIN_BUILD_DIR (ctypes cannot load the ASan build into Python).

Tolerances: values that do not move between two reads (totals, sizes, core
counts) must be equal; counters that move (CPU seconds, bytes) may differ by
what accrues between the two reads: 1% or a small absolute slack."""
import json
import os
import sys
import tempfile
import time

import psutil

src = os.environ.get("LOOM_SOURCE_DIR", os.getcwd())
plain = os.environ.get("LOOM_PLAIN_BUILD_DIR") or os.path.join(src, "build")
lib = os.path.join(plain, "libloom.so")
if not os.path.exists(lib):
    print(f"SKIP: no unsanitized libloom.so at {lib} (LOOM_PLAIN_BUILD_DIR)")
    sys.exit(0)
os.environ["LOOM_LIB"] = lib
sys.path.insert(0, os.path.join(src, "python"))
from loom import monitor  # noqa: E402

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def near(a, b, rel=0.01, abs_=0.0):
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_)


m = monitor.Monitor()

# --- memory: totals equal; available within 1% (it moves)
snap = m.snapshot("memory")
vm = psutil.virtual_memory()
sw = psutil.swap_memory()
mem = snap["memory"]
check(mem["total_bytes"] == vm.total, f"memory total {mem['total_bytes']} == psutil {vm.total}")
check(near(mem["available_bytes"], vm.available), f"memory available {mem['available_bytes']} ~ {vm.available}")
check(near(mem["cached_bytes"], vm.cached, abs_=16 << 20), f"memory cached {mem['cached_bytes']} ~ {vm.cached}")
check(mem["swap_total_bytes"] == sw.total, "swap total equal")

# --- cpu: per-mode seconds agree up to what accrues between the reads
t0 = time.monotonic()
snap = m.snapshot("cpu")
ct = psutil.cpu_times()
dt = time.monotonic() - t0
cpu = snap["cpu"]
n = psutil.cpu_count()
check(len(cpu["cores"]) == n, f"cores {len(cpu['cores'])} == psutil {n}")
slack = n * (dt + 0.02)  # at most n CPU-seconds per second, plus one tick each
for mode in ("user", "system", "idle", "iowait", "steal"):
    a, b = cpu["seconds"][mode], getattr(ct, mode)
    check(abs(a - b) <= slack, f"cpu {mode} seconds {a} ~ psutil {b} (slack {slack:.3f})")
la = os.getloadavg()
check(cpu["load"]["available"] and abs(cpu["load"]["load1"] - la[0]) < 0.5, "load1 ~ os.getloadavg")

# --- net and disk counters
snap = m.snapshot("net,disk,fs")
nics = psutil.net_io_counters(pernic=True)
for nic in snap["net"]["interfaces"]:
    p = nics.get(nic["name"])
    check(p is not None, f"interface {nic['name']} known to psutil")
    if p:
        check(near(nic["rx_bytes"], p.bytes_recv, abs_=64 << 10), f"{nic['name']} rx {nic['rx_bytes']} ~ {p.bytes_recv}")
        check(near(nic["tx_bytes"], p.bytes_sent, abs_=64 << 10), f"{nic['name']} tx {nic['tx_bytes']} ~ {p.bytes_sent}")
disks = psutil.disk_io_counters(perdisk=True)
for d in snap["disk"]["devices"]:
    p = disks.get(d["name"])
    if p is None:
        continue  # psutil leaves out some devices (e.g. zram without stats)
    check(near(d["read_bytes"], p.read_bytes, abs_=1 << 20), f"disk {d['name']} read {d['read_bytes']} ~ {p.read_bytes}")
    check(near(d["written_bytes"], p.write_bytes, abs_=4 << 20), f"disk {d['name']} written {d['written_bytes']} ~ {p.write_bytes}")
    check(abs(d["reads_completed"] - p.read_count) <= max(0.01 * p.read_count, 50), f"disk {d['name']} reads ~")
root = [f for f in snap["fs"]["mounts"] if f["mountpoint"] == "/"]
check(len(root) == 1, "filesystem / present")
if root:
    du = psutil.disk_usage("/")
    check(root[0]["size_bytes"] == du.total, f"/ size {root[0]['size_bytes']} == psutil {du.total}")
    check(near(root[0]["avail_bytes"], du.free, abs_=64 << 20), "/ avail ~ psutil free")

# --- this process
me = psutil.Process()
p = m.process(os.getpid())
mi, ct, io = me.memory_info(), me.cpu_times(), me.io_counters()
check(p["processes"] == 1 and p["comm"] == me.name()[:15], f"process comm {p['comm']!r}")
check(near(p["rss_bytes"], mi.rss, rel=0.05), f"rss {p['rss_bytes']} ~ psutil {mi.rss}")
check(p["vm_bytes"] == mi.vms or near(p["vm_bytes"], mi.vms, rel=0.01), "vms ~")
check(abs(p["user_seconds"] - ct.user) <= 0.05, f"user seconds {p['user_seconds']} ~ {ct.user}")
check(p["threads"] == me.num_threads(), "threads equal")
check(p["io"]["available"] and abs(p["io"]["read_bytes"] - io.read_bytes) <= 1 << 20, "io read_bytes ~ (1 MiB)")
cs = me.num_ctx_switches()
check(abs(p["voluntary_context_switches"] - cs.voluntary) <= 5, "voluntary context switches ~")

# --- a process tree: a parent with children
import subprocess  # noqa: E402
kids = [subprocess.Popen(["sleep", "5"]) for _ in range(3)]
tree = m.process(os.getpid(), tree=True)
want = 1 + len(me.children(recursive=True))
check(tree["processes"] == want, f"tree processes {tree['processes']} == psutil {want}")
for k in kids:
    k.kill()
    k.wait()

# --- the sampler: rates over the interval
with m.sampler("cpu,net") as s:
    time.sleep(0.2)
    r = s.next()
check(0.19 <= r["interval_seconds"] < 2, f"interval {r['interval_seconds']}")
check(0.0 <= r["cpu"]["busy_fraction"] <= 1.0, "busy fraction in [0,1]")
check(all("rx_bytes_per_second" in i for i in r["net"]["interfaces"]), "net rates present")

# --- errors come back as MonitorError with libloom's message
try:
    m.process(2**31 - 2)
    check(False, "missing pid raises")
except monitor.MonitorError as e:
    check("no such process" in str(e), f"missing pid: {e}")

# --- GPU through the NVML double of the plain build
double = os.path.join(plain, "nvml-double", "libnvidia-ml.so.1")
if os.path.exists(double):
    os.environ["LOOM_NVML_LIB"] = double
    os.environ["LOOM_NVML_SCENARIO"] = os.path.join(src, "tests", "nvml", "h200x2.json")
    g = monitor.Monitor().snapshot("gpu")["gpu"]
    check(g["available"] and len(g["devices"]) == 3, "gpu double: 3 devices")
    d0 = g["devices"][0]
    check(d0["power_watts"] == 312.5 and d0["memory_total_bytes"] == 150754820096, "gpu double: values")
    check(g["devices"][1]["unavailable"].get("ecc") == "NVML_ERROR_NOT_SUPPORTED", "gpu double: NOT_SUPPORTED")
    del os.environ["LOOM_NVML_LIB"]
g = monitor.Monitor().snapshot("gpu")["gpu"]
if not g["available"]:
    check(len(g["reason"]) > 10, f"gpu without driver: unavailable with reason ({g['reason'][:60]}...)")

m.close()
print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
