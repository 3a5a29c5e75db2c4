"""`make run`'s SIGINT relay (mcp_suite/make_relay.py) against stand-ins for make and the server.

The stand-in for make does what GNU make does with SIGINT: it catches it, resets it to the default
action and keeps waiting. The stand-in for the server says which signal ended it. The whole
`make -s run` is tested in tests/pg/test_make_run.py.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from mcp_suite.make_relay import main, sigint_disposition

# Catches SIGINT as make does (its handler resets the signal to the default, then make waits).
_MAKE = (
    "import signal, sys, time\n"
    "signal.signal(signal.SIGINT, lambda *_: signal.signal(signal.SIGINT, signal.SIG_DFL))\n"
    "mode = sys.argv[1]\n"
    "if mode == 'ignore': signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(0.3 if mode == 'exit' else 60)\n"
)
# Ignores SIGINT (a group-wide one must not end it here) and dies of SIGTERM.
_SERVER = (
    "import signal, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "print('ready', flush=True)\n"
    "time.sleep(60)\n"
)


def _start(code: str, *args: str, group: int | None = None) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True, process_group=group
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == "ready\n"
    return proc


@contextlib.contextmanager
def _scene(
    mode: str = "catch",
) -> Iterator[tuple[subprocess.Popen[str], subprocess.Popen[str], subprocess.Popen[bytes]]]:
    """(make, server, relay), all three in a process group of their own led by make."""
    make = _start(_MAKE, mode, group=0)
    server = _start(_SERVER, group=make.pid)
    relay = subprocess.Popen(
        [sys.executable, "-m", "mcp_suite.make_relay", str(make.pid), str(server.pid)], process_group=make.pid
    )
    try:
        yield make, server, relay
    finally:
        for proc in (relay, server, make):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()


def _wait_watching(relay: subprocess.Popen[bytes]) -> None:
    """Until the relay has SIGINT blocked: from then on a group-wide SIGINT stays pending there.
    (One that comes while it is still starting cannot be told from one sent to make alone.)"""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with open(f"/proc/{relay.pid}/status", encoding="ascii") as status:
            blocked = next(int(line.split()[1], 16) for line in status if line.startswith("SigBlk:"))
        if blocked >> (signal.SIGINT - 1) & 1:
            return
        time.sleep(0.01)
    raise AssertionError("the relay never blocked SIGINT")


def test_sigint_to_make_alone_is_relayed_to_the_server_as_sigterm() -> None:
    with _scene() as (make, server, relay):
        _wait_watching(relay)
        make.send_signal(signal.SIGINT)
        assert server.wait(timeout=10) == -signal.SIGTERM
        assert relay.wait(timeout=10) == 0
        assert make.poll() is None  # make itself only waits, as GNU make does


def test_a_sigint_to_the_whole_group_is_not_relayed_again() -> None:
    with _scene() as (make, server, relay):
        _wait_watching(relay)
        os.killpg(make.pid, signal.SIGINT)
        assert relay.wait(timeout=10) == 0
        assert server.poll() is None  # it got its own SIGINT (ignored here), and no SIGTERM


def test_a_make_that_ignores_sigint_is_left_alone() -> None:
    with _scene("ignore") as (make, server, relay):
        assert sigint_disposition(make.pid) == "ignored"
        assert relay.wait(timeout=10) == 0
        make.send_signal(signal.SIGINT)
        assert server.poll() is None


def test_the_relay_ends_with_make() -> None:
    with _scene("exit") as (make, server, relay):
        assert make.wait(timeout=10) == 0
        assert relay.wait(timeout=10) == 0
        assert server.poll() is None


def test_a_process_that_is_gone_has_no_disposition_and_bad_arguments_are_refused() -> None:
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert sigint_disposition(gone.pid) is None
    assert main([str(gone.pid), str(os.getpid())]) == 0  # nothing to watch, nothing sent
    assert main(["1"]) == 2
    assert main(["make", "server"]) == 2


@pytest.mark.parametrize("state", ["caught", "default"])
def test_this_process_disposition_is_read_from_proc(state: str) -> None:
    previous = signal.signal(
        signal.SIGINT, signal.default_int_handler if state == "caught" else signal.SIG_DFL
    )
    try:
        assert sigint_disposition(os.getpid()) == state
    finally:
        signal.signal(signal.SIGINT, previous)
