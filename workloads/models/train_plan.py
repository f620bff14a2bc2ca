#!/usr/bin/python3
"""Trains one zoo model under an execution plan on CPU processes and
reports its step time (docs/scheduling.md, "Rubick").

    train_plan.py --model resnet18 --global-batch 16 --workers 2 \
                  --accumulation 2 [--recompute] --steps 6 --warmup 2

The plan: data parallel over --workers processes (torch.distributed, gloo,
one thread each, gradients all-reduced by DistributedDataParallel once per
step), --accumulation micro-batches per step (the global batch stays
fixed: each worker's micro-batch is global / (workers x accumulation)),
and --recompute (activations recomputed in the backward pass,
torch.utils.checkpoint over the whole forward). A plan may also come as
LOOM_PLAN, a JSON object {"workers", "accumulation", "recompute"}
(options win), or several as --sweep '[{...}, ...]' (one import of torch
for all). One JSON line per plan on stdout: the model, its parameter
count, the plan and the mean step time over --steps after --warmup (the
slowest worker's). Workers are forked. Exit status 0, 2 for a bad option
or plan.

Checkpoint and restart (how a scheduler reconfigures the job): with
--checkpoint PATH the job resumes from PATH if it exists (model, optimizer
and step; the plan may differ: the global batch is the same) and trains
until --total-steps. When the file --stop-file appears, or the launcher
gets SIGTERM or SIGUSR1 (it then creates the stop file), every worker
stops after the current step and rank 0 writes PATH (atomically), and the
JSON line says "checkpointed": true. Either way the line gives the steps
run and the samples per second over them.
"""

import argparse
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# A stop request may come while torch is still importing (seconds on a busy
# machine): keep it until main() knows where the stop file is.
_EARLY_STOP = []
for _sig in (signal.SIGTERM, signal.SIGUSR1):
    signal.signal(_sig, lambda signum, frame: _EARLY_STOP.append(signum))

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402
from torch.utils.checkpoint import checkpoint  # noqa: E402

import zoo  # noqa: E402


def parse(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, choices=zoo.NAMES)
    p.add_argument("--global-batch", type=int, default=16)
    p.add_argument("--workers", type=int)
    p.add_argument("--accumulation", type=int)
    p.add_argument("--recompute", action="store_true", default=None)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--checkpoint", default="", help="resume from and checkpoint to this file")
    p.add_argument("--stop-file", default="",
                   help="checkpoint and stop when this file appears (default: PATH.stop)")
    p.add_argument("--total-steps", type=int, default=0,
                   help="with --checkpoint: train until this step (counting resumed ones)")
    p.add_argument("--sweep", default="",
                   help="a JSON array of plans {workers, accumulation, recompute} to run in turn")
    p.add_argument("--input-size", type=int, default=0,
                   help="image side (vision) or sequence length (text); 0 = the model's default")
    a = p.parse_args(argv)
    plan = {}
    if os.environ.get("LOOM_PLAN"):
        try:
            plan = json.loads(os.environ["LOOM_PLAN"])
            if not isinstance(plan, dict):
                raise ValueError("not an object")
        except ValueError as e:
            p.error(f"LOOM_PLAN: {e}; expected a JSON object such as "
                    '{"workers": 2, "accumulation": 1, "recompute": false}')
    a.workers = a.workers or int(plan.get("workers", 1))
    a.accumulation = a.accumulation or int(plan.get("accumulation", 1))
    if a.recompute is None:
        a.recompute = bool(plan.get("recompute", False))
    if not 1 <= a.workers <= 64 or not 1 <= a.accumulation <= 64:
        p.error("--workers and --accumulation: expected 1..64")
    if a.global_batch % (a.workers * a.accumulation):
        p.error(f"--global-batch {a.global_batch}: expected a multiple of workers x accumulation "
                f"= {a.workers * a.accumulation}")
    if a.steps < 1 or a.warmup < 0:
        p.error("--steps: expected >= 1, --warmup >= 0")
    if a.checkpoint and a.total_steps < 1:
        p.error("--checkpoint needs --total-steps >= 1")
    if a.checkpoint and not a.stop_file:
        a.stop_file = a.checkpoint + ".stop"
    return a


def build(a):
    kw = {}
    if a.input_size:
        if a.model in ("bert", "gpt2", "lstm"):
            kw["seq"] = a.input_size
        elif a.model != "dlrm":
            kw["image"] = a.input_size
    return zoo.build(a.model, **kw)


def resume(a, zm, opt):
    """The step to start from: 0, or the checkpoint's (its state loaded)."""
    if not a.checkpoint or not os.path.exists(a.checkpoint):
        return 0
    ck = torch.load(a.checkpoint)
    if ck["model"] != a.model or ck["global_batch"] != a.global_batch:
        raise SystemExit(f"{a.checkpoint}: a checkpoint of {ck['model']} with global batch "
                         f"{ck['global_batch']}, expected {a.model} with {a.global_batch}")
    zm.module.load_state_dict(ck["state"])
    opt.load_state_dict(ck["optimizer"])
    return ck["step"]


def save(a, zm, opt, step):
    tmp = a.checkpoint + ".tmp"
    torch.save({"model": a.model, "global_batch": a.global_batch, "step": step,
                "state": zm.module.state_dict(), "optimizer": opt.state_dict()}, tmp)
    os.replace(tmp, a.checkpoint)


def train(rank, a, zm, model, opt, first, out):
    """Checkpointed training from step first to --total-steps."""
    micro = a.global_batch // (a.workers * a.accumulation)
    step, stop, t0 = first, False, time.perf_counter()
    while step < a.total_steps and not stop:
        torch.manual_seed(step * 1000 + rank)
        opt.zero_grad(set_to_none=True)
        for k in range(a.accumulation):
            inputs, target = zm.make_batch(micro, "cpu")
            sync = a.workers > 1 and k < a.accumulation - 1
            with model.no_sync() if sync else _null():
                (zm.loss_fn(model(*inputs), target) / a.accumulation).backward()
        opt.step()
        step += 1
        flag = torch.tensor([1.0 if os.path.exists(a.stop_file) else 0.0])
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        stop = flag.item() > 0
    dt = time.perf_counter() - t0
    if rank == 0:
        save(a, zm, opt, step)
        out.put({"model": a.model, "global_batch": a.global_batch, "workers": a.workers,
                 "accumulation": a.accumulation, "recompute": a.recompute,
                 "first_step": first, "step": step, "checkpointed": step < a.total_steps,
                 "samples_per_s": (step - first) * a.global_batch / dt if dt > 0 else 0})


def worker(rank, a, rdzv, out):
    torch.set_num_threads(1)
    torch.manual_seed(rank)
    # Rendezvous through a file: a free TCP port picked beforehand may be taken
    # by another process before rank 0 binds it (a busy machine, many daemons
    # listening on port 0), and a rank that reaches the wrong server waits.
    dist.init_process_group("gloo", init_method=f"file://{rdzv}", rank=rank,
                            world_size=a.workers, timeout=datetime.timedelta(seconds=120))
    zm = build(a)
    inner = _Recompute(zm.module) if a.recompute else zm.module
    model = DDP(inner) if a.workers > 1 else inner
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    if a.checkpoint:
        first = resume(a, zm, opt)
        train(rank, a, zm, model, opt, first, out)
        _leave(out)
    micro = a.global_batch // (a.workers * a.accumulation)
    times = []
    for step in range(a.warmup + a.steps):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        for k in range(a.accumulation):
            inputs, target = zm.make_batch(micro, "cpu")
            sync = a.workers > 1 and k < a.accumulation - 1
            ctx = model.no_sync() if sync else _null()
            with ctx:
                outp = model(*inputs)
                loss = zm.loss_fn(outp, target) / a.accumulation
                loss.backward()
        opt.step()
        dt = torch.tensor([time.perf_counter() - t0])
        dist.all_reduce(dt, op=dist.ReduceOp.MAX)
        if step >= a.warmup:
            times.append(float(dt))
    if rank == 0:
        params = sum(p.numel() for p in zm.module.parameters())
        out.put({"model": a.model, "params": params, "global_batch": a.global_batch,
                 "workers": a.workers, "accumulation": a.accumulation,
                 "recompute": a.recompute, "steps": a.steps,
                 "step_s": sum(times) / len(times), "step_s_min": min(times)})
    _leave(out)


def _leave(out):
    """End a worker without running destructors. torch 1.13's DDP Reducer,
    freed when the worker returns, joins gloo's worker thread while holding
    the GIL, and that thread may be freeing a tensor, which needs the GIL:
    one run in a few hung forever at exit (integration.rubick_restart timed
    out in CI). The result is flushed to the parent first."""
    dist.destroy_process_group()
    out.close()
    out.join_thread()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


class _Recompute(torch.nn.Module):
    """The module's forward under torch.utils.checkpoint: only its inputs are
    kept, the activations are recomputed in the backward pass. Inside DDP,
    so that DDP's gradient hooks see one forward."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, *inputs):
        return checkpoint(self.inner, *inputs, use_reentrant=False)


class _null:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def run(a):
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    d = tempfile.mkdtemp(prefix="train-plan-")
    try:
        mp.start_processes(worker, args=(a, os.path.join(d, "rendezvous"), out),
                           nprocs=a.workers, join=True, start_method="fork")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(json.dumps(out.get(timeout=5)), flush=True)


def main(argv):
    a = parse(argv)
    if a.stop_file:
        if os.path.exists(a.stop_file):  # a request of the previous run
            os.remove(a.stop_file)

        def request_stop(signum, frame):
            open(a.stop_file, "a").close()
        signal.signal(signal.SIGTERM, request_stop)
        signal.signal(signal.SIGUSR1, request_stop)
        if _EARLY_STOP:
            request_stop(_EARLY_STOP[0], None)
    else:
        for sig in (signal.SIGTERM, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        if _EARLY_STOP:
            return 128 + _EARLY_STOP[0]
    if not a.sweep:
        run(a)
        return 0
    try:
        plans = json.loads(a.sweep)
        assert isinstance(plans, list) and all(isinstance(x, dict) for x in plans)
    except (ValueError, AssertionError):
        print("train_plan.py: --sweep: expected a JSON array of objects", file=sys.stderr)
        return 2
    for plan in plans:
        a.workers = int(plan.get("workers", 1))
        a.accumulation = int(plan.get("accumulation", 1))
        a.recompute = bool(plan.get("recompute", False))
        if a.global_batch % (a.workers * a.accumulation):
            print(f"train_plan.py: plan {plan}: the global batch does not split", file=sys.stderr)
            return 2
        run(a)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
