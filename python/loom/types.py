"""Results of the loom SDK as dataclasses, decoded from loomd's JSON
(docs/protocol.md: the job object, node.list, server.info). Members loomd
adds later are kept in each object's `raw` dict, so an older SDK reads a
newer loomd. Times are timezone-aware datetimes (UTC), sizes are bytes."""

import dataclasses
import datetime
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Type, TypeVar

__all__ = ["TERMINAL_STATES", "Resources", "Outcome", "Run", "Event", "Job", "SubmitResult",
           "Gpu", "Node", "ServerInfo"]

TERMINAL_STATES = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT"})


def _time(v: Optional[str]) -> Optional[datetime.datetime]:
    if v is None:
        return None
    return _utc(v)


_T = TypeVar("_T")


def _utc(v: str) -> datetime.datetime:
    """An RFC 3339 time as loomd writes it ("2026-01-02T03:04:05Z")."""
    return datetime.datetime.fromisoformat(v.replace("Z", "+00:00"))


def _pick(cls: Type[_T], d: Mapping[str, Any], **conv: Callable[[Any], Any]) -> _T:
    """cls built from the members of d it declares (conv: member -> converter)."""
    kw: Dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if f.name == "raw":
            continue
        if f.name in d:
            v = d[f.name]
            kw[f.name] = conv[f.name](v) if f.name in conv and v is not None else v
    make: Callable[..., _T] = cls
    return make(**kw, raw=d)


@dataclass
class Resources:
    cpus: int = 1
    memory: int = 0
    gpus: int = 0
    gpu_share: int = 0
    gpu_memory: int = 0
    gpu_type: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Outcome:
    """How a job's process ended (run.outcome)."""
    end: Optional[str] = None
    reason: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None
    cpu_user_s: Optional[float] = None
    cpu_sys_s: Optional[float] = None
    max_rss_bytes: Optional[int] = None
    ended_at: Optional[datetime.datetime] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Run:
    """Where and how a placed job runs (docs/running.md, the run object)."""
    node: Optional[str] = None
    gpus: List[int] = field(default_factory=list)
    gpu_share: Optional[int] = None
    executor: Optional[str] = None
    attempt: Optional[int] = None
    dir: Optional[str] = None
    stdout: Optional[str] = None
    stderr: Optional[str] = None
    outcome: Optional[Outcome] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Event:
    time: datetime.datetime
    to: str
    from_: Optional[str] = None
    reason: Optional[str] = None


@dataclass
class Job:
    id: int
    name: str
    state: str
    reason: Optional[str] = None
    submit_id: Optional[str] = None
    format: str = "batch"
    resources: Resources = field(default_factory=Resources)
    time_limit: int = 0
    priority: int = 0
    labels: Dict[str, str] = field(default_factory=dict)
    submit_time: Optional[datetime.datetime] = None
    start_time: Optional[datetime.datetime] = None
    end_time: Optional[datetime.datetime] = None
    update_time: Optional[datetime.datetime] = None
    run: Optional[Run] = None
    estimate: Optional[Dict[str, Any]] = None
    script: Optional[str] = None        # job.get only
    events: List[Event] = field(default_factory=list)  # job.get only
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def done(self) -> bool:
        """True once the job is in a terminal state."""
        return self.state in TERMINAL_STATES

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Job":
        def run(r: Mapping[str, Any]) -> Run:
            out = _pick(Run, r, outcome=lambda o: _pick(Outcome, o, ended_at=_time))
            out.gpus = list(r.get("gpus") or [])
            return out
        return _pick(cls, d, resources=lambda r: _pick(Resources, r), run=run,
                     submit_time=_time, start_time=_time, end_time=_time, update_time=_time,
                     events=lambda evs: [Event(time=_utc(e["time"]), to=e["to"],
                                               from_=e.get("from"), reason=e.get("reason"))
                                         for e in evs])


@dataclass
class SubmitResult:
    id: int
    created: bool
    state: str
    array: Optional[Dict[str, Any]] = None  # {"job_id", "tasks"} for an array
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Gpu:
    index: int
    free_milli: int = 1000
    memory_free_bytes: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass
class Node:
    name: str
    cpu_milli: int = 0
    cpu_free_milli: int = 0
    memory_bytes: int = 0
    memory_free_bytes: int = 0
    gpu_count: int = 0
    gpu_type: Optional[str] = None
    gpus: List[Gpu] = field(default_factory=list)
    jobs: List[int] = field(default_factory=list)
    available: bool = True
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "Node":
        return _pick(cls, d, gpus=lambda gs: [_pick(Gpu, g) for g in gs])


@dataclass
class ServerInfo:
    name: str
    version: str
    api_version: int
    pid: int = 0
    state_dir: Optional[str] = None
    started_at: Optional[datetime.datetime] = None
    tcp: Optional[str] = None
    socket: Optional[str] = None
    jobs: Dict[str, int] = field(default_factory=dict)
    methods: List[str] = field(default_factory=list)
    scheduler: Optional[Dict[str, Any]] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> "ServerInfo":
        return _pick(cls, d, started_at=_time)
