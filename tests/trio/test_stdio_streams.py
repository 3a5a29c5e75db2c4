"""`EagerFdStream`: the protocol's pipes, read and written without a schedule point when they are ready.

Real pipes (`os.pipe`), no mocks: the stream must behave as trio's `FdStream` does (EOF, closed,
broken, back-pressure, cancellation while waiting, blocking mode restored), and must not yield when
it does not have to wait. "Does not yield" is observed through an already-cancelled scope: a call
that passes a checkpoint there raises `Cancelled`, one that does not completes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from mcp_suite.runtime.stdio import EagerFdStream


class Pipe:
    """Both ends of a pipe; an end given to a stream (`stream`) is the stream's to close."""

    def __init__(self) -> None:
        self.read_fd, self.write_fd = os.pipe()
        self._mine = {self.read_fd, self.write_fd}

    def stream(self, fd: int) -> EagerFdStream:
        self._mine.discard(fd)
        return EagerFdStream(fd)

    def close(self, fd: int) -> None:
        self._mine.discard(fd)
        os.close(fd)

    def close_the_rest(self) -> None:
        for fd in self._mine:
            os.close(fd)


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    ends = Pipe()
    yield ends
    ends.close_the_rest()


async def test_ready_data_is_returned_without_a_schedule_point(pipe: Pipe) -> None:
    read_fd, write_fd = pipe.read_fd, pipe.write_fd
    os.write(write_fd, b"frame\n")
    stream = pipe.stream(read_fd)
    with trio.CancelScope() as scope:
        scope.cancel()
        data = await stream.receive_some(65_536)
    assert data == b"frame\n"
    assert not scope.cancelled_caught
    stream.close()


async def test_a_read_that_has_to_wait_is_a_checkpoint_and_can_be_cancelled(pipe: Pipe) -> None:
    read_fd = pipe.read_fd
    stream = pipe.stream(read_fd)
    with trio.CancelScope() as scope:
        scope.cancel()
        await stream.receive_some(65_536)
    assert scope.cancelled_caught
    with trio.move_on_after(0.05) as later:
        await stream.receive_some(65_536)
    assert later.cancelled_caught
    stream.close()


async def test_a_waiting_read_gets_the_data_written_later_then_eof(pipe: Pipe) -> None:
    read_fd, write_fd = pipe.read_fd, pipe.write_fd
    stream = pipe.stream(read_fd)
    got: list[bytes] = []

    async def reader() -> None:
        while chunk := await stream.receive_some(65_536):
            got.append(chunk)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        os.write(write_fd, b"one\n")
        await trio.testing.wait_all_tasks_blocked()
        os.write(write_fd, b"two\n")
        await trio.testing.wait_all_tasks_blocked()
        pipe.close(write_fd)
    assert b"".join(got) == b"one\ntwo\n"
    stream.close()


async def test_a_write_with_room_does_not_yield(pipe: Pipe) -> None:
    read_fd, write_fd = pipe.read_fd, pipe.write_fd
    stream = pipe.stream(write_fd)
    with trio.CancelScope() as scope:
        scope.cancel()
        await stream.send_all(b"answer\n")
    assert not scope.cancelled_caught
    assert os.read(read_fd, 100) == b"answer\n"
    stream.close()


async def test_a_write_larger_than_the_pipe_arrives_whole_and_in_order(pipe: Pipe) -> None:
    read_fd, write_fd = pipe.read_fd, pipe.write_fd
    sender, receiver = pipe.stream(write_fd), pipe.stream(read_fd)
    payload = bytes(range(256)) * 4096  # 1 MiB: many times a pipe's buffer
    got = bytearray()

    async def drain() -> None:
        while len(got) < len(payload):
            got.extend(await receiver.receive_some(7_000))
            await trio.sleep(0)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(drain)
        await sender.send_all(payload)
        await sender.send_all(memoryview(b"tail"))
        payload += b"tail"
    assert bytes(got) == payload
    sender.close()
    receiver.close()


async def test_a_full_pipe_makes_the_write_wait_and_it_can_be_cancelled(pipe: Pipe) -> None:
    write_fd = pipe.write_fd
    stream = pipe.stream(write_fd)
    with trio.move_on_after(0.2) as waited:
        await stream.send_all(b"x" * (4 << 20))  # far more than a pipe holds; nobody reads
    assert waited.cancelled_caught
    stream.close()


async def test_a_write_to_a_pipe_nobody_reads_is_broken(pipe: Pipe) -> None:
    read_fd, write_fd = pipe.read_fd, pipe.write_fd
    pipe.close(read_fd)
    stream = pipe.stream(write_fd)
    with pytest.raises(trio.BrokenResourceError):
        await stream.send_all(b"nobody listens\n")
    stream.close()


async def test_closed_streams_refuse_reads_and_writes(pipe: Pipe) -> None:
    read_fd, write_fd = pipe.read_fd, pipe.write_fd
    reader, writer = pipe.stream(read_fd), pipe.stream(write_fd)
    await reader.aclose()
    await writer.aclose()
    assert reader.fileno() == -1
    with pytest.raises(trio.ClosedResourceError):
        await reader.receive_some(100)
    with pytest.raises(trio.ClosedResourceError):
        await writer.send_all(b"late\n")
    with pytest.raises(trio.ClosedResourceError):
        await writer.send_all(b"")


async def test_closing_wakes_a_waiting_reader_with_closed_resource(pipe: Pipe) -> None:
    read_fd = pipe.read_fd
    stream = pipe.stream(read_fd)
    outcome: list[type[BaseException]] = []

    async def reader() -> None:
        try:
            await stream.receive_some(100)
        except trio.ClosedResourceError as exc:
            outcome.append(type(exc))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        await trio.testing.wait_all_tasks_blocked()
        stream.close()
    assert outcome == [trio.ClosedResourceError]


async def test_non_blocking_mode_is_restored_when_the_stream_closes(pipe: Pipe) -> None:
    read_fd = pipe.read_fd
    twin = os.dup(read_fd)  # shares the open file description, and so its O_NONBLOCK flag
    try:
        assert os.get_blocking(twin)
        stream = pipe.stream(read_fd)
        assert not os.get_blocking(twin)
        await stream.aclose()
        assert os.get_blocking(twin)
    finally:
        os.close(twin)


async def test_bad_sizes_are_refused_like_fd_stream(pipe: Pipe) -> None:
    read_fd, write_fd = pipe.read_fd, pipe.write_fd
    os.write(write_fd, b"x")
    stream = pipe.stream(read_fd)
    with pytest.raises(ValueError, match="max_bytes"):
        await stream.receive_some(0)
    with pytest.raises(TypeError, match="max_bytes"):
        await stream.receive_some(1.5)  # type: ignore[arg-type]  # what a caller might pass
    assert await stream.receive_some() == b"x"  # the default size
    stream.close()
