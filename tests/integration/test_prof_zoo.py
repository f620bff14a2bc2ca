"""The model zoo (workloads/models) and its catalog (workloads/catalogs/zoo.json):
every model builds and runs a training and an inference step on the CPU with
tiny inputs; run.py's markers are what `loom prof` expects (checked through
`loom prof` itself, over LOOM_PROF_FD and over stdout); every catalog job
names a zoo model and arguments run.py accepts.

Needs Debian's python3-torch and python3-torchvision; without them it says
so and checks only the catalog."""

import json
import os
import re
import subprocess
import sys
import tempfile

SRC = os.environ.get("LOOM_SOURCE_DIR", ".")
BUILD = os.environ.get("LOOM_BUILD_DIR", "build")
MODELS = os.path.join(SRC, "workloads", "models")
sys.path.insert(0, MODELS)
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def catalog_checks(names, parse):
    cat = json.load(open(os.path.join(SRC, "workloads", "catalogs", "zoo.json")))
    check(cat["version"] == 1 and len(cat["jobs"]) == 3 * len(names), "one job per model x 3")
    seen = set()
    for job in cat["jobs"]:
        args = job["arguments"]
        check(args[0] == "workloads/models/run.py", f"{job['name']}: runs run.py")
        model = args[args.index("--model") + 1]
        seen.add(model)
        check(model in names, f"{job['name']}: model {model} is in the zoo")
        used = set(re.findall(r"\$\{(\w+)\}", " ".join(args + list(job["environment"].values()))))
        check(used == set(job["parameters"]), f"{job['name']}: parameters match their uses")
        if job["name"] == "mobilenet-v2-train":
            check(job["parameters"]["precision"]["values"] == ["fp32"],
                  "mobilenet-v2-train on the CPU is fp32 only")
        # Substitute each parameter's first or minimum value; run.py must accept the result.
        vals = {k: str(p["values"][0] if p["type"] == "choice" else p["min"])
                for k, p in job["parameters"].items()}
        concrete = [re.sub(r"\$\{(\w+)\}", lambda m: vals[m.group(1)], a) for a in args[1:]]
        if parse:
            try:
                parse(concrete)
            except SystemExit:
                check(False, f"{job['name']}: run.py rejects {concrete}")
    check(seen == set(names), "every zoo model has catalog jobs")
    # The catalog loader (part catalog), where this build has it.
    loom = os.path.join(BUILD, "loom")
    if "catalog" in subprocess.run([loom, "--help"], capture_output=True, text=True).stdout:
        path = os.path.join(SRC, "workloads", "catalogs", "zoo.json")
        p = subprocess.run([loom, "catalog", "check", path], capture_output=True, text=True)
        check(p.returncode == 0 and "ok, 27 jobs" in p.stdout,
              f"loom catalog check accepts zoo.json: {p.stdout}{p.stderr}")
    else:
        print("this build has no 'loom catalog': catalog loader check skipped")


def main():
    try:
        import torch  # noqa: F401
        import zoo
        import run
    except ImportError as e:
        print(f"python3-torch/torchvision not importable ({e}): checking the catalog only")
        names = ("resnet18", "resnet50", "vgg16", "mobilenet_v2", "vit", "bert", "gpt2", "lstm",
                 "dlrm")
        catalog_checks(names, None)
        return report()
    torch.set_num_threads(1)
    catalog_checks(zoo.NAMES, run.parse)
    for name in zoo.NAMES:
        kw = {} if name == "dlrm" else ({"seq": 16} if name in ("bert", "gpt2", "lstm")
                                        else {"image": 32})
        zm = zoo.build(name, **kw)
        inputs, target = zm.make_batch(2, "cpu")
        loss = zm.loss_fn(zm.module(*inputs), target)
        loss.backward()
        grads = sum(p.grad is not None for p in zm.module.parameters())
        check(torch.isfinite(loss).item() and grads > 0, f"{name}: a finite loss and gradients")
        zm.module.eval()
        with torch.inference_mode():
            out = zm.module(*inputs)
        check(out.shape[0] == 2, f"{name}: inference keeps the batch dimension")
    # bf16 (autocast) training on the CPU: every model but those this torch
    # lacks kernels for, which run.py must refuse clearly (exit 3).
    for name in zoo.NAMES:
        kw = {} if name == "dlrm" else ({"seq": 16} if name in ("bert", "gpt2", "lstm")
                                        else {"image": 32})
        zm = zoo.build(name, **kw)
        inputs, target = zm.make_batch(2, "cpu")
        try:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = zm.loss_fn(zm.module(*inputs), target)
            loss.backward()
        except RuntimeError as e:
            p = subprocess.run(["/usr/bin/python3", os.path.join(MODELS, "run.py"), "--model",
                                name, "--precision", "bf16", "--steps", "1", "--batch", "2"],
                               capture_output=True, text=True, timeout=300)
            print(f"{name}: bf16 training unsupported by this torch: {e}")
            check(p.returncode == 3 and "is not supported by this torch" in p.stderr,
                  f"{name}: run.py refuses bf16 training clearly ({p.returncode})")
            check(name == "mobilenet_v2", f"{name}: bf16 training fails: {e}")
    try:
        zoo.build("nope")
        check(False, "an unknown model is refused")
    except ValueError as e:
        check("unknown model 'nope'" in str(e), "the refusal names the model")

    # run.py under loom prof: markers over LOOM_PROF_FD, then over stdout.
    loom = os.path.join(BUILD, "loom")
    with tempfile.TemporaryDirectory(prefix="loom-test-zoo-") as tmp:
        cmd = ["/usr/bin/python3", os.path.join(MODELS, "run.py"), "--model", "dlrm", "--steps",
               "5", "--batch", "4", "--threads", "1"]
        p = subprocess.run([loom, "prof", "--out", tmp + "/a", "--", *cmd], capture_output=True,
                           text=True, timeout=300)
        check(p.returncode == 0, f"loom prof run.py exits 0 ({p.stderr[-400:]})")
        check("LOOM_STEP" not in p.stdout, "with LOOM_PROF_FD, stdout carries no markers")
        r = json.load(open(tmp + "/a/run.json"))
        check(len(r["steps"]) == 5 and r["markers"]["malformed"] == 0, "5 clean steps over the fd")
        check(r["meta"].get("model") == "dlrm" and r["meta"].get("batch") == "4", "meta recorded")
        check(all(s["items"] == 4 and s["data_ns"] >= 0 for s in r["steps"]), "items, data_ns")
        # Run by hand (no LOOM_PROF_FD): markers on stdout, which loom prof also reads.
        env = dict(os.environ, LOOM_PROF_FD="not-a-number")
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        check(p.returncode == 0 and p.stdout.count("LOOM_STEP ") == 5 and
              "is not an open descriptor" in p.stderr, "a bad LOOM_PROF_FD falls back to stdout")
        # Without LOOM_PROF_FD the markers go to stdout, where loom prof reads them too.
        p = subprocess.run([loom, "prof", "--out", tmp + "/b", "--", "env", "-u", "LOOM_PROF_FD",
                            *cmd], capture_output=True, text=True, timeout=300)
        r = json.load(open(tmp + "/b/run.json"))
        check(p.returncode == 0 and p.stdout.count("LOOM_STEP ") == 5 and len(r["steps"]) == 5,
              "markers over stdout are read and passed on")
    return report()


def report():
    if failures:
        print(f"{len(failures)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
