"""`mcp_suite.offload.BatchedThreads`: blocking calls on worker threads of its own, in batches.

Each caller gets its own call's result or exception; queued calls run in arrival order, at most
`max_batch` per batch and on at most `threads` threads at once, and each batch wakes its callers with
one hand-back to trio; a cancelled caller whose call has not started (even inside a batch held up
by a slow call) leaves at once and the call never runs, one whose call has ended leaves at once,
one whose call is running waits for its end. A call that hangs holds up only its own batch: another
worker serves the calls behind it. Idle workers end, `close` ends them all, and one runner serves any
number of trio runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
import trio
import trio.testing

from mcp_suite.offload import BatchedThreads


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
        self.thread_names: set[str] = set()  # idents are reused once a thread has ended; names not

    def __call__(self, item: int) -> str:
        with self.lock:
            self.running += 1
            self.most_running = max(self.most_running, self.running)
            self.threads.add(threading.get_ident())
            self.thread_names.add(threading.current_thread().name)
        try:
            self.started.append(item)
            if item in self.held:
                self.first_started.set()
                assert self.gate.wait(10)
            if item == -99:
                raise SystemExit("not an Exception: ends the worker thread")
            if item < 0:
                raise KeyError(f"item {item}")
            self.calls.append(item)
            return f"result {item}"
        finally:
            with self.lock:
                self.running -= 1


@pytest.fixture
def runners() -> Iterator[list[BatchedThreads[int, str]]]:
    """Runners made by a test, closed after it (their threads must not outlive it)."""
    made: list[BatchedThreads[int, str]] = []
    yield made
    for runner in made:
        runner.close()
        assert runner.statistics().worker_threads == 0


async def test_one_call_returns_its_result_and_an_error_is_raised_to_its_caller(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=2, max_batch=8)
    runners.append(runner)
    assert await runner.run(5) == "result 5"
    with pytest.raises(KeyError, match="item -1"):
        await runner.run(-1)
    assert threading.get_ident() not in fn.threads  # never on trio's own thread


async def test_overlapping_calls_share_a_batch_and_one_hand_back_and_each_gets_its_own_result(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    runners.append(runner)
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
            assert runner.statistics().queued == 7
            fn.gate.set()
    assert results == {item: f"result {item}" for item in range(8)}
    assert fn.calls == list(range(8))  # arrival order
    stats = runner.statistics()
    # The held call ran alone, the seven queued behind it as one batch, and their seven callers
    # were woken by one hand-back.
    assert (stats.batches, stats.largest_batch, stats.hand_backs) == (2, 7, 2)


async def test_an_error_in_a_batch_goes_to_its_own_caller_and_the_batch_goes_on(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    runners.append(runner)
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


async def test_a_batch_holds_at_most_max_batch_calls(runners: list[BatchedThreads[int, str]]) -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=3)
    runners.append(runner)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.run, 0)
            await trio.to_thread.run_sync(fn.first_started.wait)
            for item in range(1, 20):
                nursery.start_soon(runner.run, item)
                await trio.testing.wait_all_tasks_blocked()
            fn.gate.set()
    assert fn.calls == list(range(20))
    stats = runner.statistics()
    # The held call alone, then the 19 queued behind it in batches of at most 3: 1 + 6 x 3 + 1.
    assert (stats.batches, stats.largest_batch) == (8, 3)


async def test_no_more_worker_threads_run_at_once_than_allowed(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder(held=frozenset(range(40)))  # every call waits at the gate once it has started
    runner = BatchedThreads(fn, threads=2, max_batch=2)
    runners.append(runner)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            for item in range(40):
                nursery.start_soon(runner.run, item)
            while fn.running < 2:
                await trio.sleep(0.01)
            await trio.sleep(0.05)
            assert fn.running == 2  # two threads busy, no third one started
            assert runner.statistics().worker_threads == 2
            assert len(fn.started) == 2  # (trio starts new tasks in a random order)
            fn.gate.set()
    assert sorted(fn.calls) == list(range(40))
    assert fn.most_running == 2


async def test_a_cancelled_caller_whose_call_waits_leaves_at_once_and_the_call_never_runs(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder()
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    runners.append(runner)
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


@pytest.mark.parametrize("position", ["first batch", "a later batch"])
async def test_a_cancelled_caller_whose_call_started_waits_for_it_to_end(
    position: str, runners: list[BatchedThreads[int, str]]
) -> None:
    # The caller's call is item 0 (the first batch) or item 1 (the batch after item 0's); either
    # way the call is held at the gate once it has started.
    mine = 0 if position == "first batch" else 1
    fn = Recorder(held=frozenset({mine}))
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    runners.append(runner)
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


async def test_a_call_that_hangs_holds_up_only_its_own_batch(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder(held=frozenset({0}))
    runner = BatchedThreads(fn, threads=2, max_batch=8)
    runners.append(runner)
    finished: dict[int, float] = {}

    async def call(item: int) -> None:
        await runner.run(item)
        finished[item] = time.monotonic()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, 0)
            while not fn.first_started.is_set():
                await trio.sleep(0.005)
            for item in range(1, 6):
                nursery.start_soon(call, item)
            while len(finished) < 5:
                await trio.sleep(0.01)
            assert sorted(finished) == [1, 2, 3, 4, 5]  # served while call 0 still hangs
            assert len(fn.thread_names) == 2  # by the other worker
            fn.gate.set()
    assert sorted(fn.calls) == list(range(6))


async def test_a_waiting_worker_ends_after_idle_s_even_while_another_is_at_work(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder(held=frozenset({0}))
    runner = BatchedThreads(fn, threads=2, max_batch=8, idle_s=0.2)
    runners.append(runner)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(runner.run, 0)
            while not fn.first_started.is_set():
                await trio.sleep(0.005)
            await runner.run(1)  # while the first worker hangs: starts a second, which serves it
            assert runner.statistics().worker_threads == 2
            while runner.statistics().worker_threads == 2:  # the second, out of work, ends after idle_s
                await trio.sleep(0.01)
            assert runner.statistics().worker_threads == 1  # the hung one is still there
            fn.gate.set()
    assert sorted(fn.calls) == [0, 1]


def test_limits_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        BatchedThreads(Recorder(), threads=0, max_batch=1)
    with pytest.raises(ValueError, match="at least 1"):
        BatchedThreads(Recorder(), threads=1, max_batch=0)


async def test_an_idle_worker_ends_and_a_later_call_starts_a_new_one(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder(held=frozenset())
    runner = BatchedThreads(fn, threads=2, max_batch=8, idle_s=0.05)
    runners.append(runner)
    assert runner.statistics().worker_threads == 0  # started on demand
    assert await runner.run(1) == "result 1"
    with trio.fail_after(5):
        while runner.statistics().worker_threads:
            await trio.sleep(0.01)
    assert await runner.run(2) == "result 2"
    assert fn.thread_names == {"batched-worker-1", "batched-worker-2"}  # a new one for the second


def test_close_ends_the_workers_and_refuses_later_calls() -> None:
    fn = Recorder(held=frozenset())
    runner = BatchedThreads(fn, threads=2, max_batch=8, idle_s=60)

    async def calls() -> None:
        async with trio.open_nursery() as nursery:
            for item in range(6):
                nursery.start_soon(runner.run, item)

    trio.run(calls)
    assert runner.statistics().worker_threads >= 1  # idle, not ended yet (idle_s is long)
    started = time.monotonic()
    runner.close()
    assert runner.statistics().worker_threads == 0
    assert time.monotonic() - started < 5
    runner.close()  # idempotent
    with pytest.raises(RuntimeError, match="closed"):
        trio.run(runner.run, 7)
    assert sorted(fn.calls) == list(range(6))


def test_one_runner_serves_several_trio_runs() -> None:
    fn = Recorder(held=frozenset())
    with BatchedThreads(fn, threads=1, max_batch=8, idle_s=60) as runner:
        # Each call is handed back to the run it came from, even on the same worker thread.
        assert trio.run(runner.run, 1) == "result 1"
        assert trio.run(runner.run, 2) == "result 2"
        assert fn.thread_names == {"batched-worker-1"}
    assert runner.statistics().worker_threads == 0


async def test_a_call_that_raises_past_exception_fails_its_caller_and_the_worker_goes_on(
    runners: list[BatchedThreads[int, str]],
) -> None:
    fn = Recorder(held=frozenset())
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    runners.append(runner)
    with pytest.raises(RuntimeError, match="interrupted in its worker thread") as caught:
        await runner.run(-99)  # SystemExit in the worker: its caller sees an error, nothing ends
    assert isinstance(caught.value.__cause__, SystemExit)
    assert await runner.run(3) == "result 3"
    assert fn.thread_names == {"batched-worker-1"}


class Gates:
    """`fn` whose items listed in `gates` wait at their own gate; records what ran."""

    def __init__(self, gated: tuple[str, ...]) -> None:
        self.gates = {item: threading.Event() for item in gated}
        self.arrived = {item: threading.Event() for item in gated}
        self.ran: list[str] = []

    def __call__(self, item: str) -> str:
        self.ran.append(item)
        if item in self.gates:
            self.arrived[item].set()
            assert self.gates[item].wait(10)
        return f"result {item}"


@pytest.mark.parametrize("cancelled", ["a call not yet run", "a call already run"])
async def test_a_caller_whose_call_waits_inside_a_held_batch_can_leave(cancelled: str) -> None:
    # The worker runs "a" alone (held), meanwhile "b", "c" and "d" queue; then it takes them as one
    # batch, in which "c" is held. Cancelling "d" (not run yet) or "b" (run, waiting for the batch to
    # end) lets that caller leave at once, while "c" is still held; "d" then never runs.
    fn = Gates(("a", "c"))
    with BatchedThreads(fn, threads=1, max_batch=8) as runner:
        mine = "d" if cancelled == "a call not yet run" else "b"
        caller = trio.CancelScope()
        results: dict[str, str] = {}
        left: list[float] = []

        async def call(item: str) -> None:
            results[item] = await runner.run(item)

        async def cancellable() -> None:
            with caller:
                await runner.run(mine)
            left.append(trio.current_time())

        with trio.fail_after(10):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(call, "a")
                await trio.to_thread.run_sync(fn.arrived["a"].wait)
                for item in ("b", "c", "d"):
                    if item == mine:
                        nursery.start_soon(cancellable)
                    else:
                        nursery.start_soon(call, item)
                    await trio.testing.wait_all_tasks_blocked()
                fn.gates["a"].set()
                await trio.to_thread.run_sync(fn.arrived["c"].wait)
                stats = runner.statistics()
                assert (stats.batches, stats.largest_batch) == (2, 3)
                caller.cancel()
                with trio.move_on_after(5):
                    while not left:
                        await trio.sleep(0.01)
                assert left  # it left while "c" was still held
                assert not fn.gates["c"].is_set()
                fn.gates["c"].set()
        assert caller.cancelled_caught
        expected_ran = ["a", "b", "c"] if mine == "d" else ["a", "b", "c", "d"]
        assert fn.ran == expected_ran
        assert set(results) == {"a", "b", "c", "d"} - {mine}


async def test_a_worker_that_cannot_start_fails_its_caller_and_queues_nothing(
    monkeypatch: pytest.MonkeyPatch, runners: list[BatchedThreads[int, str]]
) -> None:
    fn = Recorder(held=frozenset())
    runner = BatchedThreads(fn, threads=1, max_batch=8)
    runners.append(runner)

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    with monkeypatch.context() as patched:
        patched.setattr(threading.Thread, "start", refuse)
        with pytest.raises(RuntimeError, match="can't start new thread"):
            await runner.run(1)
    assert runner.statistics().worker_threads == 0
    assert await runner.run(2) == "result 2"  # the failed call was not left in the queue
    assert fn.calls == [2]
