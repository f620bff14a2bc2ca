"""Typed exceptions of the loom SDK.

Every error loomd answers with (a JSON-RPC error object, docs/protocol.md,
"Errors") becomes an RpcError subclass chosen by its code, carrying the code,
message and data as loomd sent them. Transport failures are TransportError
(cannot connect, connection broken, timed out) or HttpError (a status other
than 200/204, e.g. 401 for a wrong token)."""

from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Type, Union

if TYPE_CHECKING:  # loom.types imports nothing from here; this keeps it so at run time
    from .types import Job

__all__ = [
    "LoomError", "TransportError", "HttpError", "AuthError", "RpcError", "ParseError",
    "InvalidRequest", "MethodNotFound", "InvalidParams", "InternalError", "JobNotFound",
    "InvalidState", "Overloaded", "StoreFailed", "ShuttingDown", "EstimateFailed",
    "NotSupported", "WaitTimeout", "JobFailed", "JobTimeout", "JobCancelled",
]


class LoomError(Exception):
    """The base of every error the SDK raises."""


class TransportError(LoomError, ConnectionError):
    """loomd could not be reached, or the connection broke or timed out."""

    def __init__(self, url: str, detail: str) -> None:
        super().__init__(f"cannot reach loomd at {url}: {detail}")
        self.url = url
        self.detail = detail


class HttpError(LoomError):
    """loomd answered with an HTTP status that carries no JSON-RPC response."""

    def __init__(self, status: int, body: Union[bytes, str]) -> None:
        text = body.decode(errors="replace") if isinstance(body, bytes) else str(body)
        super().__init__(f"HTTP {status}: {text[:200]}")
        self.status = status
        self.body = text


class AuthError(HttpError):
    """HTTP 401/403: a missing or wrong bearer token (TCP)."""


class RpcError(LoomError):
    """A JSON-RPC error object: code, message and data exactly as loomd sent them."""

    code: Optional[int] = None

    def __init__(self, code: Optional[int], message: str, data: Any = None,
                 method: Optional[str] = None) -> None:
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{message} ({code})")
        self.code = code
        self.message = message
        self.data = data
        self.method = method

    @property
    def error(self) -> Dict[str, Any]:
        """The JSON-RPC error object."""
        e: Dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            e["data"] = self.data
        return e


class ParseError(RpcError):
    code = -32700


class InvalidRequest(RpcError):
    code = -32600


class MethodNotFound(RpcError):
    code = -32601


class InvalidParams(RpcError):
    code = -32602


class InternalError(RpcError):
    code = -32603


class JobNotFound(RpcError):
    code = -32001


class InvalidState(RpcError):
    """The job's state forbids the operation (e.g. cancelling a finished job)."""
    code = -32002


class Overloaded(RpcError):
    """The store's write queue is full; retry later with the same submit_id."""
    code = -32003


class StoreFailed(RpcError):
    """The database write failed; nothing was stored; safe to retry."""
    code = -32004


class ShuttingDown(RpcError):
    code = -32005


class EstimateFailed(RpcError):
    """job.submit named a model loomd cannot estimate."""
    code = -32006


_BY_CODE: Dict[Optional[int], Type[RpcError]] = {
    c.code: c for c in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError,
                        JobNotFound, InvalidState, Overloaded, StoreFailed, ShuttingDown,
                        EstimateFailed)}


def rpc_error(error: Mapping[str, Any], method: Optional[str] = None) -> RpcError:
    """The exception for a JSON-RPC error object."""
    code = error.get("code")
    cls = _BY_CODE.get(code, RpcError)
    return cls(code, error.get("message", ""), error.get("data"), method)


class NotSupported(LoomError):
    """The loomd in use does not offer a method or parameter the call needs."""


class WaitTimeout(LoomError, TimeoutError):
    """Client.wait gave up before the job reached the state waited for."""

    def __init__(self, job_id: int, state: str, timeout: float) -> None:
        super().__init__(f"job {job_id} still {state} after {timeout:g} s")
        self.job_id = job_id
        self.state = state


class JobFailed(LoomError):
    """An Executor job ended without a result: the job (a loom.Job) says why."""

    def __init__(self, job: "Job", detail: str = "") -> None:
        reason = job.reason or (job.run.outcome.reason if job.run and job.run.outcome else None)
        msg = f"job {job.id} ended {job.state}"
        if reason:
            msg += f": {reason}"
        if detail:
            msg += f"\n{detail}"
        super().__init__(msg)
        self.job = job


class JobTimeout(JobFailed, TimeoutError):
    """An Executor job was killed by its time limit."""


class JobCancelled(JobFailed):
    """An Executor job was cancelled outside the future (loom cancel, another client)."""
