"""What the role can reach, appearing while the server serves: the re-audit stops the SQL tools.

The real server starts with a role that passes the audit and a short re-audit interval. Then a
careless superuser makes a hazard (every reach path of tests.support.reach, the search_path that
shadows `max`, a role that can create functions PUBLIC could run). Within a few intervals every SQL
surface refuses in-band with `role-refused` naming the finding, another tool still answers, and the
witness (a file the hazard's program would touch) shows that nothing ran; the same query then runs
the program through a plain session of the role, so the witness could have appeared. Removing the
hazard serves again. A creator the operator accepted in MCP_SQL_ACCEPT_FUNCTION_CREATORS is a
warning for the re-audit too, not a refusal.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from mcp_suite.demo.seed import OWNER_ROLE
from tests.support.client import ServerProcess, problem_of
from tests.support.pg import PROBE_ROLE, probe_dsn
from tests.support.reach import (
    CREATOR_ROLE,
    CREATORS,
    HAZARDS,
    REACH_SCHEMA,
    RUNS,
    SHADOW_STEP,
    SHADOWING_SEARCH_PATH,
    add_hazard,
    drop_creator,
    drop_hazards,
    drop_shadowing_max,
    make_hazard,
    make_shadowing_max,
)
from tests.support.reaudit import (
    COUNT,
    REAUDIT_S,
    REFUSED_LOG,
    SERVED_LOG,
    reauditing_server,
    refused,
    served,
    sql_surfaces,
    until,
)

pytestmark = pytest.mark.pg


def _refused_naming(server: ServerProcess, finding: str, named: str, sql: str) -> None:
    """Within a few intervals the SQL tools refuse, naming `finding` and `named`: each SQL surface
    (`sql` through read_only_sql and explain_sql with analyze), while system_metrics answers."""
    problem = problem_of(until(server, refused))
    assert problem["metadata"]["findings"] == [finding]
    assert named in problem["detail"]
    for name, refusal in sql_surfaces(server, sql):
        assert refusal.get("type", "").endswith(":role-refused"), (name, refusal)
        assert named in refusal["detail"], (name, refusal)
    assert served(server.call_tool("system_metrics"))
    server.wait_for_stderr(REFUSED_LOG)  # the gate shuts a moment before its log line is written
    assert server.stderr_text().count(REFUSED_LOG) == 1


def _served_again(server: ServerProcess) -> None:
    assert served(until(server, served))
    server.wait_for_stderr(SERVED_LOG)
    assert server.stderr_text().count(SERVED_LOG) == 1


def _runs_the_program(cluster: Cluster, sql: str) -> None:
    """`sql` through a plain session of the probe role (no server, no pin, no gate)."""
    with psycopg.connect(probe_dsn(cluster), autocommit=True) as conn:
        conn.execute(sql.encode())


# --- every reach path -------------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted(HAZARDS))
def test_a_reach_path_made_while_serving_stops_the_sql_tools_within_an_interval_and_nothing_runs(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path], path: str
) -> None:
    admin, witness = hazards
    with reauditing_server(probe_dsn(demo_cluster)) as server:
        expected = make_hazard(admin, path, str(witness))
        admin.execute(f"GRANT USAGE ON SCHEMA {REACH_SCHEMA} TO {PROBE_ROLE}".encode())
        run = RUNS.get(path, COUNT["sql"])
        _refused_naming(server, "reach", expected, run)
        if path in RUNS:
            assert not witness.exists()  # the calls above would have run the program
            _runs_the_program(demo_cluster, run)  # as a plain session of the role does
            assert witness.exists()
        drop_hazards(admin)
        _served_again(server)


# --- the search_path --------------------------------------------------------------------------------


def test_a_search_path_before_pg_catalog_set_while_serving_stops_the_sql_tools_and_the_shadow_never_runs(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, witness = hazards
    # util.max's definer step is an accepted risk (a warning): the search_path is the only refusal.
    make_shadowing_max(admin, str(witness))
    try:
        with reauditing_server(
            probe_dsn(demo_cluster), MCP_SQL_ACCEPT_DEFINER_FUNCTIONS=SHADOW_STEP
        ) as server:
            assert "accepted as a known risk by MCP_SQL_ACCEPT_DEFINER_FUNCTIONS" in server.stderr_text()
            admin.execute(SHADOWING_SEARCH_PATH.encode())
            max_words = "SELECT max(words) FROM docs.pages"
            _refused_naming(server, "search-path", "util come before pg_catalog", max_words)
            assert not witness.exists()
            _runs_the_program(demo_cluster, max_words)  # the shadow is real
            assert witness.exists()
            admin.execute(f"ALTER ROLE {PROBE_ROLE} RESET search_path".encode())
            _served_again(server)
    finally:
        drop_shadowing_max(admin)


# --- roles that can create functions the reader could run -------------------------------------------

# case -> (statements, the role they make a creator, the fix the audit prints, which lifts the refusal)
LATE_CREATORS: dict[str, tuple[list[str], str, str]] = {
    **{case: (statements, CREATOR_ROLE, fix) for case, (statements, fix) in CREATORS.items()},
    # The demo's owner loses the default privilege its seed gave it.
    "owner-default-privilege-removed": (
        [f"ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER_ROLE} GRANT EXECUTE ON FUNCTIONS TO PUBLIC"],
        OWNER_ROLE,
        f'ALTER DEFAULT PRIVILEGES FOR ROLE "{OWNER_ROLE}" REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;',
    ),
}


def _restore_creators(admin: psycopg.Connection[Any]) -> None:
    drop_creator(admin)
    admin.execute(
        f"ALTER DEFAULT PRIVILEGES FOR ROLE {OWNER_ROLE} REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC".encode()
    )


@pytest.mark.parametrize("case", sorted(LATE_CREATORS))
def test_a_function_creator_without_the_default_privilege_appearing_while_serving_stops_the_sql_tools(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path], case: str
) -> None:
    admin, _ = hazards
    statements, role, fix = LATE_CREATORS[case]
    try:
        with reauditing_server(probe_dsn(demo_cluster)) as server:
            for statement in statements:
                admin.execute(statement.encode())
            _refused_naming(server, "function-creator", role, COUNT["sql"])
            admin.execute(fix.encode())  # the printed fix, while the server serves
            _served_again(server)
    finally:
        _restore_creators(admin)


def test_a_creator_accepted_in_the_setting_is_no_refusal_for_the_re_audit_either(
    demo_cluster: Cluster, hazards: tuple[psycopg.Connection[Any], Path]
) -> None:
    admin, witness = hazards
    statements, _ = CREATORS["schema-create"]
    try:
        with reauditing_server(
            probe_dsn(demo_cluster), MCP_SQL_ACCEPT_FUNCTION_CREATORS=CREATOR_ROLE
        ) as server:
            for statement in statements:
                admin.execute(statement.encode())
            # Several intervals: served all along, no refusal logged.
            deadline = time.monotonic() + 5 * REAUDIT_S
            while time.monotonic() < deadline:
                assert served(server.call_tool("read_only_sql", COUNT))
                time.sleep(REAUDIT_S / 3)
            assert "the SQL tools stop serving" not in server.stderr_text()  # refused or unaudited
            # The accepted risk that appeared while serving is logged by the re-audit, once.
            accepted = "accepted as a known risk by MCP_SQL_ACCEPT_FUNCTION_CREATORS"
            server.wait_for_stderr(accepted)
            assert server.stderr_text().count(accepted) == 1
            # The re-audit does run and sees the creator: a reach hazard made now is refused, and
            # the refusal names the reach path alone, the creator a logged warning beside it.
            expected = add_hazard(admin, "aggregate-transition", str(witness))
            _refused_naming(server, "reach", expected, RUNS["aggregate-transition"])
            assert f"warning: the role {CREATOR_ROLE}" in server.stderr_text()
            assert "accepted as a known risk by MCP_SQL_ACCEPT_FUNCTION_CREATORS" in server.stderr_text()
            admin.execute(f"DROP SCHEMA {REACH_SCHEMA} CASCADE".encode())
            _served_again(server)
    finally:
        _restore_creators(admin)
