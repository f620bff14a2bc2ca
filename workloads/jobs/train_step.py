#!/usr/bin/env python3
"""A short synthetic "training" job for the demo catalog.

It needs nothing but the Python standard library: it runs a few steps of
stochastic gradient descent on a small least-squares problem and prints the
loss, so a job has real work, a real exit status and output to look at.
"""
import argparse
import random
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--dim", type=int, default=32)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep per step")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    w_true = [rng.gauss(0, 1) for _ in range(a.dim)]
    w = [0.0] * a.dim
    for step in range(a.steps):
        grad = [0.0] * a.dim
        loss = 0.0
        for _ in range(a.batch):
            x = [rng.gauss(0, 1) for _ in range(a.dim)]
            err = sum(wi * xi for wi, xi in zip(w, x)) - sum(ti * xi for ti, xi in zip(w_true, x))
            loss += err * err / a.batch
            for k in range(a.dim):
                grad[k] += 2 * err * x[k] / a.batch
        w = [wi - a.lr * g for wi, g in zip(w, grad)]
        if step % 10 == 0 or step == a.steps - 1:
            print(f"step {step} loss {loss:.6f}", flush=True)
        if a.sleep:
            time.sleep(a.sleep)
    return 0


if __name__ == "__main__":
    sys.exit(main())
