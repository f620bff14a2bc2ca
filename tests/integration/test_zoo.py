"""Warm starts end to end through loomd (docs/zoo.md): a real training job
(PyTorch on the CPU, the digits set from python3-sklearn) trains a parent;
its outputs are registered with zoo.add; zoo.list / zoo.get / zoo.match see
it; zoo.warm maps its weights onto a wider child; a second real job starts
from them (LOOM_WARM_START) and reports the tensors applied; the CLI reads
the same repository; errors carry the documented codes."""
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
from loomd_client import Loomd, RpcError, build_dir  # noqa: E402

SRC = os.environ.get("LOOM_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
TRAIN = os.path.abspath(os.path.join(SRC, "workloads", "zoo", "train.py"))


def wait_ended(c, jid, timeout=300):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        j = c.get(jid)
        if j["state"] not in ("PENDING", "RUNNING"):
            return j
        time.sleep(0.2)
    raise AssertionError(f"job {jid} did not end within {timeout}s")


def job(c, name, out, arch, env="", labels=None):
    script = (f"#!/bin/bash\nset -e\n{env}exec /usr/bin/python3 {TRAIN} --arch {arch} "
              f"--steps 150 --out {out}\n")
    jid = c.submit(name, script, resources={"cpus": 1}, labels=labels or {})["id"]
    j = wait_ended(c, jid)
    assert j["state"] == "COMPLETED", j
    with open(os.path.join(out, "metrics.json")) as f:
        return jid, json.load(f)


def expect_error(c, method, params, code):
    try:
        c.call(method, params)
    except RpcError as e:
        assert e.code == code, (method, e)
        return e
    raise AssertionError(f"{method} {params}: expected error {code}")


def main():
    args = ["--executor", "local", "--node", "name=n1,cpus=4,memory=8GiB,gpus=1,gpu_type=virtual"]
    d = Loomd(extra_args=args).start()
    try:
        c = d.client()
        work = os.path.join(d.state_dir, "work")
        parent_dir, child_dir = os.path.join(work, "parent"), os.path.join(work, "child")
        # a job declaring its model output is registered once it has COMPLETED;
        # one whose output is missing is not (loomd logs why)
        bad = c.submit("broken", "#!/bin/bash\ntrue\n", resources={"cpus": 1},
                       labels={"zoo.output": os.path.join(work, "nothing"),
                               "zoo.task": "digits"})["id"]
        pid, pm = job(c, "parent", parent_dir, "mlp-32",
                      labels={"zoo.output": parent_dir, "zoo.task": "digits"})
        assert pm["warm_start"] is None and pm["accuracy"] > 0.5, pm
        deadline = time.monotonic() + 20
        while True:
            entries = c.call("zoo.list", {"task": "digits"})["entries"]
            if entries or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert [(e["job_id"], e["name"]) for e in entries] == [(pid, "parent")], entries
        eid = entries[0]["id"]
        got = c.call("zoo.get", {"id": eid})
        assert got["job_id"] == pid and got["metric"]["value"] == pm["accuracy"], got
        assert os.path.exists(got["weights_path"])
        assert wait_ended(c, bad)["state"] == "COMPLETED"
        # the child: a wider MLP, exported untrained by the same code
        os.makedirs(child_dir)
        subprocess.run([sys.executable, "-c",
                        "import sys, torch; sys.path.insert(0, sys.argv[1]); import digits; "
                        "digits.export(digits.build('mlp-48'), sys.argv[2])",
                        os.path.dirname(TRAIN), os.path.join(child_dir, "child.onnx")],
                       check=True, capture_output=True)
        m = c.call("zoo.match", {"model": os.path.join(child_dir, "child.onnx"),
                                 "task": "digits"})
        assert m["parent"] == eid and 0.5 < m["candidates"][0]["similarity"] < 1, m
        w = c.call("zoo.warm", {"model": os.path.join(child_dir, "child.onnx"),
                                "task": "digits", "seed": 1})
        assert w["parent"] == eid and w["layers_mapped"] == 2, w
        assert w["weights"].startswith(d.state_dir), w
        _, cm = job(c, "child", os.path.join(child_dir, "out"), "mlp-48",
                    env=f"export LOOM_WARM_START={w['weights']}\n")
        assert cm["warm_start"]["applied"] == 4 and cm["warm_start"]["parent"] == eid, cm
        # zoo.add by hand: the child's outputs
        out2 = os.path.join(child_dir, "out")
        e2 = c.call("zoo.add", {"model": os.path.join(out2, "model.onnx"),
                                "weights": os.path.join(out2, "weights.lw"), "task": "digits",
                                "name": "mlp-48", "metric": {"name": "accuracy",
                                                             "value": cm["accuracy"]}})["id"]
        # loom submit --model M --warm-start: the job gets LOOM_WARM_START, its
        # labels name the parent
        cli = os.path.join(build_dir(), "loom")
        out3 = os.path.join(child_dir, "out3")
        script = os.path.join(work, "child.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/bash\nset -e\nexec /usr/bin/python3 {TRAIN} --arch mlp-48 "
                    f"--steps 50 --out {out3}\n")
        env = dict(os.environ, LOOM_URL=d.url, LOOM_TOKEN=d.token)
        r = subprocess.run([cli, "submit", script, "--model", os.path.join(child_dir, "child.onnx"),
                            "--batch", "1", "--gpu-share", "100m", "--gpu-mem", "1GiB", "--warm-start", "--warm-task",
                            "digits", "--json"], capture_output=True, text=True, env=env,
                           cwd=work)  # the job runs, and writes loom-%j.out, where submitted
        assert r.returncode == 0, r.stderr
        jid3 = json.loads(r.stdout)["id"]
        j3 = wait_ended(c, jid3)
        assert j3["state"] == "COMPLETED", j3
        # the trained mlp-48 is now stored too: the identical architecture wins
        assert j3["labels"]["zoo.parent"] == str(e2), j3["labels"]
        assert j3["labels"]["zoo.similarity"] == "1.0000", j3["labels"]
        assert j3["labels"]["zoo.layers_mapped"] == "2 of 4", j3["labels"]
        assert "LOOM_WARM_START" in j3["script"]
        # the weights: a new file in the submit directory, created as the
        # caller (zoo.warm "out"), not under loomd's STATE/zoo/warm/
        w3 = j3["labels"]["zoo.weights"]
        assert os.path.dirname(w3) == work and os.path.basename(w3).startswith(
            ".loom-warm-cli-"), w3
        assert os.stat(w3).st_mode & 0o777 == 0o600 and os.path.getsize(w3) > 0, w3
        with open(os.path.join(out3, "metrics.json")) as f:
            assert json.load(f)["warm_start"]["applied"] == 4
        shown = subprocess.run([cli, "show", str(jid3)], capture_output=True, text=True,
                               env=env).stdout
        assert "zoo.similarity" in shown, shown
        # a catalog entry's "warm_start": loom gen --submit does the same; the
        # expected speed-up of an identical parent is the rule's top, 4.3
        catalog = os.path.join(work, "warm-catalog.json")
        with open(catalog, "w") as f:
            json.dump({"version": 1, "jobs": [
                {"name": "warm", "executable": "/bin/true", "time_limit": "1h",
                 "model": os.path.join(child_dir, "child.onnx"),
                 "warm_start": {"task": "digits"}}]}, f)
        r = subprocess.run([cli, "gen", "--catalog", catalog, "--count", "1", "--rate", "10/s",
                            "--seed", "1", "--submit", "-", "--json"], capture_output=True,
                           text=True, env=env, cwd=work)
        assert r.returncode == 0, r.stdout + r.stderr
        gj = [j for j in c.list_all() if j["name"] == "warm"]
        assert len(gj) == 1, gj
        g = wait_ended(c, gj[0]["id"])
        assert g["labels"]["zoo.parent"] == str(e2), g["labels"]
        assert "zoo.speedup" not in g["labels"], g["labels"]
        assert g["script"].startswith("#!") and "export LOOM_WARM_START='" in g["script"], g
        wg = g["labels"]["zoo.weights"]
        assert os.path.dirname(wg) == work and os.path.basename(wg).startswith(
            ".loom-warm-gen-") and os.path.getsize(wg) > 0, wg
        assert "zoo.speedup" not in j3["labels"], j3["labels"]
        # no parent for another task: that job fails in gen, nothing is submitted cold
        with open(catalog, "w") as f:
            json.dump({"version": 1, "jobs": [
                {"name": "nowarm", "executable": "/bin/true",
                 "model": os.path.join(child_dir, "child.onnx"),
                 "warm_start": {"task": "speech"}}]}, f)
        r = subprocess.run([cli, "gen", "--catalog", catalog, "--count", "1", "--rate", "10/s",
                            "--seed", "1", "--submit", "-", "--json"], capture_output=True,
                           text=True, env=env, cwd=work)
        assert "zoo.warm" in r.stdout + r.stderr, r.stdout + r.stderr
        assert not [j for j in c.list_all() if j["name"] == "nowarm"]
        # its empty weights file (created before the match failed) is gone
        left = [n for n in os.listdir(work) if n.startswith(".loom-warm-")]
        assert len(left) == 2 and all(os.path.getsize(os.path.join(work, n)) for n in left), left
        # the CLI reads the same repository
        out = subprocess.run([cli, "zoo", "list", "--json", "--state-dir", d.state_dir],
                             capture_output=True, text=True, check=True).stdout
        assert [e["name"] for e in json.loads(out)] == ["parent", "mlp-48"], out
        assert "broken" not in out and "zoo.register_failed" in d.read_log(), d.read_log()
        assert c.call("zoo.remove", {"id": e2}) == {"id": e2}
        # errors: documented codes, the field named
        expect_error(c, "zoo.get", {"id": 999}, -32020)
        e = expect_error(c, "zoo.add", {"model": "rel.onnx", "weights": "/x", "task": "t",
                                        "metric": {"name": "a", "value": 1}}, -32602)
        assert "model" in e.message, e.message
        expect_error(c, "zoo.warm", {"model": os.path.join(child_dir, "child.onnx"),
                                     "task": "speech"}, -32020)
        assert c.call("zoo.remove", {"id": eid}) == {"id": eid}
        expect_error(c, "zoo.get", {"id": eid}, -32020)
    finally:
        d.stop()
    print("ok")


if __name__ == "__main__":
    main()
