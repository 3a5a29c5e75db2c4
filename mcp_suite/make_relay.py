"""`make run`'s SIGINT relay: a SIGINT sent to make's PID alone stops the server as SIGTERM does.

GNU make passes a SIGTERM it receives on to the recipe's process, but on SIGINT (and SIGHUP) it only
waits for it: a terminal's Ctrl-C reaches every process of the foreground group anyway. So a client
that started `make -s run` and stops it with SIGINT left the server serving. Make's handler resets
the signal to its default action before it waits, which /proc shows (`SigCgt`). The `run` recipe
starts this watcher beside the server; it polls make's status and, once make has taken a SIGINT,
sends SIGTERM to the server's process (`devdb serve`, which passes it on).

A SIGINT sent to the whole group (Ctrl-C) reaches the server itself and this watcher too (blocked
here, it stays pending): then nothing is relayed, so the server gets one signal, not two (a second
one cancels its calls at once instead of draining them). A Ctrl-C in the watcher's first instant,
before it blocks SIGINT, cannot be told apart and is relayed. Standard library only; writes nothing
on stdout, which belongs to the protocol.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import time
from collections.abc import Iterator, Sequence
from typing import Final, Literal

__all__ = ["main", "relay", "sigint_disposition"]

Disposition = Literal["caught", "ignored", "default"]

POLL_S: Final = 0.2  # how often make's status is read: the longest a relayed SIGINT waits
# A Ctrl-C is marked pending in each process of the group one after the other: after seeing make's
# handler run, wait this long before deciding that this watcher got none.
_GROUP_SETTLE_S: Final = 0.05


def sigint_disposition(pid: int) -> Disposition | None:
    """What process `pid` does with SIGINT: "caught", "ignored" or "default" (None when gone).

    A process that has exited and is not yet reaped (state Z) is gone too: its masks read as
    empty, which would look like "default", a SIGINT taken."""
    masks: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                key, _, value = line.partition(":")
                if key == "State" and value.split()[0] in ("Z", "X"):
                    return None
                if key in ("SigCgt", "SigIgn"):
                    masks[key] = int(value, 16)
    except (FileNotFoundError, ProcessLookupError):
        return None
    bit = 1 << (signal.SIGINT - 1)
    if masks.get("SigCgt", 0) & bit:
        return "caught"
    return "ignored" if masks.get("SigIgn", 0) & bit else "default"


def relay(make_pid: int, target_pid: int, *, poll_s: float = POLL_S) -> bool:
    """Wait until make (`make_pid`) exits or takes a SIGINT sent to it alone; in the second case
    send SIGTERM to `target_pid`. Returns whether it sent one. Blocks SIGINT in this thread.

    Make catches SIGINT from its start; its handler resets it to the default action. So "default"
    means make has taken one (perhaps before this watcher looked), and "ignored" that make was
    started with SIGINT ignored and will ignore it: then there is nothing to relay. Both processes
    are held by pidfd, so a pid the system has given to another process is never signalled.
    """
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    with _pidfd(make_pid) as make, _pidfd(target_pid) as target:
        if make is None or target is None:
            return False
        poller = select.poll()
        poller.register(make, select.POLLIN)  # readable once make has exited
        timeout_ms = 0
        while not poller.poll(timeout_ms):
            state = sigint_disposition(make_pid)
            if state != "caught":
                return state == "default" and _relay_unless_group_wide(make, target)
            timeout_ms = int(poll_s * 1000)
        return False


@contextlib.contextmanager
def _pidfd(pid: int) -> Iterator[int | None]:
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        yield None
        return
    try:
        yield fd
    finally:
        os.close(fd)


def _relay_unless_group_wide(make: int, target: int) -> bool:
    time.sleep(_GROUP_SETTLE_S)
    if signal.SIGINT in signal.sigpending():
        return False  # the whole group got it, the server too
    if select.select([make], [], [], 0)[0]:
        # make has exited meanwhile: it was ending, not interrupted (a process on its way out may
        # reset its handlers first, which reads as "default").
        return False
    try:
        signal.pidfd_send_signal(target, signal.SIGTERM)
    except ProcessLookupError:
        return False
    return True


def main(argv: Sequence[str]) -> int:
    """`python -m mcp_suite.make_relay MAKE_PID SERVER_PID`."""
    try:
        make_pid, target_pid = (int(arg) for arg in argv)
    except ValueError:
        sys.stderr.write("usage: python -m mcp_suite.make_relay MAKE_PID SERVER_PID\n")
        return 2
    relay(make_pid, target_pid)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
