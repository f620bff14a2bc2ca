"""The job side of loom.Executor: `python3 -m loom._run TASK` unpickles
TASK.pkl (written by Executor.submit), calls the function and pickles
("ok", value) or ("error", exception, traceback text) to TASK.out (atomically:
a temporary file, then a rename). Exit status 0 if the function returned, 1
if it raised, 2 if the task could not be read."""

import importlib.util
import os
import pickle
import sys
import traceback
from typing import Any, List, Tuple


def _load_main(path: str) -> None:
    """Makes the submitter's main script importable as __main__ (as
    multiprocessing's spawn does): run as __mp_main__, so its
    `if __name__ == "__main__":` block stays off."""
    spec = importlib.util.spec_from_file_location("__mp_main__", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{path}: cannot be loaded as a module")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["__mp_main__"] = mod
    sys.modules["__main__"] = mod
    spec.loader.exec_module(mod)


def _write(task: str, outcome: Tuple[Any, ...]) -> None:
    try:
        data = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:  # the value or exception itself does not pickle
        kind = "result" if outcome[0] == "ok" else "exception"
        detail = outcome[2] if outcome[0] == "error" else ""
        data = pickle.dumps(("error", RuntimeError(f"the function's {kind} cannot be pickled: "
                                                   f"{e!r}"), detail))
    tmp = task + ".out.tmp"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, task + ".out")


def main(argv: List[str]) -> int:
    if len(argv) != 2:
        print("usage: python3 -m loom._run TASK", file=sys.stderr)
        return 2
    task = argv[1]
    try:
        with open(task + ".pkl", "rb") as f:
            meta, payload = pickle.load(f)
        for p in reversed(meta["sys_path"]):
            if p not in sys.path:
                sys.path.insert(0, p)
        if meta.get("cwd") and os.path.isdir(meta["cwd"]):
            os.chdir(meta["cwd"])
        if meta.get("main_file") and os.path.exists(meta["main_file"]):
            _load_main(meta["main_file"])
        fn, args, kwargs = pickle.loads(payload)
    except Exception:
        traceback.print_exc()
        print(f"loom._run: cannot load the task {task}.pkl", file=sys.stderr)
        return 2
    try:
        value = fn(*args, **kwargs)
    except BaseException as e:  # noqa: B036 - the caller gets whatever fn raised
        tb = traceback.format_exc()
        sys.stderr.write(tb)
        _write(task, ("error", e, tb))
        return 1
    _write(task, ("ok", value))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
