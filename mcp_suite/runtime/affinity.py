"""CPU affinity: keep the whole server on the CPU it started on (`MCP_CPU_AFFINITY=single`).

A CPython process runs Python on one thread at a time (the GIL). Every tool call hands work to a
worker thread and back; when those threads sit on different CPUs, each hand-over is a cross-CPU
wake-up, which on a virtual machine costs more than the call's own work. Pinned to one CPU, the
same hand-overs are cheap local switches. Linux only; elsewhere, or when the kernel refuses, this
does nothing. Must be called before any thread is started (threads inherit the mask).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["pin_to_current_cpu"]


def _current_cpu() -> int | None:
    """The CPU this thread last ran on (field 39 of /proc/self/stat), or None."""
    try:
        stat = Path("/proc/self/stat").read_text(encoding="ascii")
        return int(stat.rsplit(")", 1)[1].split()[36])
    except (OSError, ValueError, IndexError):
        return None


def pin_to_current_cpu() -> int | None:
    """Restrict this process to the CPU it is running on; returns that CPU, or None if not pinned."""
    if not hasattr(os, "sched_setaffinity"):
        return None
    try:
        allowed = os.sched_getaffinity(0)
    except OSError:
        return None
    if len(allowed) <= 1:
        return None  # already on one CPU (or none visible): nothing to do
    cpu = _current_cpu()
    if cpu is None or cpu not in allowed:
        cpu = min(allowed)
    try:
        os.sched_setaffinity(0, {cpu})
    except OSError:
        return None
    return cpu
