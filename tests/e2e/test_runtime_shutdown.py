"""Shutdown of the real process (docs/wire.md): EOF and SIGTERM drain, a second signal cancels at once,
and a client that goes away ends it.

The slow tool is the test entry point's `sleep` (tests/support/stray_server.py). Waits are bounded by
generous timeouts; where "at once" matters, the configuration makes the slow path take far longer
than the timeout, so only the fast path can pass.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import tempfile
import threading
import time

import pytest

from mcp_suite.problems import INTERNAL_ERROR
from tests.support.client import REPO, STRAY_ARGV, ServerProcess, server_env
from tests.support.wire import check_line, slug_of


def _assert_quiet(server: ServerProcess) -> None:
    stderr = server.stderr_text()
    assert "Warning" not in stderr, stderr
    assert "Traceback" not in stderr, stderr


pytestmark = pytest.mark.e2e


def _start_sleep(server: ServerProcess, seconds: float, request_id: str) -> None:
    """Start a slow call and make sure the dispatcher has it in flight before returning."""
    server.send_request("tools/call", {"name": "sleep", "arguments": {"seconds": seconds}}, id=request_id)
    # The dispatcher handles lines in order: once the ping behind the call is answered, the call runs.
    assert server.request("ping")["result"] == {}


def test_eof_drains_the_in_flight_call_then_exits_zero() -> None:
    with ServerProcess(argv=STRAY_ARGV) as server:
        server.initialize()
        server.send_request("tools/call", {"name": "sleep", "arguments": {"seconds": 1}}, id="slow")
        server.close_stdin()
        assert server.wait() == 0
        rest = server.read_to_eof()
        assert [m["id"] for m in rest] == ["slow"]
        assert rest[0]["result"]["structuredContent"] == {"tag": 0, "slept": 1.0}
        _assert_quiet(server)


def test_sigterm_drains_in_flight_calls_and_stops_reading() -> None:
    with ServerProcess(argv=STRAY_ARGV) as server:
        server.initialize()
        _start_sleep(server, 1.5, "slow")
        server.signal(signal.SIGTERM)
        server.wait_for_stderr("draining")
        # stdin is still open, but the server reads no more: this one is never answered.
        with contextlib.suppress(BrokenPipeError):
            server.send_request("ping", id="late")
        assert server.wait() == 0
        rest = server.read_to_eof()
        assert [m["id"] for m in rest] == ["slow"]
        assert rest[0]["result"]["isError"] is False
        _assert_quiet(server)


def test_calls_still_running_after_the_grace_are_cancelled_with_an_answer() -> None:
    env = {"MCP_DRAIN_GRACE_S": "1", "MCP_CALL_DEADLINE_S": "600"}
    with ServerProcess(env=env, argv=STRAY_ARGV) as server:
        server.initialize()
        _start_sleep(server, 300, "stuck")
        server.signal(signal.SIGTERM)
        assert server.wait(timeout=20) == 0  # the call alone would take 300 s
        rest = server.read_to_eof()
        assert [m["id"] for m in rest] == ["stuck"]
        assert rest[0]["error"]["code"] == INTERNAL_ERROR
        assert slug_of(rest[0]["error"]["data"]) == "shutting-down"
        assert rest[0]["error"]["data"]["metadata"] == {"retryable": True}
        _assert_quiet(server)


def test_a_second_signal_cancels_in_flight_calls_at_once() -> None:
    # The grace (300 s) and the call (300 s) are far longer than the wait below: only the second
    # signal can end this in time.
    env = {"MCP_DRAIN_GRACE_S": "300", "MCP_CALL_DEADLINE_S": "600"}
    with ServerProcess(env=env, argv=STRAY_ARGV) as server:
        server.initialize()
        _start_sleep(server, 300, "a")
        _start_sleep(server, 300, "b")
        server.signal(signal.SIGTERM)
        server.wait_for_stderr("draining")
        server.signal(signal.SIGINT)  # SIGINT and SIGTERM are the same to the server
        assert server.wait(timeout=15) == 0
        rest = server.read_to_eof()
        assert sorted(m["id"] for m in rest) == ["a", "b"]
        for message in rest:
            assert message["error"]["code"] == INTERNAL_ERROR
            assert slug_of(message["error"]["data"]) == "shutting-down"
        _assert_quiet(server)


def test_sigterm_during_a_drain_started_by_eof_cancels_at_once_and_exits_zero() -> None:
    # What the SDK clients do at shutdown: close stdin, wait about 2 s, SIGTERM, 2 s more, SIGKILL.
    # Regression: the SIGTERM counted as a first signal, so the drain waited out its grace and the
    # process was killed. The grace and the call (300 s) are far longer than the wait below.
    env = {"MCP_DRAIN_GRACE_S": "300", "MCP_CALL_DEADLINE_S": "600"}
    with ServerProcess(env=env, argv=STRAY_ARGV) as server:
        server.initialize()
        _start_sleep(server, 300, "slow")
        server.close_stdin()
        server.wait_for_stderr("draining 1 in-flight call")
        server.signal(signal.SIGTERM)
        assert server.wait(timeout=15) == 0
        rest = server.read_to_eof()
        assert [m["id"] for m in rest] == ["slow"]
        assert rest[0]["error"]["code"] == INTERNAL_ERROR
        _assert_quiet(server)


def test_a_closed_stdout_ends_the_server() -> None:
    with tempfile.TemporaryFile() as stderr:
        proc = subprocess.Popen(
            STRAY_ARGV,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            env=server_env(),
            cwd=str(REPO),
        )
        try:
            assert proc.stdin is not None
            assert proc.stdout is not None
            initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}
            proc.stdin.write(json.dumps(initialize).encode() + b"\n")
            proc.stdin.flush()
            assert "result" in check_line(proc.stdout.readline())
            # The client goes away on the reading side only; stdin stays open.
            proc.stdout.close()
            with contextlib.suppress(BrokenPipeError):  # it may be gone before the last one
                for n in range(2, 5):
                    proc.stdin.write(
                        json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}).encode() + b"\n"
                    )
                    proc.stdin.flush()
            code = proc.wait(timeout=15)
            assert code == 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            if proc.stdin is not None:
                with contextlib.suppress(BrokenPipeError):
                    proc.stdin.close()
        stderr.seek(0)
        log = stderr.read().decode("utf-8", "replace")
        assert "stdout closed" in log, log
        assert "Traceback" not in log, log
        assert "Warning" not in log, log


def _stuck_server(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        STRAY_ARGV,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,  # never read: the pipe fills after ~64 KiB
        stderr=subprocess.DEVNULL,
        env=server_env(env),
        cwd=str(REPO),
    )


def _ping(n: int) -> bytes:
    return (
        json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping", "params": {"pad": "p" * 100}}).encode()
        + b"\n"
    )


def _finish(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with contextlib.suppress(BrokenPipeError):
                stream.close()


def test_eof_ends_the_server_even_when_the_client_never_reads_stdout() -> None:
    proc = _stuck_server({"MCP_DRAIN_GRACE_S": "1"})
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"".join(_ping(n) for n in range(5_000)))  # ~75 KiB of answers: more than the pipe
        proc.stdin.close()  # EOF: the drain starts, and its flush can never complete
        assert proc.wait(timeout=15) == 0
    finally:
        _finish(proc)


def test_two_signals_stop_the_server_even_when_the_client_never_reads_stdout() -> None:
    proc = _stuck_server({"MCP_DRAIN_GRACE_S": "300"})
    written = 0

    def keep_writing() -> None:
        # Until the server stops reading (back-pressure) and, later, exits (a broken pipe).
        nonlocal written
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            for n in range(10_000_000):
                proc.stdin.write(_ping(n))
                written += 1

    writer = threading.Thread(target=keep_writing, daemon=True)
    writer.start()
    try:
        # Wait until the writes stall: everything between the server's stdin and stdout is full.
        # Both pipes hold 64 KiB: a stall only counts once far more pings than fit in the stdin pipe
        # were written, so the server has run, answered and filled its stdout (not merely been slow
        # to start while the first 64 KiB waited for it).
        last = -1
        while written != last or written < 3_000:
            last = written
            time.sleep(0.5)
        assert writer.is_alive()
        proc.send_signal(signal.SIGTERM)
        time.sleep(0.5)
        assert proc.poll() is None  # the drain cannot flush to a client that does not read
        proc.send_signal(signal.SIGTERM)  # the second signal: stop at once
        assert proc.wait(timeout=15) == 0
        writer.join(timeout=15)
    finally:
        _finish(proc)


EARLY_SIGNAL_PROGRAM = """
import os, signal, sys
from mcp_suite import entry
entry.install_early_signal_handlers()          # what the entry point does first
os.kill(os.getpid(), signal.SIGTERM)            # a signal while the server is still loading
from mcp_suite.cli import main                  # the heavy imports
sys.exit(main([]))
"""


def test_sigterm_while_still_starting_is_a_clean_shutdown_not_a_kill() -> None:
    # Regression: a signal that arrived while the server was still importing its modules killed it
    # with the default action (exit -15) instead of starting the orderly drain.
    proc = subprocess.run(
        [*STRAY_ARGV[:3], "-c", EARLY_SIGNAL_PROGRAM],
        input=b"",
        capture_output=True,
        env=server_env(),
        cwd=str(REPO),
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert proc.stdout == b""
    assert b"draining" in proc.stderr


def test_the_entry_point_installs_the_early_handlers_before_loading_the_server() -> None:
    program = "import mcp_suite.entry, sys; print('mcp_suite.cli' in sys.modules)"
    proc = subprocess.run(
        [*STRAY_ARGV[:3], "-c", program], capture_output=True, env=server_env(), timeout=60, check=True
    )
    assert proc.stdout.strip() == b"False"  # the entry module itself loads nothing heavy
    source = (REPO / "mcp_suite" / "entry.py").read_text()
    body = source[source.index("def main()") :]
    assert body.index("install_early_signal_handlers()") < body.index("from mcp_suite.cli import")
