"""examples/sdk_client.py, run as a user runs it, against a real server reading the demo database:
over stdio (it starts the server itself) and over HTTP with the token `mcp-suite try-http` prints
(the trial: three commands, no code). It imports only public modules of the SDK."""

from __future__ import annotations

import ast
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from mcp_suite.demo.cluster import Cluster
from tests.support.client import REPO, server_env
from tests.support.issuer import free_port

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

EXAMPLE = REPO / "examples" / "sdk_client.py"


def _run_example(*args: str, env: dict[str, str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), *args],
        env=env,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def _answers(lines: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {line["tool"]: line for line in lines if "tool" in line}


def test_the_example_reads_the_database_over_stdio(demo_cluster: Cluster) -> None:
    env = server_env({"MCP_SQL_DSN": demo_cluster.reader_dsn, "PYTHONPATH": str(REPO)})
    lines = _run_example("stdio", env=env)
    assert {"read_only_sql", "system_metrics"} <= set(lines[0]["tools"])
    answers = _answers(lines)
    assert answers["read_only_sql"]["is_error"] is False
    assert answers["read_only_sql"]["result"]["rows"] == [[1]]
    assert answers["system_metrics"]["is_error"] is False


@contextmanager
def _try_http(env: dict[str, str]) -> Iterator[tuple[str, str]]:
    """`mcp-suite try-http` on a free loopback port, until the block ends: its URL and the token it
    printed (its log goes to a file: a pipe nobody reads could fill and stop it)."""
    port = free_port()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-m", "mcp_suite", "try-http"],
            env=server_env({**env, "MCP_HTTP_PORT": str(port), "PYTHONPATH": str(REPO)}),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
        )
        try:
            assert process.stdout is not None
            token = process.stdout.readline().strip()
            deadline = time.monotonic() + 60
            while True:
                errlog.seek(0)
                if "serving over HTTP" in errlog.read():
                    break
                assert process.poll() is None, "try-http stopped"
                assert time.monotonic() < deadline, "try-http did not start"
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp", token
        finally:
            process.terminate()
            assert process.wait(30) == 0
            if process.stdout is not None:
                process.stdout.close()


def test_the_example_reads_the_database_over_http_with_the_token_try_http_prints(
    demo_cluster: Cluster,
) -> None:
    with _try_http({"MCP_SQL_DSN": demo_cluster.reader_dsn}) as (url, token):
        claims = json.loads(_segment(token.split(".")[1]))
        assert (claims["sub"], claims["aud"]) == ("trial", url)
        assert set(claims["scope"].split()) == {"sql:read", "metrics:read"}
        lines = _run_example("http", url, env={**os.environ, "MCP_TOKEN": token})
        answers = _answers(lines)
        assert answers["read_only_sql"]["result"]["rows"] == [[1]]
        assert answers["system_metrics"]["is_error"] is False
        # Without the token the endpoint refuses: the trial is no open door.
        refused = subprocess.run(
            [sys.executable, str(EXAMPLE), "http", url],
            env={**os.environ, "MCP_TOKEN": "not-a-token"},
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert refused.returncode != 0


def _segment(text: str) -> bytes:
    import base64

    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@pytest.mark.parametrize("host", ["0.0.0.0", "192.0.2.1", "::"])  # refused, never bound
def test_try_http_refuses_any_address_but_loopback_in_one_line(host: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "try-http"],
        env=server_env({"MCP_HTTP_HOST": host, "PYTHONPATH": str(REPO)}),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == os.EX_CONFIG
    assert done.stdout == ""  # no token
    (line,) = done.stderr.splitlines()
    assert "try-http serves loopback only" in json.loads(line)["msg"]


def test_the_example_imports_only_public_modules() -> None:
    tree = ast.parse(EXAMPLE.read_text())
    modules = [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    modules += [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    assert modules
    for module in modules:
        assert not any(part.startswith("_") for part in module.split(".") if part != "__future__"), module
        assert not module.startswith(("mcp_suite", "tests")), module


def test_make_try_http_serves_the_demo_and_the_example_reads_it_with_the_printed_token() -> None:
    """The documented trial: `make try-http`, the token it printed, the example. Nothing else."""
    # Where the demo's PostgreSQL account can reach it (as test_make_run.py makes it).
    devdb = Path(tempfile.mkdtemp(prefix="mcp-suite-devdb-try-"))
    devdb.rmdir()
    port = free_port()
    env = {k: v for k, v in server_env().items() if not k.startswith(("MAKE", "MFLAGS"))}
    env.update({"MCP_DEVDB_DIR": str(devdb), "MCP_HTTP_PORT": str(port)})
    with tempfile.TemporaryFile("w+", encoding="utf-8") as errlog:
        process = subprocess.Popen(
            ["make", "-s", "-C", str(REPO), "try-http"],
            env=env,
            cwd=tempfile.gettempdir(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=errlog,
            text=True,
        )
        try:
            assert process.stdout is not None
            token = process.stdout.readline().strip()
            deadline = time.monotonic() + 120
            while True:
                errlog.seek(0)
                if "serving over HTTP" in errlog.read():
                    break
                assert process.poll() is None, "make try-http stopped"
                assert time.monotonic() < deadline, "make try-http did not start"
                time.sleep(0.1)
            url = f"http://127.0.0.1:{port}/mcp"
            answers = _answers(_run_example("http", url, env={**os.environ, "MCP_TOKEN": token}))
            assert answers["read_only_sql"]["result"]["rows"] == [[1]]  # the demo's first source
        finally:
            try:
                process.terminate()  # make passes SIGTERM on to the server, waits, then dies of it
                assert process.wait(60) == -signal.SIGTERM
                if process.stdout is not None:
                    process.stdout.close()
                errlog.seek(0)
                stopped = errlog.read()
                assert "shut down cleanly" in stopped
                assert "demo PostgreSQL stopped" in stopped
            finally:
                if devdb.exists():
                    Cluster.open_existing(devdb).destroy()
