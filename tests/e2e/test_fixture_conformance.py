"""The official MCP conformance suite against the fixture server (tests/support/fixture_server.py):
mcp-suite's own core and transports serving the suite's fixture tools, resources and prompts.

The suite drives a server over HTTP only (its `server` command takes `--url`, nothing else), so it
runs here against `serve-http`, for both requirement sets (2025-11-25 and 2026-07-28). Over stdio,
`test_the_fixture_scenarios_pass_over_stdio` makes the same scenarios' essential calls with the
project's own client and checks what the suite checks.

tests/e2e/conformance-fixture-expected-failures.json lists every scenario that does not pass here,
with its reason; the test fails when a scenario not listed fails, and when a listed one passes or
no longer runs. docs/operations/remote.md ("Conformance") holds the table.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import pytest

from tests.e2e.test_http_conformance import REVISIONS, failed_checks, run_suite
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import free_port

pytestmark = [pytest.mark.e2e]

EXPECTED_FAILURES: Final = Path(__file__).with_name("conformance-fixture-expected-failures.json")
# Only the fixtures: no database, no folder, no metrics tool.
FIXTURE_ENV: Final = {"MCP_METRICS_ENABLED": "false"}


@pytest.fixture(scope="module")
def fixture_server() -> Iterator[HttpServer]:
    port = free_port()
    env = {**FIXTURE_ENV, "MCP_HTTP_ALLOWED_ORIGINS": f"http://127.0.0.1:{port}"}
    with open_http_server(None, env, port=port, module="tests.support.fixture_server") as running:
        yield running


@pytest.mark.parametrize("revision", REVISIONS)
def test_the_suite_fails_only_the_listed_scenarios_against_the_fixture_server(
    revision: str, fixture_server: HttpServer, tmp_path: Path
) -> None:
    expected: dict[str, str] = json.loads(EXPECTED_FAILURES.read_text())[revision]
    assert all(reason.strip() for reason in expected.values()), "every listed scenario says why"
    results = run_suite(fixture_server.url, revision, tmp_path)
    failing = {name: failed_checks(checks) for name, checks in results.items() if failed_checks(checks)}

    unexpected = {name: ids for name, ids in failing.items() if name not in expected}
    assert not unexpected, f"{revision}: scenarios that fail and are not listed: {unexpected}"
    passing_but_listed = sorted(name for name in expected if name in results and name not in failing)
    assert not passing_but_listed, f"{revision}: listed scenarios that now pass: {passing_but_listed}"
    not_run = sorted(set(expected) - set(results))
    assert not not_run, f"{revision}: listed scenarios that no longer run: {not_run}"
    # What the fixtures are for: these pass.
    assert {
        "tools-call-simple-text",
        "tools-call-image",
        "tools-call-audio",
        "tools-call-embedded-resource",
        "tools-call-mixed-content",
        "tools-call-error",
        "resources-read-text",
        "resources-read-binary",
        "resources-templates-read",
        "prompts-list",
        "prompts-get-simple",
        "prompts-get-with-args",
        "prompts-get-embedded-resource",
        "prompts-get-with-image",
    } <= set(results) - set(failing)
