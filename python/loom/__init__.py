"""loom: the Python SDK of the loom resource manager.

    loom.Client     jobs on loomd: submit (arrays, dependencies), get, list, cancel, hold,
                    release, requeue, update, wait, logs, follow, nodes, info
    loom.Executor   Python functions as loom jobs (concurrent.futures interface)
    loom.monitor    hardware metrics through libloom (ctypes)
    loom.errors     typed exceptions; loom.types: the result dataclasses
    loom.spec       what submit asks for, grouped: ResourceSpec, FileSpec, ScheduleSpec

See docs/python.md."""

from . import errors, monitor, spec, types
from .client import Client, default_url
from .errors import (AuthError, EstimateFailed, HttpError, InvalidParams, InvalidRequest,
                     InvalidState, JobCancelled, JobFailed, JobNotFound, JobTimeout, LoomError,
                     MethodNotFound, NotSupported, Overloaded, RpcError, ShuttingDown,
                     StoreFailed, TransportError, WaitTimeout)
from .executor import Executor, LoomFuture, RemoteTraceback
from .spec import FileSpec, ResourceSpec, ScheduleSpec
from .types import (TERMINAL_STATES, Event, Gpu, Job, Node, Outcome, Resources, Run,
                    ServerInfo, SubmitResult)

__version__ = "0.1.0"

__all__ = [
    "Client", "Executor", "LoomFuture", "RemoteTraceback", "default_url", "errors", "monitor",
    "types", "TERMINAL_STATES", "Event", "Gpu", "Job", "Node", "Outcome", "Resources", "Run",
    "ServerInfo", "SubmitResult", "LoomError", "TransportError", "HttpError", "AuthError",
    "RpcError", "InvalidRequest", "MethodNotFound", "InvalidParams", "JobNotFound",
    "InvalidState", "Overloaded", "StoreFailed", "ShuttingDown", "EstimateFailed",
    "NotSupported", "WaitTimeout", "JobFailed", "JobTimeout", "JobCancelled",
    "spec", "ResourceSpec", "FileSpec", "ScheduleSpec",
]
