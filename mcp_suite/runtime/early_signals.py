"""Signals that arrive before the event loop watches for them. No trio, nothing heavy imported.

Importing the server takes a noticeable time (trio, pydantic, the tools). A SIGINT/SIGTERM that
arrives meanwhile must start the same orderly shutdown as one that arrives later, not kill the
process with the default action: the entry point installs `record` first, and the session's signal
watcher takes what it recorded (`take`) when it starts.
"""

from __future__ import annotations

import signal
from types import FrameType

__all__ = ["install", "take"]

_early: list[int] = []


def _record(signum: int, frame: FrameType | None) -> None:
    _early.append(signum)


def install() -> None:
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _record)


def take() -> list[int]:
    """The signals received before the event loop watched for them (and forget them)."""
    taken = list(_early)
    _early.clear()
    return taken
