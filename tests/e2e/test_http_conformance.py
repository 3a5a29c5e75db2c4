"""The official MCP conformance suite's server scenarios against `mcp-suite serve-http`.

The suite (`@modelcontextprotocol/conformance`, pinned in tests/support/conformance/, on the Node 22
that lock brings) runs every server scenario a protocol revision requires (`--requirements`), at
that revision's wire: 2025-11-25 (an `initialize` session) and 2026-07-28 (stateless, per-request
`_meta`). It sends no bearer token, so the server runs with `MCP_HTTP_AUTH=none` (loopback only),
with every tool group: the SQL tools on the throwaway cluster, the folder tools, the metrics tool.
`MCP_HTTP_ALLOWED_ORIGINS` names the endpoint's own origin, as a deployment that a browser page on
it calls would: the DNS-rebinding scenario then checks that this origin is served and a foreign one
is refused.

Most scenarios call fixtures of the suite's own reference server (tools such as `test_simple_text`,
prompts, subscriptions, sampling): they fail here by design. tests/e2e/conformance-expected-failures.json
lists every scenario that does not pass, with its reason. The test fails when a scenario that is not
listed fails, and when a listed one passes or no longer runs, so the list stays true.
docs/operations/remote.md ("Conformance") holds the table. Those scenarios run against the fixture
server, built on the same core, in tests/e2e/test_fixture_conformance.py.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import pytest

from mcp_suite.demo.cluster import Cluster
from tests.support.client import REPO, server_env
from tests.support.conformance import conformance_command
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import free_port

pytestmark = [pytest.mark.e2e, pytest.mark.pg]

EXPECTED_FAILURES: Final = Path(__file__).with_name("conformance-expected-failures.json")
REVISIONS: Final = ("2025-11-25", "2026-07-28")
# A scenario's results are saved as `server-<scenario>-<ISO timestamp>/checks.json`.
_RESULT_DIR: Final = re.compile(r"^server-(?P<scenario>.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$")


@pytest.fixture(scope="module")
def server(demo_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    data = tmp_path_factory.mktemp("conformance-data")
    (data / "notes.txt").write_text("hello\n")
    port = free_port()
    env = {
        "MCP_SQL_DSN": demo_cluster.reader_dsn,
        "MCP_SAFE_DATA_DIR": str(data),
        "MCP_HTTP_ALLOWED_ORIGINS": f"http://127.0.0.1:{port}",
    }
    with open_http_server(None, env, port=port) as running:
        yield running


def run_suite(url: str, revision: str, out: Path) -> dict[str, list[dict[str, Any]]]:
    """Every scenario `revision` requires, run against `url`: scenario -> its checks."""
    proc = subprocess.run(
        [*conformance_command(), "server", "--url", url, "--requirements", revision, "-o", str(out)],
        capture_output=True,
        text=True,
        env=server_env({"NO_COLOR": "1"}),
        cwd=REPO,
        timeout=600,
        check=False,
    )
    # The suite exits 1 when any scenario fails: what failed is read from its results, below.
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]
    results: dict[str, list[dict[str, Any]]] = {}
    for checks in sorted(out.glob("server-*/checks.json")):
        matched = _RESULT_DIR.match(checks.parent.name)
        assert matched is not None, checks.parent.name
        results[matched["scenario"]] = json.loads(checks.read_text())
    assert results, proc.stdout[-3000:] + proc.stderr[-3000:]
    return results


def failed_checks(checks: list[dict[str, Any]]) -> list[str]:
    """The ids of the checks that failed (a scenario passes when none did; warnings and notes
    do not fail it, as in the suite's own summary)."""
    return [check["id"] for check in checks if check.get("status") == "FAILURE"]


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_conformance_suite_fails_only_the_listed_scenarios(
    revision: str, server: HttpServer, tmp_path: Path
) -> None:
    expected: dict[str, str] = json.loads(EXPECTED_FAILURES.read_text())[revision]
    assert all(reason.strip() for reason in expected.values()), "every listed scenario says why"
    results = run_suite(server.url, revision, tmp_path)
    failing = {name: failed_checks(checks) for name, checks in results.items() if failed_checks(checks)}

    unexpected = {name: ids for name, ids in failing.items() if name not in expected}
    assert not unexpected, f"{revision}: scenarios that fail and are not listed: {unexpected}"
    passing_but_listed = sorted(name for name in expected if name in results and name not in failing)
    assert not passing_but_listed, f"{revision}: listed scenarios that now pass: {passing_but_listed}"
    not_run = sorted(set(expected) - set(results))
    assert not not_run, f"{revision}: listed scenarios that no longer run: {not_run}"
    # The scenarios that pass are the ones the server's own features are for: they must run.
    assert {"tools-list", "dns-rebinding-protection"} <= set(results) - set(failing)
