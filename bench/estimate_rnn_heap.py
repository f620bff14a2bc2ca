#!/usr/bin/python3
"""Host heap an RNN layer's training forward keeps per time step (issue #24;
the source of src/estimate/cost.c's RNN_STEP_GRAPH_BYTES and of its RNN
activation multiplier).

    LD_PRELOAD=build/libloom_alloctrack.so \\
    GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=0x7fffffffffffffff \\
    OMP_NUM_THREADS=1 /usr/bin/python3 bench/estimate_rnn_heap.py

For nn.LSTM and nn.GRU at several sizes: live heap bytes after a training
forward (parameters requiring gradients, the input not) at 50 and at 100
time steps; the slope per step and layer is printed, and split into a part
per [batch, hidden] fp32 tensor (from two batch sizes) and a fixed part per
step, the autograd graph's nodes, saved-variable records and tensor headers.
"""
import argparse
import ctypes

import torch
import torch.nn as nn

SHAPES = ((1, 1, 1, 1), (32, 48, 1, 1), (32, 48, 1, 4), (32, 48, 3, 4), (16, 40, 1, 4),
          (96, 160, 1, 4))  # input, hidden, layers, batch


def live_after_forward(lib, kind, inp, hidden, layers, steps, batch):
    m = getattr(nn, kind)(inp, hidden, layers, batch_first=True)
    x = torch.randn(batch, steps, inp)
    for _ in range(2):  # warm: the gradients and PyTorch's caches exist before
        m(x)[0].sum().backward()
    base = lib.loom_alloctrack_live()
    y = m(x)[0]
    live = lib.loom_alloctrack_live() - base
    del y
    return live


def main():
    argparse.ArgumentParser(description=__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args()
    lib = ctypes.CDLL(None)
    if not hasattr(lib, "loom_alloctrack_live"):
        raise SystemExit("estimate_rnn_heap.py: run with LD_PRELOAD=build/libloom_alloctrack.so")
    lib.loom_alloctrack_live.restype = ctypes.c_int64
    torch.set_num_threads(1)
    print("| layer | input | hidden | layers | batch | bytes per step and layer | per [B,H] | fixed |")
    print("|---|---|---|---|---|---|---|---|")
    for kind in ("LSTM", "GRU"):
        per = {}
        for inp, hid, layers, batch in SHAPES:
            a = live_after_forward(lib, kind, inp, hid, layers, 50, batch)
            b = live_after_forward(lib, kind, inp, hid, layers, 100, batch)
            per[(inp, hid, layers, batch)] = (b - a) / 50 / layers
        # the [B,H] multiple from batch 1 and 4 at the same size
        k = (per[(32, 48, 1, 4)] - per[(32, 48, 1, 1)]) / (3 * 48 * 4)
        for (inp, hid, layers, batch), v in per.items():
            print(f"| {kind} | {inp} | {hid} | {layers} | {batch} | {v:.0f} | {k:.2f} | "
                  f"{v - k * batch * hid * 4:.0f} |")


if __name__ == "__main__":
    main()
