"""Warm starts from loom's model repository (docs/zoo.md).

A weights file ("LOOMWTS1") holds named float32 tensors: 8 bytes of magic,
the header's length as a little-endian u64, a JSON header
{"tensors": [{"name", "dtype": "float32", "shape", "offset"}], "meta": {}},
then the data (float32 little-endian, C order; offsets count from the end
of the header). Names are the ONNX initializer names, which are the names
PyTorch's exporter gives a module's parameters and buffers (export with
do_constant_folding=False so none is folded away), i.e. state_dict keys.

    import loom.warmstart as ws
    ws.save(model, "trained.lw", meta={"accuracy": 0.97})   # for loom zoo add
    report = ws.apply(model, os.environ["LOOM_WARM_START"])  # before training

Only numpy is needed to read or write the files; apply() needs PyTorch.
"""
import json
import os
import struct
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

if TYPE_CHECKING:
    import numpy.typing as npt

MAGIC = b"LOOMWTS1"
MAX_HEADER = 16 << 20


def load(path: str) -> Tuple[Dict[str, "npt.NDArray[np.float32]"], Dict[str, Any]]:
    """Returns (tensors, meta): an ordered dict name -> numpy float32 array."""
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 16 or raw[:8] != MAGIC:
        raise ValueError(f"{path}: byte 0: expected a weights file ({MAGIC!r})")
    (hlen,) = struct.unpack_from("<Q", raw, 8)
    if hlen > MAX_HEADER or 16 + hlen > len(raw):
        raise ValueError(f"{path}: byte 8: header of {hlen} bytes; the file has {len(raw) - 16}")
    header = json.loads(raw[16:16 + hlen].decode("utf-8"))
    base = 16 + hlen
    tensors: Dict[str, "npt.NDArray[np.float32]"] = {}
    for i, t in enumerate(header.get("tensors", [])):
        if t.get("dtype") != "float32":
            raise ValueError(f"{path}: /tensors/{i}/dtype: expected float32")
        shape = tuple(int(d) for d in t["shape"])
        count = int(np.prod(shape)) if shape else 1
        off = base + int(t["offset"])
        if off < base or off + 4 * count > len(raw):
            raise ValueError(f"{path}: /tensors/{i}/offset: past the end of the file")
        arr = np.frombuffer(raw, dtype="<f4", count=count, offset=off).reshape(shape)
        tensors[t["name"]] = arr.copy()
    meta: Dict[str, Any] = header.get("meta", {})
    return tensors, meta


def save(tensors: Any, path: str, meta: Optional[Mapping[str, Any]] = None) -> None:
    """Writes a weights file from a dict name -> array, or from a torch
    module (its state_dict: parameters and floating-point buffers)."""
    if hasattr(tensors, "state_dict"):
        tensors = {k: v.detach().cpu().numpy() for k, v in tensors.state_dict().items()
                   if v.is_floating_point()}
    entries: List[Dict[str, Any]] = []
    blobs: List[bytes] = []
    off = 0
    for name, arr in tensors.items():
        a = np.ascontiguousarray(np.asarray(arr, dtype="<f4"))
        entries.append({"name": name, "dtype": "float32", "shape": list(a.shape), "offset": off})
        blobs.append(a.tobytes())
        off += a.nbytes
    header = json.dumps({"tensors": entries, "meta": meta or {}}).encode("utf-8")
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "wb") as f:
        f.write(MAGIC + struct.pack("<Q", len(header)) + header)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def apply(module: Any, path: str) -> Dict[str, Any]:
    """Copies the file's tensors into the module's parameters and buffers of
    the same name and shape; everything else keeps its initialisation.
    Returns {"applied": [...], "missing": [...], "mismatched": [...],
    "unused": [...], "meta": {...}}."""
    import torch

    tensors, meta = load(path)
    state = module.state_dict()
    applied: List[str] = []
    mismatched: List[str] = []
    with torch.no_grad():
        for name, value in state.items():
            if name not in tensors:
                continue
            src = tensors[name]
            if tuple(src.shape) != tuple(value.shape):
                mismatched.append(name)
                continue
            value.copy_(torch.from_numpy(src).to(value.dtype))
            applied.append(name)
    missing = [n for n, v in state.items() if n not in tensors and v.is_floating_point()]
    unused = [n for n in tensors if n not in state]
    return {"applied": applied, "missing": missing, "mismatched": mismatched,
            "unused": unused, "meta": meta}
