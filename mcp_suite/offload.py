"""Blocking work on a few worker threads of our own, several calls per wake-up (`BatchedThreads`).

A call is a queue entry: its caller appends it and sleeps in `trio.lowlevel.wait_task_rescheduled`;
a worker thread takes every queued call (up to `max_batch`), runs them one after another, and wakes
all their callers with one `TrioToken.run_sync_soon`. Calls that arrive while every worker is busy
ride along with a next batch. For short calls this costs the event loop much less than a
`trio.to_thread.run_sync` per call (bench_fs; docs/performance.md).

Limits: at most `threads` worker threads, started on demand; a new call wakes the most recently idle
worker, or starts one, so a call that hangs (a wedged network file system) holds up only the calls
of its own batch, while the other workers serve the rest. One worker ends after `idle_s` without
work, and all end once `close` has been called and the queue is empty. At most `max_batch` calls per
batch, and those can still leave.
Cancellation: a caller cancelled before its call has started (queued, or in a batch behind a slow
call) leaves at once and the call never runs; one whose call has ended but whose batch has not
leaves at once too. A caller whose call is running waits for it to end and then raises `Cancelled`
(as an unabandoned `trio.to_thread.run_sync` does), so no cancelled call leaves work behind.

`run_in_db_thread` is the SQL tools' runner: one `trio.to_thread` call per call, on a thread of the
source's `Turns` (each caller at most its share of them, waiting callers served in turn), that stops
the call's query through its ticket when the caller is cancelled.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

import outcome
import trio

from mcp_suite.turns import Ticket, Turns

__all__ = ["BatchedThreads", "BatchedThreadsStatistics", "Interruptible", "run_in_db_thread"]

A = TypeVar("A")
R = TypeVar("R")
T = TypeVar("T")

_INTERRUPTED = "the call was interrupted in its worker thread"


@dataclass(frozen=True, slots=True)
class BatchedThreadsStatistics:
    """What `BatchedThreads.statistics()` returns (counts since the runner was made)."""

    worker_threads: int  # alive now
    queued: int  # calls waiting for a worker now
    batches: int  # batches taken by the workers
    largest_batch: int  # calls in the largest of them
    hand_backs: int  # wake-ups of trio, each for every caller of one batch in one trio run


class _Job(Generic[A, R]):
    __slots__ = (
        "abandoned",
        "cancelled",
        "item",
        "queued",
        "raise_cancel",
        "result",
        "started",
        "task",
        "token",
    )

    def __init__(self, item: A, task: trio.lowlevel.Task, token: trio.lowlevel.TrioToken) -> None:
        self.item = item
        self.task = task
        self.token = token
        self.result: outcome.Outcome[R] | None = None
        # Under the runner's lock: `queued` while in the queue (a worker's batch has taken it
        # otherwise); a job is either `started` by its worker or `cancelled` by its caller first.
        self.queued = True
        self.started = False
        self.cancelled = False
        # In trio's thread only: the caller was cancelled while its job ran (`raise_cancel`: wake
        # it with Cancelled when the job ends), or after it had ended (`abandoned`: already woken).
        self.raise_cancel: Callable[[], BaseException] | None = None
        self.abandoned = False


class BatchedThreads(Generic[A, R]):
    """Run `fn(item)` in worker threads: `await runner.run(item)` returns or raises what it did.

    `fn` must be blocking, bounded and thread-safe, and must not need the calling task's context
    (context variables are not carried into the worker). Use the runner as a context manager, or
    call `close`, to end its threads when it is no longer needed.
    """

    def __init__(
        self,
        fn: Callable[[A], R],
        *,
        threads: int,
        max_batch: int,
        name: str = "batched-worker",
        idle_s: float = 10.0,
    ) -> None:
        if threads < 1 or max_batch < 1:
            raise ValueError("threads and max_batch must be at least 1")
        self._fn = fn
        self._threads = threads
        self._max_batch = max_batch
        self._name = name
        self._idle_s = idle_s
        self._lock = threading.Lock()
        self._pending: collections.deque[_Job[A, R]] = collections.deque()
        self._workers: set[threading.Thread] = set()  # alive
        # The wake-ups of idle workers, the most recently idle last: it is woken first, so the
        # others stay asleep and end after idle_s.
        self._waiting: list[threading.Condition] = []
        self._serial = 0  # names the next worker
        self._closed = False
        self._batches = 0
        self._largest_batch = 0
        self._hand_backs = 0

    def __enter__(self) -> BatchedThreads[A, R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def statistics(self) -> BatchedThreadsStatistics:
        """The runner's threads, queue and batches now (a consistent snapshot)."""
        with self._lock:
            return BatchedThreadsStatistics(
                worker_threads=len(self._workers),
                queued=len(self._pending),
                batches=self._batches,
                largest_batch=self._largest_batch,
                hand_backs=self._hand_backs,
            )

    def close(self, timeout: float = 2.0) -> None:
        """Refuse new calls, let the workers finish the queue, and wait up to `timeout` s in all.

        By the time a tool closes, its calls have ended (a caller waits for a started call), so the
        workers are idle and end at once; the bound only keeps a stuck worker from holding the exit.
        """
        with self._lock:
            self._closed = True
            for wake in self._waiting:
                wake.notify()
            workers = list(self._workers)
        ends = time.monotonic() + timeout
        for worker in workers:
            if worker is not threading.current_thread():
                worker.join(max(0.0, ends - time.monotonic()))

    async def run(self, item: A) -> R:
        await trio.lowlevel.checkpoint_if_cancelled()
        job: _Job[A, R] = _Job(item, trio.lowlevel.current_task(), trio.lowlevel.current_trio_token())
        with self._lock:
            if self._closed:
                raise RuntimeError("the worker threads have been closed")
            # Wake an idle worker, or start one (before the job is queued: if that fails, no job
            # waits for a dead caller); with every worker busy, the first to finish takes it.
            if self._waiting:
                self._waiting[-1].notify()
            elif len(self._workers) < self._threads:
                self._start_worker()
            self._pending.append(job)

        def abort(raise_cancel: Callable[[], BaseException]) -> trio.lowlevel.Abort:
            with self._lock:
                if not job.started:
                    job.cancelled = True  # it never runs
                    if job.queued:
                        self._pending.remove(job)
                    return trio.lowlevel.Abort.SUCCEEDED
            if job.result is not None:
                # It ran already and waits for the rest of its batch: nothing is left to wait for.
                job.abandoned = True
                return trio.lowlevel.Abort.SUCCEEDED
            job.raise_cancel = raise_cancel  # `_deliver` reads it later, in this same thread
            return trio.lowlevel.Abort.FAILED

        result: R = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    def _start_worker(self) -> None:
        """Under the lock."""
        self._serial += 1
        worker = threading.Thread(target=self._work, name=f"{self._name}-{self._serial}", daemon=True)
        self._workers.add(worker)
        try:
            worker.start()
        except BaseException:
            self._workers.discard(worker)
            raise

    def _work(self) -> None:
        wake = threading.Condition(self._lock)
        while (batch := self._next_batch(wake)) is not None:
            self._run_batch(batch)

    def _next_batch(self, wake: threading.Condition) -> list[_Job[A, R]] | None:
        """Worker thread: the next batch, or None when this worker is to end (closed, or `idle_s`
        without work)."""
        with self._lock:
            idle_since = time.monotonic()
            while not self._pending:
                timeout = idle_since + self._idle_s - time.monotonic()
                if self._closed or timeout <= 0:
                    self._workers.discard(threading.current_thread())
                    return None
                self._waiting.append(wake)
                try:
                    wake.wait(timeout)
                finally:
                    self._waiting.remove(wake)
            batch: list[_Job[A, R]] = []
            while self._pending and len(batch) < self._max_batch:
                job = self._pending.popleft()
                job.queued = False
                batch.append(job)
            self._batches += 1
            self._largest_batch = max(self._largest_batch, len(batch))
            return batch

    def _run_batch(self, batch: list[_Job[A, R]]) -> None:
        """Run each job not cancelled meanwhile (one at a time: a job held up by a slow call can
        still be cancelled), then hand the batch back to trio."""
        ran: list[_Job[A, R]] = []
        for job in batch:
            with self._lock:
                if job.cancelled:
                    continue
                job.started = True
            ran.append(job)
            try:
                job.result = outcome.Value(self._fn(job.item))
            except Exception as exc:  # noqa: BLE001  # the caller's: re-raised in its task
                job.result = outcome.Error(exc)
            except BaseException as exc:  # noqa: BLE001, ASYNC103  # a worker thread: no Cancelled here
                interrupted = RuntimeError(_INTERRUPTED)
                interrupted.__cause__ = exc
                job.result = outcome.Error(interrupted)
        tokens = {job.token for job in ran}
        with self._lock:
            self._hand_backs += len(tokens)
        for token in tokens:
            # A run cannot end while one of its tasks waits here; suppressed only to be safe.
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(_deliver, [job for job in ran if job.token is token])


def _deliver(jobs: list[_Job[Any, Any]]) -> None:
    """In trio's thread: wake each caller with its call's outcome, or its cancellation."""
    for job in jobs:
        if job.abandoned:
            continue
        result = job.result
        assert result is not None  # set for every job that ran before its batch is handed back
        if job.raise_cancel is not None:
            result = outcome.capture(job.raise_cancel)
        trio.lowlevel.reschedule(job.task, result)


class Interruptible(Protocol):
    """What `run_in_db_thread` needs of a call's ticket (the SQL tools' `CallTicket`): whether the
    work has started, a one-way switch to cancelled, and a way to stop the work from another thread."""

    @property
    def started(self) -> bool: ...

    def mark_cancelled(self) -> bool: ...

    def cancel(self) -> None: ...


K = TypeVar("K", bound=Interruptible)


async def run_in_db_thread(
    fn: Callable[[K], T],
    ticket: K,
    *,
    threads: Turns,
    caller: str | None,
    cancel_grace_s: float,
) -> T:
    """Run `fn(ticket)` in a worker thread, one of `threads` taken in `caller`'s turn; on
    cancellation, stop its query (`ticket.cancel`) and wait for it.

    Cancellation: when the caller's scope is cancelled (client `notifications/cancelled` or the
    deadline), the ticket sends PostgreSQL a cancel request from another thread, then we wait,
    shielded and at most `cancel_grace_s`, for the worker to roll back and return its connection;
    then `trio.Cancelled` propagates. A worker that outlives the grace keeps its thread of
    `threads` until it ends, so worker threads never exceed the pool size.
    """
    token = trio.lowlevel.current_trio_token()
    finished = trio.Event()
    # Only a cancelled caller waits for the worker's end, so only then does the worker wake the
    # event loop to say it has ended; the lock makes "ended" and "someone waits" one decision.
    handoff = threading.Lock()
    state = {"ended": False, "waiting": False}

    def work() -> T:
        try:
            return fn(ticket)
        finally:
            with handoff:
                state["ended"] = True
                notify = state["waiting"]
            if notify:
                with contextlib.suppress(trio.RunFinishedError):
                    token.run_sync_soon(finished.set)

    try:
        # trio documents a "CapacityLimiter-like object" (acquire_on_behalf_of, release_on_behalf_of);
        # its annotation names the class only. trio releases it when the thread has ended.
        limiter = cast("trio.CapacityLimiter", _InTurn(threads, caller))
        return await trio.to_thread.run_sync(work, limiter=limiter, abandon_on_cancel=True)
    except trio.Cancelled:
        with trio.CancelScope(shield=True), trio.move_on_after(cancel_grace_s):
            if ticket.mark_cancelled():
                await trio.to_thread.run_sync(ticket.cancel)
            with handoff:
                wait = ticket.started and not state["ended"]
                state["waiting"] = wait
            if wait:
                await finished.wait()
            else:
                await trio.lowlevel.checkpoint()
        raise


class _InTurn:
    """One call's thread of a `Turns`, in the shape `trio.to_thread.run_sync` takes as a limiter."""

    __slots__ = ("_caller", "_threads", "_ticket")

    def __init__(self, threads: Turns, caller: str | None) -> None:
        self._threads = threads
        self._caller = caller
        self._ticket: Ticket | None = None

    async def acquire_on_behalf_of(self, borrower: object) -> None:
        ticket = self._ticket = self._threads.reserve(self._caller)
        try:
            await self._threads.wait(ticket)
        except BaseException:  # cancelled in line: trio will not release what it did not get
            self._threads.release(ticket)
            raise

    def release_on_behalf_of(self, borrower: object) -> None:
        assert self._ticket is not None  # acquired first
        self._threads.release(self._ticket)
