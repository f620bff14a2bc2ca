"""Accuracy of loom mon against node_exporter and /proc, and a clean
promtool lint of its Prometheus output.

The test starts prometheus-node-exporter on a free loopback port
(--no-collector.systemd), then for each counter takes: /proc directly,
`loom mon --json`, a node_exporter scrape, /proc again. Counters only grow,
so loom's and node_exporter's values must lie between the two direct reads
(allowing one clock tick of rounding), and loom and node_exporter must agree
within 1% (or within what accrued between the reads). Gauges that do not
move (MemTotal, filesystem size) must be equal.

Then `promtool check metrics` must print nothing for `loom mon --prom`,
both for this host and with GPUs (through the NVML double)."""
import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from prom_server import free_port  # noqa: E402

build = os.environ.get("LOOM_BUILD_DIR", "build")
src = os.environ.get("LOOM_SOURCE_DIR", os.getcwd())
loom = os.path.join(build, "loom")
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def proc_read():
    """The counters straight from /proc, in base units."""
    hz = os.sysconf("SC_CLK_TCK")
    out = {}
    with open("/proc/stat") as f:
        for line in f:
            w = line.split()
            if w[0].startswith("cpu") and w[0] != "cpu":
                for mode, v in zip(["user", "nice", "system", "idle", "iowait", "irq",
                                    "softirq", "steal"], w[1:9]):
                    out[("cpu", w[0][3:], mode)] = int(v) / hz
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":")
            out[("mem", k)] = int(v.split()[0]) * 1024
    with open("/proc/net/dev") as f:
        for line in f.readlines()[2:]:
            name, rest = line.split(":", 1)
            v = rest.split()
            out[("net", name.strip(), "rx")] = int(v[0])
            out[("net", name.strip(), "tx")] = int(v[8])
    with open("/proc/diskstats") as f:
        for line in f:
            v = line.split()
            out[("disk", v[2], "read")] = int(v[5]) * 512
            out[("disk", v[2], "written")] = int(v[9]) * 512
    return out


def loom_read():
    r = subprocess.run([loom, "mon", "--json", "--groups", "cpu,memory,net,disk,fs"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SystemExit(f"loom mon failed: {r.stderr}")
    j = json.loads(r.stdout)
    out = {}
    for c in j["cpu"]["cores"]:
        for mode, v in c["seconds"].items():
            out[("cpu", str(c["id"]), mode)] = v
    m = j["memory"]
    out[("mem", "MemTotal")] = m["total_bytes"]
    out[("mem", "MemAvailable")] = m["available_bytes"]
    out[("mem", "MemFree")] = m["free_bytes"]
    for i in j["net"]["interfaces"]:
        out[("net", i["name"], "rx")] = i["rx_bytes"]
        out[("net", i["name"], "tx")] = i["tx_bytes"]
    for d in j["disk"]["devices"]:
        out[("disk", d["name"], "read")] = d["read_bytes"]
        out[("disk", d["name"], "written")] = d["written_bytes"]
    for f in j["fs"]["mounts"]:
        if f.get("available"):
            out[("fs", f["mountpoint"])] = f["size_bytes"]
    return out


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)$')
LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def node_read(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
    out = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            continue
        name, labels, val = m.group(1), dict(LABEL.findall(m.group(2) or "")), float(m.group(3))
        if name == "node_cpu_seconds_total":
            out[("cpu", labels["cpu"], labels["mode"])] = val
        elif name in ("node_memory_MemTotal_bytes", "node_memory_MemAvailable_bytes",
                      "node_memory_MemFree_bytes"):
            out[("mem", name[12:-6])] = val
        elif name == "node_network_receive_bytes_total":
            out[("net", labels["device"], "rx")] = val
        elif name == "node_network_transmit_bytes_total":
            out[("net", labels["device"], "tx")] = val
        elif name == "node_disk_read_bytes_total":
            out[("disk", labels["device"], "read")] = val
        elif name == "node_disk_written_bytes_total":
            out[("disk", labels["device"], "written")] = val
        elif name == "node_filesystem_size_bytes":
            out[("fs", labels["mountpoint"])] = val
    return out


def start_node_exporter():
    for _ in range(5):
        port = free_port()
        p = subprocess.Popen(["prometheus-node-exporter", f"--web.listen-address=127.0.0.1:{port}",
                              "--no-collector.systemd"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and p.poll() is None:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read()
                return p, port
            except OSError:
                time.sleep(0.1)
        p.kill()
        p.wait()
    raise SystemExit("node_exporter did not start")


def main():
    if not os.path.exists(loom):
        raise SystemExit(f"no {loom}")
    node, port = start_node_exporter()
    try:
        compare(port)
    finally:
        node.send_signal(signal.SIGTERM)
        try:
            node.wait(timeout=10)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()
    promtool()
    print(f"{len(failures)} failure(s)")
    sys.exit(1 if failures else 0)


def compare(port):
    before = proc_read()
    lo = loom_read()
    no = node_read(port)
    after = proc_read()
    tick = 1.0 / os.sysconf("SC_CLK_TCK")
    counted = {"cpu": 0, "mem": 0, "net": 0, "disk": 0, "fs": 0}
    for key in sorted(set(lo) & set(no), key=str):
        kind = key[0]
        a, b = lo[key], no[key]
        if kind in ("cpu", "net", "disk"):
            p0, p1 = before[key], after[key]
            slack = tick if kind == "cpu" else 0
            if kind == "cpu" and key[2] in ("idle", "iowait"):
                slack = 0.1  # NO_HZ: the kernel may step these back a little (proc(5))
            check(p0 - slack <= a <= p1 + slack, f"{key}: loom {a} within /proc [{p0}, {p1}]")
            check(p0 - slack <= b <= p1 + slack, f"{key}: node_exporter {b} within /proc [{p0}, {p1}]")
            check(abs(a - b) <= max(0.01 * max(a, b), (p1 - p0) + slack),
                  f"{key}: loom {a} ~ node_exporter {b} (1% or the drift {p1 - p0})")
        elif key == ("mem", "MemTotal") or kind == "fs":
            check(a == b, f"{key}: loom {a} == node_exporter {b}")
        else:  # MemAvailable, MemFree move: 1%
            check(abs(a - b) <= 0.01 * max(a, b), f"{key}: loom {a} ~ node_exporter {b} (1%)")
        counted[kind] += 1
    for kind, n in counted.items():
        check(n > 0, f"compared {n} {kind} values")


def promtool():
    for name, env in (("host", {}),
                      ("gpu double", {"LOOM_NVML_LIB": os.path.join(build, "nvml-double", "libnvidia-ml.so.1"),
                                      "LOOM_NVML_SCENARIO": os.path.join(src, "tests", "nvml", "h200x2.json")})):
        e = dict(os.environ, **env)
        prom = subprocess.run([loom, "mon", "--prom"], capture_output=True, text=True, env=e, timeout=60)
        check(prom.returncode == 0 and "# TYPE" in prom.stdout, f"loom mon --prom ({name})")
        if name == "gpu double":
            check("loom_gpu_power_watts{" in prom.stdout, "gpu families present")
        lint = subprocess.run(["promtool", "check", "metrics"], input=prom.stdout,
                              capture_output=True, text=True, timeout=60)
        out = (lint.stdout + lint.stderr).strip()
        check(lint.returncode == 0 and out == "", f"promtool check metrics ({name}) reports nothing: {out!r}")


main()
