"""The process's stdio, taken over for the protocol (docs/wire.md).

`take_over_stdio()` moves the real stdin and stdout to private descriptors, points fd 0 at /dev/null
and fd 1 at stderr, and rebinds `sys.stdout` to stderr. After it, a stray `print`, a C library or a
child process writing to fd 1 lands on stderr and can never corrupt the protocol stream, and nothing
else can read the client's input; only the writer task, through the private descriptor, writes
protocol frames.

`open_fd_streams()` wraps the two descriptors in `EagerFdStream`s: trio's `FdStream` that tries the
read or write first and waits only when the pipe would block.
"""

from __future__ import annotations

import errno
import os
import sys
from dataclasses import dataclass
from typing import Final

import trio

__all__ = ["EagerFdStream", "ProtocolFds", "open_fd_streams", "take_over_stdio"]

_RECEIVE_SIZE: Final = 65_536  # when receive_some is not told a size (FdStream's default too)


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


def open_fd_streams(fds: ProtocolFds) -> tuple[EagerFdStream, EagerFdStream]:
    """trio streams over the protocol descriptors (they take ownership and close them)."""
    return EagerFdStream(fds.stdin), EagerFdStream(fds.stdout)


class EagerFdStream(trio.abc.Stream):
    """A pipe (or TTY) descriptor as a trio stream that yields to the scheduler only when it waits.

    `trio.lowlevel.FdStream` passes a schedule point before every read and every write, even when
    the pipe has data or room: on the session's hot path that is a whole extra task step for the
    reader and for the writer each time round. This stream tries the system call first and waits
    for the descriptor (`wait_readable` / `wait_writable`) only when the call would block. The
    descriptor itself is held by an `FdStream`, which puts it in non-blocking mode, restores the
    mode and closes it on `close`, and wakes a task waiting on it with `ClosedResourceError`.

    Not a checkpoint when it does not wait. Its one reader and one writer (the session's) each pass
    a memory-channel checkpoint every time round their loops, so neither can starve the others.
    Unlike `FdStream`, it does not detect two tasks reading (or writing) at once. Cancellation:
    only while waiting; a write cancelled part-way may have sent part of its data, as with
    `FdStream`.
    """

    __slots__ = ("_stream",)

    def __init__(self, fd: int) -> None:
        self._stream = trio.lowlevel.FdStream(fd)  # sets O_NONBLOCK

    def fileno(self) -> int:
        """The descriptor, or -1 once closed."""
        return self._stream.fileno()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if max_bytes is None:
            max_bytes = _RECEIVE_SIZE
        elif not isinstance(max_bytes, int):
            raise TypeError("max_bytes must be an integer >= 1")
        elif max_bytes < 1:
            raise ValueError("max_bytes must be an integer >= 1")
        fd = self._stream.fileno()
        while True:  # noqa: ASYNC913  # waits (a checkpoint) whenever it does not return
            try:
                return os.read(fd, max_bytes)  # noqa: ASYNC910  # ready: no wait, no checkpoint
            except BlockingIOError:
                await trio.lowlevel.wait_readable(fd)
            except OSError as exc:
                raise _stream_error(exc) from exc

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:  # noqa: ASYNC910  # see class
        fd = self._stream.fileno()
        if fd < 0:
            raise trio.ClosedResourceError("file was already closed")
        with memoryview(data) as view:
            sent, total = 0, len(view)
            while sent < total:
                try:
                    sent += os.write(fd, view[sent:])
                except BlockingIOError:
                    await trio.lowlevel.wait_writable(fd)
                except OSError as exc:
                    raise _stream_error(exc) from exc

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    def close(self) -> None:
        self._stream.close()

    async def aclose(self) -> None:
        await self._stream.aclose()


def _stream_error(exc: OSError) -> trio.ClosedResourceError | trio.BrokenResourceError:
    """The error `FdStream` raises for `exc`: closed by us (EBADF, fd -1), or broken (EPIPE, EIO…)."""
    if exc.errno == errno.EBADF:
        return trio.ClosedResourceError("file was already closed")
    return trio.BrokenResourceError(str(exc))
