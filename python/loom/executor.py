"""loom.Executor: Python functions as loom jobs, with concurrent.futures'
interface (as submitit does for Slurm).

    import loom

    def train(lr):
        ...
        return accuracy

    if __name__ == "__main__":
        with loom.Executor(gpus=1, time_limit="1h") as ex:
            fut = ex.submit(train, lr=0.1)
            print(fut.result())          # the return value, or train's exception

How: submit() pickles the function and its arguments into a task folder
(default ~/.cache/loom/executor, which the job must be able to read: the
local executor's jobs run on this machine) and submits a batch job that runs
`python3 -m loom._run TASK`. The job unpickles and calls the function and
pickles the result or the exception next to the task. Waiter threads ride
loomd's job.wait long-poll (`any`: answered as soon as one of up to 100 jobs
has ended; no polling of job.get) and complete each future when its job has
ended, with one job.get for it: with the result, the function's exception (its remote traceback
chained as __cause__), or loom.JobTimeout / loom.JobFailed /
loom.JobCancelled when the job ended without one. fut.cancel() cancels the
job (pending or running). Functions are pickled by reference, as
multiprocessing's spawn start method does: a function of the main script is
found by running that script as a module (its `if __name__ == "__main__":`
block does not run), so the script needs that guard."""

import concurrent.futures
import os
import pickle
import shlex
import shutil
import sys
import tempfile
import threading
import traceback
import warnings
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Type, TypeVar

from .client import Client
from .errors import (InvalidParams, InvalidState, JobCancelled, JobFailed, JobNotFound,
                     JobTimeout, LoomError, RpcError)
from .spec import Duration, FileSpec, GpuShare, ResourceSpec, ScheduleSpec, Size
from .types import TERMINAL_STATES, Job

_R = TypeVar("_R")

__all__ = ["Executor", "LoomFuture", "RemoteTraceback"]

_SDK_PARENT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_WAIT_IDS = 100  # job.wait's limit of ids per call (docs/protocol.md)
_MAX_WAITERS = 8  # job.wait calls held at once (each on its own connection)


class RemoteTraceback(Exception):
    """The traceback of an exception raised inside a job (as the __cause__)."""

    def __init__(self, tb: str) -> None:
        super().__init__(tb)
        self.tb = tb

    def __str__(self) -> str:
        return self.tb


class LoomFuture(concurrent.futures.Future[Any]):
    """A concurrent.futures.Future for one loom job (job_id). cancel()
    cancels the job on loomd while it is pending or running."""

    def __init__(self, executor: "Executor", job_id: int, task: str) -> None:
        super().__init__()
        self.job_id = job_id
        self._executor = executor
        self._task = task

    def cancel(self) -> bool:
        if self.done():
            return False
        try:
            self._executor._client.cancel(self.job_id, reason="cancelled from loom.Executor")
        except (InvalidState, JobNotFound):
            return False  # it ended meanwhile: the watcher resolves it
        if not super().cancel():
            return False
        self._executor._forget(self)
        return True


def _tail(path: Optional[str], n: int = 2000) -> str:
    if path is None:
        return ""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - n))
            return f.read().decode(errors="replace").strip()
    except (OSError, TypeError):
        return ""


class Executor(concurrent.futures.Executor):
    """Runs picklable functions as loom jobs. Resources as Client.submit's
    (gpus, cpus, memory, gpu_share, gpu_memory, gpu_type, time_limit,
    priority, labels); url/token/client pick loomd; folder holds the pickled
    tasks and results (removed as futures complete); python is the
    interpreter the job runs (default: this one); hold: the seconds loomd may
    hold one job.wait call (1 to 30). time_limit is in seconds (int or a
    timedelta), as in Client.submit, not sbatch's minutes; time= is its
    deprecated name (it shadows Python's time).

    workdir: the jobs' working directory (default: the current one, which
    Client.submit sends); output/error: their output files, sbatch's
    patterns (%j the job id; default: FOLDER/job-%j.out, where the job's
    owner may write whatever user loomd runs as; docs/python.md).

    Futures are watched in batches of up to 100 jobs, each by a waiter
    thread holding one job.wait call (`any`) at a time; a batch takes in
    futures submitted meanwhile whenever its call returns, and a new batch
    (at most 8 at once) starts for futures submitted while every batch is
    held, so a short job submitted behind long ones is not kept waiting."""

    def __init__(self, gpus: Optional[int] = None, time: Optional[Duration] = None,
                 cpus: Optional[int] = None, memory: Optional[Size] = None,
                 gpu_share: Optional[GpuShare] = None, gpu_memory: Optional[Size] = None,
                 gpu_type: Optional[str] = None, priority: Optional[int] = None,
                 labels: Optional[Mapping[str, str]] = None, name: Optional[str] = None,
                 url: Optional[str] = None, token: Optional[str] = None,
                 client: Optional[Client] = None, folder: Optional[str] = None,
                 python: Optional[str] = None, hold: int = 20, workdir: Optional[str] = None,
                 output: Optional[str] = None, error: Optional[str] = None, *,
                 time_limit: Optional[Duration] = None) -> None:
        if time is not None:
            if time_limit is not None:
                raise TypeError("Executor: time_limit= and its deprecated name time= both given")
            warnings.warn("Executor: time= is deprecated (it shadows Python's time): use "
                          "time_limit=", DeprecationWarning, stacklevel=2)
            time_limit = time
        self._client = client or Client(url, token)
        self._resources = ResourceSpec(gpus=gpus, time_limit=time_limit, cpus=cpus,
                                       memory=memory, gpu_share=gpu_share,
                                       gpu_memory=gpu_memory, gpu_type=gpu_type)
        self._scheduling = ScheduleSpec(priority=priority)
        self._labels = dict(labels or {})
        self._name = name
        root = folder or os.path.join(os.path.expanduser("~"), ".cache", "loom", "executor")
        os.makedirs(root, mode=0o700, exist_ok=True)
        self._folder = tempfile.mkdtemp(prefix="ex-", dir=root)
        self._io = FileSpec(workdir=workdir or os.getcwd(),
                            output=output or os.path.join(self._folder, "job-%j.out"),
                            error=error)
        self._python = python or sys.executable or "/usr/bin/python3"
        if not 1 <= int(hold) <= 30:
            raise ValueError("hold: expected 1 to 30 seconds (job.wait's timeout)")
        self._hold = int(hold)
        self._wait_ids = _WAIT_IDS
        self._any = True  # False: a loomd whose job.wait lacks `any`
        self._pending: Dict[int, LoomFuture] = {}  # job id -> LoomFuture
        self._queue: List[LoomFuture] = []  # futures no waiter watches yet
        self._waiters = 0
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._shutdown = False
        self._watcher: Optional[threading.Thread] = None
        self._seq = 0

    # ------------------------------------------------------------- submit
    def _task(self, fn: Callable[..., Any], args: Tuple[Any, ...],
              kwargs: Dict[str, Any]) -> str:
        main = sys.modules.get("__main__")
        main_file = getattr(main, "__file__", None)
        meta = {"sys_path": [p for p in sys.path if p and os.path.isdir(p)],
                "main_file": os.path.abspath(main_file) if main_file else None,
                "cwd": os.getcwd()}
        payload = pickle.dumps((fn, args, kwargs), protocol=pickle.HIGHEST_PROTOCOL)
        with self._lock:
            self._seq += 1
            task = os.path.join(self._folder, f"task-{self._seq}")
        with open(task + ".pkl", "wb") as f:
            pickle.dump((meta, payload), f, protocol=pickle.HIGHEST_PROTOCOL)
        return task

    def _script(self, task: str) -> str:
        q = shlex.quote
        return (f"#!/bin/sh\n"
                f"# loom.Executor task {os.path.basename(task)}\n"
                f"PYTHONPATH={q(_SDK_PARENT)}${{PYTHONPATH:+:$PYTHONPATH}}\n"
                f"export PYTHONPATH\n"
                f"exec {q(self._python)} -m loom._run {q(task)}\n")

    def submit(self, fn: Callable[..., _R], /, *args: Any, **kwargs: Any) -> LoomFuture:
        """Submits fn(*args, **kwargs) as a job; returns a LoomFuture.
        Raises at once if fn or its arguments cannot be pickled."""
        if self._shutdown:
            raise RuntimeError("cannot submit after shutdown")
        task = self._task(fn, args, kwargs)
        name = self._name or getattr(fn, "__qualname__", None) or "python"
        labels = dict(self._labels)
        labels.setdefault("loom.executor", "python")
        try:
            r = self._client.submit(self._script(task), name=name[:256], labels=labels,
                                    resources=self._resources, files=self._io,
                                    scheduling=self._scheduling)
        except BaseException:
            _remove(task)
            raise
        fut = LoomFuture(self, r.id, task)
        with self._lock:
            self._pending[r.id] = fut
            self._queue.append(fut)
            if self._watcher is None:
                self._watcher = threading.Thread(target=self._watch, name="loom-executor",
                                                 daemon=True)
                self._watcher.start()
            self._wake.notify()
        return fut

    # ------------------------------------------------------------ results
    def _forget(self, fut: LoomFuture) -> None:
        with self._lock:
            self._pending.pop(fut.job_id, None)
            self._wake.notify_all()
        _remove(fut._task)

    def _resolve(self, fut: LoomFuture, job: Job) -> None:
        """Completes fut from its ended job."""
        result: Optional[Tuple[Any, ...]] = None
        # The job ran our main script as __mp_main__: what it defined there
        # (an exception class) is pickled under that name.
        if "__main__" in sys.modules:
            sys.modules.setdefault("__mp_main__", sys.modules["__main__"])
        try:
            with open(fut._task + ".out", "rb") as f:
                result = pickle.load(f)
        except FileNotFoundError:
            pass
        except Exception as e:  # a result this process cannot unpickle
            result = ("error", LoomError(f"job {job.id}: cannot read its result: {e}"), "")
        try:
            if result and result[0] == "ok":
                fut.set_result(result[1])
            elif result:
                exc = result[1]
                if result[2]:
                    exc.__cause__ = RemoteTraceback(result[2])
                fut.set_exception(exc)
            else:
                detail = _tail(job.run.stderr) if job.run else ""
                cls: Type[JobFailed] = {"TIMEOUT": JobTimeout,
                                        "CANCELLED": JobCancelled}.get(job.state, JobFailed)
                fut.set_exception(cls(job, detail))
        except concurrent.futures.InvalidStateError:
            pass  # cancelled meanwhile
        self._forget(fut)

    def _watch(self) -> None:
        """Starts a waiter for the futures no waiter watches, up to
        _MAX_WAITERS at once; returns once shut down with nothing pending."""
        while True:
            with self._lock:
                while not (self._queue and self._waiters < _MAX_WAITERS):
                    if self._shutdown and not self._pending:
                        return
                    self._wake.wait()
                batch = self._queue[:self._wait_ids]
                del self._queue[:self._wait_ids]
                self._waiters += 1
            threading.Thread(target=self._waiter, args=(batch,), name="loom-executor-wait",
                             daemon=True).start()

    def _waiter(self, futs: List[LoomFuture]) -> None:
        """Holds job.wait calls for futs until each is done, taking in queued
        futures (up to _wait_ids) whenever a call returns."""
        try:
            while True:
                with self._lock:
                    futs = [f for f in futs if not f.done()]
                    room = self._wait_ids - len(futs)
                    if room > 0 and self._queue:
                        futs += self._queue[:room]
                        del self._queue[:room]
                if not futs:
                    return
                for e in self._wait(futs):
                    if e["state"] in TERMINAL_STATES:
                        self._ended(e["id"], futs)
        finally:
            with self._lock:
                self._waiters -= 1
                self._wake.notify_all()

    def _wait(self, futs: List[LoomFuture]) -> List[Dict[str, Any]]:
        """One job.wait call for futs: the entries of its result ([] when
        loomd could not be asked: it is asked again after a second)."""
        ids = [f.job_id for f in futs]
        params: Dict[str, Any] = {"ids": ids, "timeout": self._hold}
        if self._any:
            params["any"] = True
        else:  # an older loomd: answers only when all have ended, so ask every second
            params["timeout"] = 1
        try:
            jobs: List[Dict[str, Any]] = self._client.call("job.wait", params,
                                                           wait=params["timeout"])["jobs"]
            return jobs
        except InvalidParams as e:
            if self._any and "any" in str(e):
                self._any = False
            else:  # not expected: the futures fail with it rather than hang
                self._fail(futs, e)
        except JobNotFound as e:  # removed from loomd's store: its future fails
            self._fail([f for f in futs if f.job_id == (e.data or {}).get("id")], e)
        except LoomError:
            with self._lock:  # loomd unreachable for a moment
                self._wake.wait(1.0)
        return []

    def _fail(self, futs: List[LoomFuture], exc: RpcError) -> None:
        for fut in futs:
            try:
                fut.set_exception(exc)
            except concurrent.futures.InvalidStateError:
                pass
            self._forget(fut)

    def _ended(self, job_id: int, futs: List[LoomFuture]) -> None:
        fut = next((f for f in futs if f.job_id == job_id), None)
        if fut is None or fut.done():
            return
        try:
            job = self._client.get(job_id)
        except JobNotFound as e:
            self._fail([fut], e)
            return
        except LoomError:
            return  # seen again on the next call
        self._resolve(fut, job)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            futs = list(self._pending.values())
            self._wake.notify()
        if cancel_futures:
            for f in futs:
                f.cancel()
        if wait:
            concurrent.futures.wait(futs)
            if self._watcher:
                self._watcher.join()
            shutil.rmtree(self._folder, ignore_errors=True)


def _remove(task: str) -> None:
    for ext in (".pkl", ".out", ".out.tmp"):
        try:
            os.unlink(task + ext)
        except FileNotFoundError:
            pass
