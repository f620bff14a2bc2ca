"""What Client.submit asks loomd for, grouped (docs/python.md, "Grouped
requests"): ResourceSpec (what the job holds and for how long), FileSpec
(where it runs, where its output goes, its environment) and ScheduleSpec
(when and in what order it may start). Each is a frozen dataclass whose
members are None unless given; None sends nothing, so loomd's defaults
apply. The flat keywords of Client.submit (gpus=, workdir=, hold=, ...)
fill the same dataclasses, so both forms send the same job.submit request.

    import loom
    big = loom.ResourceSpec(gpus=4, memory="64GiB", time_limit="12h")
    c.submit(script, resources=big, files=loom.FileSpec(env={"LR": "0.1"}),
             scheduling=loom.ScheduleSpec(priority=10, dependency=prep))
    c.submit(script, resources=dataclasses.replace(big, gpus=8))"""

import dataclasses
import datetime
from dataclasses import dataclass
from typing import Iterable, Mapping, Optional, Sequence, Union

from .types import Job, SubmitResult

__all__ = ["ResourceSpec", "FileSpec", "ScheduleSpec", "Size", "Duration", "GpuShare",
           "JobRef", "Dependency", "Env", "RESOURCE_KEYWORDS", "FILE_KEYWORDS",
           "SCHEDULE_KEYWORDS"]

Size = Union[int, str]
"""Bytes as an int, or a string with a unit ("16GiB", "512M")."""
Duration = Union[int, float, str, datetime.timedelta]
"""Seconds (an int or float, rounded up), a string with units ("1h30m") or a timedelta."""
GpuShare = Union[float, int, str]
"""A fraction of one GPU (0.25), milli-GPU as an int (250) or "250m"."""
JobRef = Union[int, SubmitResult, Job]
"""A job: its id, or what submit or get returned for it."""
Dependency = Union[str, JobRef, Iterable[JobRef]]
"""sbatch's --dependency string, or jobs meaning afterok on all of them."""
Env = Union[Mapping[str, object], Sequence[str]]
"""The job's environment: a dict, or "NAME=VALUE" strings."""


@dataclass(frozen=True)
class ResourceSpec:
    """What the job holds while it runs, and for how long (job.submit's
    `resources` and `time_limit`)."""
    cpus: Optional[int] = None
    memory: Optional[Size] = None
    gpus: Optional[int] = None
    gpu_share: Optional[GpuShare] = None
    gpu_memory: Optional[Size] = None
    gpu_type: Optional[str] = None
    time_limit: Optional[Duration] = None


@dataclass(frozen=True)
class FileSpec:
    """Where the job runs and writes (job.submit's options workdir, output,
    error, env). workdir None: the current directory; False: none is sent
    (loomd's default: the job directory, or the owner's home)."""
    workdir: Union[str, bool, None] = None
    output: Optional[str] = None
    error: Optional[str] = None
    env: Optional[Env] = None


@dataclass(frozen=True)
class ScheduleSpec:
    """When and in what order the job may start (job.submit's priority and
    options array, dependency, hold, begin, account)."""
    priority: Optional[int] = None
    array: Optional[str] = None
    dependency: Optional[Dependency] = None
    hold: Optional[bool] = None
    begin: Optional[str] = None
    account: Optional[str] = None


def _names(cls: type) -> "tuple[str, ...]":
    return tuple(f.name for f in dataclasses.fields(cls))


RESOURCE_KEYWORDS = _names(ResourceSpec)
FILE_KEYWORDS = _names(FileSpec)
SCHEDULE_KEYWORDS = _names(ScheduleSpec)
