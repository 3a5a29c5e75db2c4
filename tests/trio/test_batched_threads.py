"""`runtime.threads.BatchedThreads`: overlapping blocking calls share thread hand-offs.

Each caller gets its own call's result or exception; queued calls run in arrival order, at most
`max_batch` per hand-off and on at most `threads` threads at once; a cancelled caller whose call has
not started leaves at once and the call never runs; one whose call has started waits for its end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
import trio
import trio.testing

from mcp_suite.runtime.threads import BatchedThreads


class Recorder:
    """`fn` for the runner: records calls and concurrency; the `held` items wait at the gate."""

    def __init__(self, held: frozenset[int] = frozenset({0})) -> None:
        self.calls: list[int] = []
        self.held = held
        self.gate = threading.Event()
        self.first_started = threading.Event()
        self.started: list[int] = []
        self.lock = threading.Lock()
        self.running = 0
        self.most_running = 0
        self.threads: set[int] = set()

    def __call__(self, item: int) -> str:
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            self.threads.add(threading.get_ident())
        try:
            self.started.append(item)
            if item in self.held:
                self.first_started.set()
                assert self.gate.wait(10)
            if item < 0:
                raise KeyError(f"item {item}")
            self.calls.append(item)
            return f"result {item}"
        finally:
            with self.lock:
                self.running -= 1


def counting(runner: BatchedThreads[int, str], fn: Recorder) -> list[int]:
    """Wrap the runner's hand-off to record how many calls each one ran."""
    sizes: list[int] = []
    drain: Callable[[], None] = runner._drain  # observing, not changing, the runner

    def observed() -> None:
        before = len(fn.calls)
        drain()
        sizes.append(len(fn.calls) - before)

    runner._drain = observed  # type: ignore[method-assign]
    return sizes


async def test_one_call_returns_its_result_and_an_error_is_raised_to_its_caller() -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=2, max_batch=8)
    assert await runner.run(5) == "result 5"
    with pytest.raises(KeyError, match="item -1"):
        await runner.run(-1)


async def test_overlapping_calls_share_hand_offs_and_each_gets_its_own_result() -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    sizes = counting(runner, fn)
    results: dict[int, str] = {}

    async def call(item: int) -> None:
        results[item] = await runner.run(item)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, 0)
            await trio.to_thread.run_sync(fn.first_started.wait)
            for item in range(1, 8):  # queued behind the held call, in this order
                nursery.start_soon(call, item)
                await trio.testing.wait_all_tasks_blocked()
            fn.gate.set()
    assert results == {item: f"result {item}" for item in range(8)}
    assert fn.calls == list(range(8))  # arrival order
    assert sizes == [8]  # the calls queued meanwhile ran in the held call's hand-off


async def test_an_error_in_a_batch_goes_to_its_own_caller_and_the_batch_goes_on() -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    outcomes: dict[int, str] = {}

    async def call(item: int) -> None:
        try:
            outcomes[item] = await runner.run(item)
        except KeyError as exc:
            outcomes[item] = f"raised {exc}"

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, 0)
            await trio.to_thread.run_sync(fn.first_started.wait)
            for item in (-2, 3):
                nursery.start_soon(call, item)
                await trio.testing.wait_all_tasks_blocked()
            fn.gate.set()
    assert outcomes == {0: "result 0", -2: "raised 'item -2'", 3: "result 3"}


async def test_a_hand_off_runs_at_most_max_batch_calls() -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=3)
    sizes = counting(runner, fn)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.run, 0)
            await trio.to_thread.run_sync(fn.first_started.wait)
            for item in range(1, 20):
                nursery.start_soon(runner.run, item)
                await trio.testing.wait_all_tasks_blocked()
            fn.gate.set()
    assert fn.calls == list(range(20))
    assert sizes == [3, 3, 3, 3, 3, 3, 2]


async def test_no_more_worker_threads_run_at_once_than_allowed() -> None:
    fn = Recorder(held=frozenset(range(40)))  # every call waits at the gate once it has started
    runner = BatchedThreads(fn, threads=2, max_batch=2)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for item in range(40):
                nursery.start_soon(runner.run, item)
            while fn.running < 2:
                await trio.sleep(0.01)
            await trio.sleep(0.05)
            assert fn.running == 2  # two threads busy, no third one started
            assert len(fn.started) == 2  # (trio starts new tasks in a random order)
            fn.gate.set()
    assert sorted(fn.calls) == list(range(40))
    assert fn.most_running == 2


async def test_a_cancelled_caller_whose_call_waits_leaves_at_once_and_the_call_never_runs() -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.run, 0)
            await trio.to_thread.run_sync(fn.first_started.wait)
            with trio.move_on_after(0.05) as scope:
                await runner.run(1)  # queued behind the held call
            assert scope.cancelled_caught
            assert fn.calls == []  # the held call has not finished either
            fn.gate.set()
    assert fn.calls == [0]  # call 1 was skipped


@pytest.mark.parametrize("position", ["runs the batch", "waits for the batch"])
async def test_a_cancelled_caller_whose_call_started_waits_for_it_to_end(position: str) -> None:
    # The caller's call is item 0 (it runs the hand-off itself) or item 1 (it waits for the hand-off
    # that item 0's caller runs); either way the call is held at the gate once it has started.
    mine = 0 if position == "runs the batch" else 1
    fn = Recorder(held=frozenset({mine}))
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    caller = trio.CancelScope()
    left: list[int] = []

    async def cancelled_caller() -> None:
        with caller:
            await runner.run(mine)
            await trio.lowlevel.checkpoint()  # where a caller whose call did finish sees the cancel
        left.append(len(fn.calls))

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            if mine == 1:
                nursery.start_soon(runner.run, 0)
                await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(cancelled_caller)
            await trio.to_thread.run_sync(fn.first_started.wait)
            caller.cancel()
            await trio.sleep(0.05)
            assert left == []  # the caller waits: its call is still running
            assert fn.running == 1
            fn.gate.set()
    assert caller.cancelled_caught
    assert left == [mine + 1]  # it left after its call had ended
    assert fn.calls == list(range(mine + 1))


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BatchedThreads(Recorder(), threads=0, max_batch=1)
    with pytest.raises(ValueError, match="at least 1"):
        BatchedThreads(Recorder(), threads=1, max_batch=0)
