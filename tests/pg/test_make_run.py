"""`make run` as clients start it: from any directory, stdout carries MCP frames and nothing else;
SIGINT sent to make's PID alone stops the server as SIGTERM does (mcp_suite/make_relay.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp_suite.demo.cluster import Cluster
from tests.support.client import ServerProcess
from tests.support.pg import LONG_QUERY
from tests.support.wire import check_line, initialize_request, slug_of

pytestmark = pytest.mark.pg

REPO = Path(__file__).resolve().parents[2]
INIT = initialize_request("make-run-test")


def _make(*args: str, devdb: Path, stdin: bytes) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(
        [shutil.which("make") or "make", *args],
        env={**env, "MCP_DEVDB_DIR": str(devdb)},
        input=stdin,
        capture_output=True,
        cwd=tempfile.gettempdir(),  # as a client does: not the checkout
        timeout=120,
        check=False,
    )


def test_make_s_c_dir_run_writes_nothing_but_frames_to_stdout() -> None:
    devdb = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-make-"))
    devdb.rmdir()
    try:
        proc = _make("-s", "-C", str(REPO), "run", devdb=devdb, stdin=json.dumps(INIT).encode() + b"\n")
        assert proc.returncode == 0, proc.stderr.decode()
        lines = proc.stdout.splitlines(keepends=True)
        assert len(lines) == 1
        check_line(lines[0])
        result = json.loads(lines[0])["result"]
        assert result["serverInfo"]["name"] == "mcp-suite"
        # The demo's two databases, named for the model with their descriptions (its configuration file).
        assert "one of: docs: Documentation site (demo)" in result["instructions"]
        assert "; ops: Operations (demo)" in result["instructions"]
    finally:
        if devdb.exists():
            Cluster.open_existing(devdb).destroy()


def test_make_c_dir_run_refuses_with_the_fix_instead_of_serving_a_corrupted_stream() -> None:
    devdb = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-make-"))
    try:
        proc = _make("-C", str(REPO), "run", devdb=devdb, stdin=json.dumps(INIT).encode() + b"\n")
        assert proc.returncode == 2
        assert b"make -s -C DIR run" in proc.stderr
        assert b"serving" not in proc.stderr  # the server never started
        assert not any(devdb.iterdir())  # nor the database
        assert b"jsonrpc" not in proc.stdout
    finally:
        devdb.rmdir()


# The query runs for minutes and its statement timeout is 2 minutes: only the drain (1 s of grace,
# then the call is cancelled) can answer it within the waits below.
_SLOW_ENV = {"MCP_SQL_STATEMENT_TIMEOUT_MS": "120000", "MCP_CALL_DEADLINE_S": "300", "MCP_DRAIN_GRACE_S": "1"}


@contextlib.contextmanager
def _make_run(*, new_group: bool = False) -> Iterator[ServerProcess]:
    """`make -s -C REPO run` (its pid is make's: `env` execs it) with a slow SQL call in flight."""
    devdb = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-make-"))
    devdb.rmdir()
    # SIGINT at its default, as a client's child has it: a runner started in the background by a
    # shell without job control ignores SIGINT, and make would inherit that (the pid stays make's:
    # python execs env, which execs make).
    argv = [
        sys.executable,
        "-c",
        "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
        "os.execvp(sys.argv[1], sys.argv[1:])",
        *("env", "-u", "MAKEFLAGS", "-u", "MAKELEVEL", "-u", "MFLAGS", shutil.which("make") or "make"),
    ]
    try:
        with ServerProcess(
            env={"MCP_DEVDB_DIR": str(devdb), **_SLOW_ENV},
            argv=[*argv, "-s", "-C", str(REPO), "run"],
            cwd=Path(tempfile.gettempdir()),
            new_group=new_group,
        ) as server:
            init = server.send_request("initialize", INIT["params"])
            assert "result" in server.response(init, timeout=120)  # the first run starts PostgreSQL
            server.notify("notifications/initialized")
            server.send_request(
                "tools/call",
                {"name": "read_only_sql", "arguments": {"source": "docs", "sql": LONG_QUERY}},
                id="slow",
            )
            # Lines are handled in order: once the ping behind it is answered, the call runs.
            assert server.request("ping")["result"] == {}
            yield server
    finally:
        if devdb.exists():
            Cluster.open_existing(devdb).destroy()


def _answered_as_shutting_down(server: ServerProcess) -> None:
    (answer,) = [m for m in server.read_to_eof(timeout=60) if m.get("id") == "slow"]
    assert "error" in answer, answer
    assert slug_of(answer["error"]["data"]) == "shutting-down", answer


def test_sigint_to_make_alone_stops_the_server_as_sigterm_does() -> None:
    with _make_run() as server:
        server.signal(signal.SIGINT)  # to make's pid only, as a client stops what it started
        _answered_as_shutting_down(server)
        # make waits for its child, then dies of the SIGINT it got.
        assert server.wait(timeout=60) == -signal.SIGINT
        stderr = server.stderr_text()
        assert "signal SIGTERM: draining" in stderr, stderr  # the relay's SIGTERM
        assert "while draining" not in stderr, stderr


def test_ctrl_c_reaches_the_server_once_and_is_not_relayed_again() -> None:
    # A terminal's Ctrl-C is SIGINT to the whole foreground group: the server gets it itself, and
    # a second signal would cancel its calls at once instead of draining them.
    with _make_run(new_group=True) as server:
        os.killpg(server.pid, signal.SIGINT)
        _answered_as_shutting_down(server)
        assert server.wait(timeout=60) == -signal.SIGINT
        stderr = server.stderr_text()
        assert "signal SIGINT: draining" in stderr, stderr
        assert "while draining" not in stderr, stderr
        assert "signal SIGTERM" not in stderr, stderr
