#!/usr/bin/python3
"""Runs one zoo model for a number of training or inference steps on
synthetic data and reports each step to the profiler (loom_step.py).

    run.py --model resnet18 --mode train --batch 8 --precision fp32 \
           --device cpu --steps 20 --threads 2 [--input-size 64]

Each step is: make a synthetic batch (timed as data_ns), copy it to the
device (copy_ns, CUDA only), forward, and for training backward and an SGD
update; cpu_ns is the process's CPU time over the step (all its threads). On CUDA the step ends after torch.cuda.synchronize(), so the
reported time covers the kernels. Exit status 0, 2 for a bad option, 3 if
this torch cannot run the model in that mode, precision and device (said on
stderr; e.g. torch 1.13 has no CPU bf16 backward for MobileNetV2's ReLU6).
"""

import argparse
import os
import sys
import time


def _pin_pools(argv):
    """--threads N caps every thread pool, not only torch's intra-op one:
    OpenBLAS (Debian's torch) and OpenMP size their pools from the
    environment when the library loads, i.e. when torch is imported, and
    OpenBLAS otherwise starts one busy worker per core. An explicit
    OMP_NUM_THREADS / OPENBLAS_NUM_THREADS / MKL_NUM_THREADS wins."""
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--threads", type=int, default=1)
    a, _ = pre.parse_known_args(argv)
    if a.threads and a.threads > 0:
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, str(a.threads))


if __name__ == "__main__":
    try:
        _pin_pools(sys.argv[1:])
    except SystemExit:
        pass  # a malformed --threads: the full parser below says so

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402
from loom_step import StepReporter, now_ns  # noqa: E402


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=zoo.NAMES)
    p.add_argument("--mode", choices=("train", "infer"), default="train")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--precision", choices=("fp32", "bf16"), default="fp32")
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--threads", type=int, default=1,
                   help="intra-op threads (torch.set_num_threads; also the default of "
                        "OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS); 0 = "
                        "torch's default")
    p.add_argument("--input-size", type=int, default=0,
                   help="image side for vision models, sequence length for text models "
                        "(0 = the model's default)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    for name in ("batch", "steps"):
        if getattr(a, name) < 1:
            p.error(f"--{name} must be >= 1, got {getattr(a, name)}")
    if a.threads < 0 or a.input_size < 0:
        p.error("--threads and --input-size must be >= 0")
    return a


def main(argv=None):
    a = parse(argv if argv is not None else sys.argv[1:])
    import torch
    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    if a.device == "cuda" and not torch.cuda.is_available():
        print("run.py: --device cuda but torch.cuda.is_available() is False", file=sys.stderr)
        return 1
    kw = {}
    if a.input_size:
        kw["seq" if a.model in ("bert", "gpt2", "lstm") else "image"] = a.input_size
    if a.model == "dlrm" and a.input_size:
        print("run.py: --input-size does not apply to dlrm", file=sys.stderr)
        return 2
    zm = zoo.build(a.model, **kw)
    model = zm.module.to(a.device)
    model.train(a.mode == "train")
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9) if a.mode == "train" else None
    params = sum(p.numel() for p in model.parameters())
    rep = StepReporter()
    rep.meta(model=a.model, mode=a.mode, batch=a.batch, precision=a.precision, device=a.device,
             threads=torch.get_num_threads(), params=params, family=zm.info["family"],
             input=zm.info["input"], item=zm.info["item"])
    cuda = a.device == "cuda"
    autocast = torch.autocast(device_type=a.device, dtype=torch.bfloat16,
                              enabled=a.precision == "bf16")
    for step in range(a.steps):
        try:
            one_step(a, zm, model, opt, autocast, rep, step, cuda)
        except RuntimeError as e:
            if step > 0:
                raise
            # Some operators lack kernels for some precisions on some devices
            # (torch 1.13 on the CPU: no bf16 backward for ReLU6/hardtanh).
            print(f"run.py: {a.model} {a.mode} in {a.precision} on {a.device} is not supported "
                  f"by this torch {torch.__version__}: {e}", file=sys.stderr)
            return 3
    return 0


def one_step(a, zm, model, opt, autocast, rep, step, cuda):
    """One step: batch (data_ns), copy (copy_ns, CUDA), forward[, backward, update]."""
    import torch
    c0 = time.process_time_ns()
    t0 = now_ns()
    inputs, target = zm.make_batch(a.batch, "cpu")
    t1 = now_ns()
    copy_ns = 0
    if cuda:
        inputs = tuple(x.to(a.device, non_blocking=False) for x in inputs)
        target = target.to(a.device)
        torch.cuda.synchronize()
        copy_ns = now_ns() - t1
    if opt is not None:
        opt.zero_grad(set_to_none=True)
        with autocast:
            loss = zm.loss_fn(model(*inputs), target)
        loss.backward()
        opt.step()
    else:
        with torch.inference_mode(), autocast:
            model(*inputs)
    if cuda:
        torch.cuda.synchronize()
    t2 = now_ns()
    c2 = time.process_time_ns()
    fields = {"items": a.batch, "data_ns": t1 - t0, "cpu_ns": c2 - c0}
    if cuda:
        fields["copy_ns"] = copy_ns
    rep.step(step, t0, t2, **fields)


if __name__ == "__main__":
    sys.exit(main())
