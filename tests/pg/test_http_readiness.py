"""`/healthz` and `/readyz` of `mcp-suite serve-http`, seen directly and by HAProxy (the shipped
template, started through the harness): a replica whose role the re-audit refuses answers 503 and
leaves the rotation, the other replica keeps serving, and once the grant is revoked the replica is
ready and back (with one source, it is the whole of what the replica serves). The probes need no
token and say nothing beyond ready or not and each source's condition."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any, Final

import psycopg
import pytest

from mcp_suite.demo.cluster import Cluster
from tests.support.haproxy import HaProxy, open_haproxy
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import TestIssuer, free_port, open_issuer
from tests.support.pg import PROBE_ROLE, probe_dsn

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

REAUDIT_S: Final = "0.3"
HAZARD: Final = f"GRANT INSERT ON docs.pages TO {PROBE_ROLE}"
FIX: Final = f"REVOKE INSERT ON docs.pages FROM {PROBE_ROLE}"


def ask(server: HttpServer, path: str, method: str = "GET") -> tuple[int, bytes, str]:
    """(status, body, content-type) of `path` on the replica itself, without a token."""
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # loopback only
            return answer.status, answer.read(), answer.headers.get("content-type", "")
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read(), refused.headers.get("content-type", "")


def wait_probe(server: HttpServer, path: str, status: int, timeout_s: float = 20) -> tuple[int, bytes, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        seen = ask(server, path)
        if seen[0] == status or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)


@pytest.fixture
def replicas(
    demo_cluster: Cluster, probe: psycopg.Connection[Any]
) -> Iterator[tuple[HaProxy, HttpServer, HttpServer, TestIssuer]]:
    """HAProxy before two replicas with bearer tokens: mcp1 serves the probe role (its grants
    change in the test), mcp2 the demo's reader; mcp3's address has nothing listening."""
    with ExitStack() as stack:
        issuer = stack.enter_context(open_issuer())
        ports = [free_port(), free_port(), free_port()]
        assert len(set(ports)) == 3
        proxy = stack.enter_context(open_haproxy([f"127.0.0.1:{port}" for port in ports]))
        common = {"MCP_SQL_REAUDIT_INTERVAL_S": REAUDIT_S, "MCP_HTTP_RESOURCE_URI": proxy.url}
        first = stack.enter_context(
            open_http_server(issuer, {**common, "MCP_SQL_DSN": probe_dsn(demo_cluster)}, port=ports[0])
        )
        second = stack.enter_context(
            open_http_server(issuer, {**common, "MCP_SQL_DSN": demo_cluster.reader_dsn}, port=ports[1])
        )
        yield proxy, first, second, issuer


def test_a_replica_whose_audit_refuses_leaves_the_rotation_until_it_passes_again(
    replicas: tuple[HaProxy, HttpServer, HttpServer, TestIssuer], probe: psycopg.Connection[Any]
) -> None:
    proxy, first, second, _issuer = replicas
    proxy.wait_states({"mcp1": "UP", "mcp2": "UP", "mcp3": "DOWN"})
    assert probe_status(first) == (200, b"ok\nsource default: serving\n")
    assert ask(first, "/healthz")[:2] == (200, b"ok\n")

    probe.execute(HAZARD)
    status, body, content_type = wait_probe(first, "/readyz", 503)
    # "not ready" and the source's condition: no finding, no role.
    assert (status, body, content_type) == (503, b"not ready\nsource default: refused\n", "text/plain")
    proxy.wait_states({"mcp1": "DOWN", "mcp2": "UP"})
    assert ask(first, "/healthz")[:2] == (200, b"ok\n")  # it still serves: alive, not ready
    assert probe_status(second) == (200, b"ok\nsource default: serving\n")

    probe.execute(FIX)
    assert wait_probe(first, "/readyz", 200)[:2] == (200, b"ok\nsource default: serving\n")
    proxy.wait_states({"mcp1": "UP", "mcp2": "UP"})
    # The probes were never logged as requests (no audit record, no refusal line).
    assert not [
        r for r in first.records() if "/readyz" in str(r.get("msg", "")) or r.get("event") == "request"
    ]


def test_the_probes_take_no_token_and_only_get(
    replicas: tuple[HaProxy, HttpServer, HttpServer, TestIssuer],
) -> None:
    _proxy, first, _second, _issuer = replicas
    assert ask(first, "/mcp")[0] == 401  # the MCP endpoint still wants a token
    assert ask(first, "/healthz", "HEAD")[0] == 200
    assert ask(first, "/readyz", "POST")[0] == 405


def probe_status(server: HttpServer) -> tuple[int, bytes]:
    status, body, _ = wait_probe(server, "/readyz", 200)
    return status, body
