"""What opening `read_only_sql` does before `initialize` is answered: the role audit and nothing more.

The audit judges the bodies of the views and functions the role reaches with the SQL policy's
parsers (issue 51), so they load with it. The executor module, psycopg_pool, the pool's threads and
connections, and the argument models wait for the warm-up after the handshake (or the first call);
the warm-up then builds them once.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.settings import SecretStr, Settings
from mcp_suite.tools.sql.opener import open_sql
from tests.support.client import REPO, server_env

pytestmark = pytest.mark.pg

PROGRAM = """
import sys, threading
from mcp_suite.settings import load_settings
from mcp_suite.tools.registry import open_registry

def pool_threads():
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("mcp-suite-sql"))

with open_registry(load_settings()) as registry:
    for name in ("mcp_suite.tools.sql.engine.executor", "psycopg_pool", "sqlglot", "pglast", "pydantic"):
        print(name, name in sys.modules)
    print("threads", pool_threads())
    for step in registry.warm_up:
        step()
    for name in ("mcp_suite.tools.sql.engine.executor", "psycopg_pool", "sqlglot", "pglast", "pydantic"):
        print(name, name in sys.modules)
    print("threads", len(pool_threads()) > 0)
"""


def test_opening_the_tool_audits_only_and_the_warm_up_builds_the_rest(demo_cluster: Cluster) -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROGRAM],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env=server_env({"MCP_SQL_DSN": demo_cluster.reader_dsn, "MCP_METRICS_ENABLED": "false"}),
        cwd=REPO,
    ).stdout.splitlines()
    assert out == [
        "mcp_suite.tools.sql.engine.executor False",
        "psycopg_pool False",
        "sqlglot True",  # the audit's judgement of view definitions
        "pglast True",  # and of function bodies
        "pydantic False",
        "threads []",
        "mcp_suite.tools.sql.engine.executor True",
        "psycopg_pool True",
        "sqlglot True",
        "pglast True",
        "pydantic True",
        "threads True",
    ]


def test_the_warm_up_opens_the_pool_and_closing_the_tool_closes_it(demo_cluster: Cluster) -> None:
    settings = Settings(sql_dsn=SecretStr(demo_cluster.reader_dsn), metrics_enabled=False)
    before = _pool_threads()
    with open_sql(settings) as toolset:
        assert toolset is not None
        for step in (*toolset.warm_up, *toolset.warm_up):  # a repeated step builds nothing twice
            step()
        opened = _pool_threads()
        assert len(opened) > len(before)
    for _ in range(100):  # the pool's workers leave right after it is closed
        if _pool_threads() == before:
            break
        time.sleep(0.05)
    assert _pool_threads() == before
    with pytest.raises(RuntimeError):
        toolset.warm_up[0]()  # the executor is not rebuilt after the tool closed


def _pool_threads() -> list[str]:
    return sorted(t.name for t in threading.enumerate() if t.name.startswith("mcp-suite-sql"))


def test_a_tool_that_never_served_a_call_closes_without_opening_a_pool(demo_cluster: Cluster) -> None:
    settings = Settings(sql_dsn=SecretStr(demo_cluster.reader_dsn), metrics_enabled=False)
    before = _pool_threads()
    with open_sql(settings) as toolset:
        assert toolset is not None
        assert _pool_threads() == before  # opening the tool started no pool
    assert _pool_threads() == before  # and closing it had none to close
