"""loom zoo on its own (no loomd, no torch): add / list / show / match /
warm / rm on a repository in a temporary state directory, with hand-written
ONNX MLPs (onnx_tiny.py) and weights files written by loom.warmstart; the
usage errors and exit codes of docs/cli.md; a warm start's file read back
with numpy: widened MatMul weights keep the parent's columns; an entry's
recorded data keeps a child of other data cold (--data, issue 33)."""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
import onnx_tiny  # noqa: E402
import loom.warmstart as ws  # noqa: E402
from loomd_client import build_dir  # noqa: E402

LOOM = os.path.join(build_dir(), "loom")


def run(state, *args, code=0):
    r = subprocess.run([LOOM, "zoo", *args, "--state-dir", state], capture_output=True, text=True)
    assert r.returncode == code, (args, r.returncode, r.stdout, r.stderr)
    return r


def model(d, name, k, n, c, seed):
    path = os.path.join(d, name + ".onnx")
    onnx_tiny.mlp(path, k, n, c)
    rng = np.random.default_rng(seed)
    w = {"w1": rng.standard_normal((k, n)).astype("f4"),
         "w2": rng.standard_normal((n, c)).astype("f4")}
    ws.save(w, os.path.join(d, name + ".lw"), meta={"seed": seed})
    return path, os.path.join(d, name + ".lw"), w


def main():
    with tempfile.TemporaryDirectory(prefix="loom-zoo-cli-") as d:
        state = os.path.join(d, "state")
        assert subprocess.run([LOOM, "zoo", "--help"], capture_output=True).returncode == 0
        assert subprocess.run([LOOM, "zoo"], capture_output=True).returncode == 2
        run(state, "bogus", code=2)
        pm, pw, pweights = model(d, "parent", 8, 16, 4, 1)
        om, ow, _ = model(d, "other", 8, 64, 4, 2)
        cm, _, _ = model(d, "child", 8, 24, 4, 3)
        # usage errors name what is missing or malformed
        r = run(state, "add", pm, "--weights", pw, "--metric", "accuracy=0.9", code=2)
        assert "--task" in r.stderr, r.stderr
        r = run(state, "add", pm, "--weights", pw, "--metric", "accuracy", "--task", "t", code=2)
        assert "NAME=" in r.stderr, r.stderr
        r = run(state, "add", pm, "--weights", os.path.join(d, "nope.lw"), "--metric", "acc=1",
                "--task", "t", code=4)
        assert "nope.lw" in r.stderr, r.stderr
        with open(os.path.join(d, "bad.lw"), "wb") as f:
            f.write(b"LOOMWTS1" + b"\xff" * 8)
        r = run(state, "add", pm, "--weights", os.path.join(d, "bad.lw"), "--metric", "acc=1",
                "--task", "t", code=5)
        assert "bad.lw" in r.stderr, r.stderr
        # two entries
        p = int(run(state, "add", pm, "--weights", pw, "--metric", "accuracy=0.91", "--task",
                    "toy", "--name", "parent").stdout)
        o = int(run(state, "add", om, "--weights", ow, "--metric", "accuracy=0.95", "--task",
                    "toy", "--name", "other").stdout)
        entries = json.loads(run(state, "list", "--json").stdout)
        assert [e["id"] for e in entries] == [p, o], entries
        assert "parent" in run(state, "list").stdout
        show = json.loads(run(state, "show", str(p), "--json").stdout)
        assert show["metric"] == {"name": "accuracy", "value": 0.91, "higher_better": True}, show
        m = json.loads(run(state, "match", cm, "--task", "toy", "--json").stdout)
        assert m["candidates"][0]["id"] == p and m["parent"] == p, m
        assert m["candidates"][0]["similarity"] > m["candidates"][1]["similarity"]
        out = os.path.join(d, "start.lw")
        rep = json.loads(run(state, "warm", cm, "--task", "toy", "--out", out, "--noise", "0",
                             "--json").stdout)
        assert rep["parent"] == p and rep["layers_mapped"] == 2, rep
        tensors, meta = ws.load(out)
        assert meta["parent"] == p
        w1 = tensors["w1"]
        assert w1.shape == (8, 24)
        assert np.array_equal(w1[:, :16], pweights["w1"]) and np.array_equal(w1[:, 16:],
                                                                             pweights["w1"][:, :8])
        w2 = tensors["w2"]  # input side: copies halved
        assert np.allclose(w2[:8], pweights["w2"][:8] / 2) and np.allclose(w2[8:16],
                                                                           pweights["w2"][8:16])
        run(state, "warm", cm, "--task", "speech", "--out", out, code=4)
        # the data a parent trained on (issue 33): a child of other data starts cold
        sd = os.path.join(d, "state-data")
        q = int(run(sd, "add", pm, "--weights", pw, "--metric", "accuracy=0.9", "--task",
                    "toy", "--data", "digits[0-4]").stdout)
        assert json.loads(run(sd, "show", str(q), "--json").stdout)["data"] == "digits[0-4]"
        m = json.loads(run(sd, "match", cm, "--data", "digits[0-4]", "--json").stdout)
        assert m["parent"] == q and m["other_data"] == 0, m
        m = json.loads(run(sd, "match", cm, "--data", "digits[0-9]", "--json").stdout)
        assert m["parent"] is None and m["other_data"] == 1, m
        r = run(sd, "warm", cm, "--data", "digits[0-9]", "--out", os.path.join(d, "s2.lw"),
                code=4)
        assert "start cold" in r.stderr, r.stderr
        run(state, "rm", str(p))
        run(state, "show", str(p), code=4)
        run(state, "rm", "x", code=2)
    print("ok")


if __name__ == "__main__":
    main()
