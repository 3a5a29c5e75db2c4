"""The role guide's event trigger fires in every session (issue 51): migration tools run their DDL with
`session_replication_role = replica`, where an event trigger left at the default `ENABLE` is
silent and the change waited for the whole re-audit interval. The guide now makes it `ENABLE
ALWAYS`, the real server hears a change made in such a session long before its interval, and the
audit warns (with the fix) when it finds the trigger in another state."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from tests.support.client import REPO, problem_of, server_env
from tests.support.pg import probe_dsn
from tests.support.reaudit import (
    drop_event_trigger,
    install_event_trigger,
    reauditing_server,
    refused,
    served,
    until,
)

pytestmark = pytest.mark.pg

HELPER = "docs.fmt_replica"
INTERVAL_S = "60"  # the longest interval: a refusal within `until`'s bound is the trigger's


@pytest.fixture
def event_trigger(admin: psycopg.Connection[Any]) -> Iterator[None]:
    install_event_trigger(admin)
    try:
        yield
    finally:
        drop_event_trigger(admin)
        admin.execute(f"DROP FUNCTION IF EXISTS {HELPER}(text)".encode())


def test_the_guides_event_trigger_is_enabled_always(
    admin: psycopg.Connection[Any], event_trigger: None
) -> None:
    row = admin.execute(
        "SELECT evtenabled FROM pg_event_trigger WHERE evtname = 'mcp_suite_role_audit'"
    ).fetchone()
    assert row == ("A",)


def test_a_change_made_in_a_replica_session_is_refused_long_before_the_interval(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], event_trigger: None
) -> None:
    probe.execute(
        f"CREATE FUNCTION {HELPER}(t text) RETURNS text LANGUAGE sql"
        " SET search_path = pg_catalog AS $$ SELECT t || ' by ' || current_user $$".encode()
    )
    probe.execute(f"GRANT EXECUTE ON FUNCTION {HELPER}(text) TO PUBLIC".encode())
    with reauditing_server(probe_dsn(demo_cluster), MCP_SQL_REAUDIT_INTERVAL_S=INTERVAL_S) as server:
        # As a migration tool runs it: a session in replica mode (a superuser's setting).
        with psycopg.connect(demo_cluster.admin_dsn, autocommit=True) as migration:
            migration.execute("SET session_replication_role = replica")
            migration.execute(f"ALTER FUNCTION {HELPER}(text) SECURITY DEFINER".encode())
        # `until` gives up after a few seconds, far inside the 60 s interval: only the
        # notification can have made the server audit again by then.
        problem = problem_of(until(server, refused))
        assert problem["metadata"]["findings"] == ["definer-function"]
        probe.execute(f"ALTER FUNCTION {HELPER}(text) SECURITY INVOKER".encode())
        assert served(until(server, served))


@pytest.mark.parametrize("state", ["ENABLE", "ENABLE REPLICA", "DISABLE"])
def test_check_role_warns_with_the_fix_when_the_trigger_would_not_fire_in_every_session(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], event_trigger: None, state: str
) -> None:
    probe.execute(f"ALTER EVENT TRIGGER mcp_suite_role_audit {state}".encode())
    done = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "check-role"],
        env=server_env({"MCP_SQL_DSN": probe_dsn(demo_cluster), "PYTHONPATH": str(REPO)}),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=REPO,
    )
    assert done.returncode == os.EX_OK, done.stdout + done.stderr
    assert "not ENABLE ALWAYS" in done.stdout, done.stdout
    assert "ALTER EVENT TRIGGER mcp_suite_role_audit ENABLE ALWAYS;" in done.stdout
