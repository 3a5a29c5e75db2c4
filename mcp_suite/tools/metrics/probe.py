"""The sync psutil reads behind `system_metrics`. Runs in a worker thread; returns a `RawSample`.

Reads only aggregate, host-wide counters and this process's own figures: no process list, command
lines, user names or network calls (docs/tools/). Any single failing counter becomes None (clamped to
0 by the policy) rather than failing the whole snapshot.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import psutil

from mcp_suite.tools.metrics.models import RawSample

__all__ = ["read_sample"]

T = TypeVar("T")


def _try(fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except (OSError, psutil.Error, AttributeError, RuntimeError):
        return None


def read_sample(disk_path: Path, sample_seconds: float) -> RawSample:
    """Blocking: sleeps `sample_seconds` to measure CPU use over a window."""
    start = time.monotonic()
    cpu = _try(lambda: psutil.cpu_percent(interval=sample_seconds))
    elapsed = time.monotonic() - start
    mem = _try(psutil.virtual_memory)
    swap = _try(psutil.swap_memory)
    disk = _try(lambda: psutil.disk_usage(str(disk_path)))
    load = _try(os.getloadavg)
    boot = _try(psutil.boot_time)
    proc = psutil.Process()
    with proc.oneshot():
        rss = _try(lambda: proc.memory_info().rss)
        threads = _try(proc.num_threads)
        fds = _try(proc.num_fds)
    return RawSample(
        cpu_percent=cpu,
        sample_seconds=elapsed,
        logical_count=_try(lambda: psutil.cpu_count(logical=True)),
        physical_count=_try(lambda: psutil.cpu_count(logical=False)),
        load_average=(load[0], load[1], load[2]) if load else None,
        mem_total=mem.total if mem else None,
        mem_available=mem.available if mem else None,
        mem_percent=mem.percent if mem else None,
        swap_total=swap.total if swap else None,
        swap_free=swap.free if swap else None,
        swap_percent=swap.percent if swap else None,
        disk_total=disk.total if disk else None,
        disk_free=disk.free if disk else None,
        disk_percent=disk.percent if disk else None,
        uptime_seconds=(time.time() - boot) if boot else None,
        rss=rss,
        threads=threads,
        open_fds=fds,
    )
