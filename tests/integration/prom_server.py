"""A real Prometheus server (Debian's) for the integration tests: started
on a free loopback port, scraping a test's loomd every second as
docs/install.md configures it (scrape job "loomd" with the bearer token,
optionally a rule file), and queried through its HTTP API. Use as a context
manager; its data and log live in a temporary directory removed on exit."""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Prometheus:
    def __init__(self, loomd, rules=None):
        self.loomd = loomd
        self.rules = rules
        self.work = None
        self.proc = None
        self.api = None

    def __enter__(self):
        self.work = tempfile.mkdtemp(prefix="loom-prom-")
        try:
            self._start()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _start(self):
        token_file = os.path.join(self.work, "token")
        shutil.copy(os.path.join(self.loomd.state_dir, "token"), token_file)
        host_port = self.loomd.url.split("://", 1)[1]
        conf = "global:\n  scrape_interval: 1s\n"
        if self.rules:
            conf += f"  evaluation_interval: 1s\nrule_files:\n  - {self.rules}\n"
        conf += f"""scrape_configs:
  - job_name: loomd
    authorization:
      type: Bearer
      credentials_file: {token_file}
    static_configs:
      - targets: ['{host_port}']
"""
        with open(os.path.join(self.work, "prometheus.yml"), "w") as f:
            f.write(conf)
        port = free_port()
        with open(os.path.join(self.work, "log"), "wb") as log:
            self.proc = subprocess.Popen(
                ["prometheus", "--config.file", os.path.join(self.work, "prometheus.yml"),
                 "--storage.tsdb.path", os.path.join(self.work, "data"),
                 "--web.listen-address", f"127.0.0.1:{port}"],
                stdout=subprocess.DEVNULL, stderr=log)
        self.api = f"http://127.0.0.1:{port}/api/v1"

    def __exit__(self, *exc):
        if self.proc:
            self.proc.terminate()
            self.proc.wait(10)
            self.proc = None
        if self.work:
            shutil.rmtree(self.work, ignore_errors=True)
            self.work = None
        return False

    def get(self, path):
        """GET api/v1/PATH, decoded."""
        return json.load(urllib.request.urlopen(self.api + path, timeout=2))

    def query(self, expr, deadline):
        """The first sample of an instant query, polled until it has one or
        time.monotonic() passes deadline (then None)."""
        while time.monotonic() < deadline:
            try:
                r = self.get("/query?query=" + urllib.parse.quote(expr))["data"]["result"]
                if r:
                    return float(r[0]["value"][1])
            except OSError:
                pass
            time.sleep(0.5)
        return None

    def log(self):
        """The end of the server's log, for a failure message."""
        with open(os.path.join(self.work, "log"), errors="replace") as f:
            return f.read()[-2000:]
