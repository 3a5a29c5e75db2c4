"""`make run` as clients start it: from any directory, stdout carries MCP frames and nothing else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from mcp_suite.devdb.cluster import Cluster
from tests.support.wire import check_line, initialize_request

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
        assert json.loads(lines[0])["result"]["serverInfo"]["name"] == "mcp-suite"
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
