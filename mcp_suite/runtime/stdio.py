"""The process's stdio, taken over for the protocol (docs/wire.md).

`take_over_stdio()` moves the real stdin and stdout to private descriptors, points fd 0 at /dev/null
and fd 1 at stderr, and rebinds `sys.stdout` to stderr. After it, a stray `print`, a C library or a
child process writing to fd 1 lands on stderr and can never corrupt the protocol stream, and nothing
else can read the client's input; only the writer task, through the private descriptor, writes
protocol frames.

`open_fd_streams()` wraps the two descriptors in trio's `FdStream`s.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass

import trio

__all__ = ["ProtocolFds", "open_fd_streams", "take_over_stdio"]


@dataclass(frozen=True, slots=True)
class ProtocolFds:
    stdin: int
    stdout: int


def take_over_stdio() -> ProtocolFds:
    """Divert fds 0 and 1; returns the private (close-on-exec) copies of the originals."""
    sys.stdout.flush()
    proto_in = os.dup(0)  # os.dup makes non-inheritable descriptors: children never see them
    proto_out = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(devnull, 0)
    finally:
        os.close(devnull)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return ProtocolFds(stdin=proto_in, stdout=proto_out)


def open_fd_streams(fds: ProtocolFds) -> tuple[trio.lowlevel.FdStream, trio.lowlevel.FdStream]:
    """trio streams over the protocol descriptors (they take ownership and close them)."""
    return trio.lowlevel.FdStream(fds.stdin), trio.lowlevel.FdStream(fds.stdout)
