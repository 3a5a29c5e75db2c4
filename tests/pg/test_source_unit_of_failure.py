"""A source is the unit of failure (issue 53): two replicas behind HAProxy (the shipped template,
started through the harness), each serving two sources of one configuration file, `shop` (the
demo's reader) and `hr` (the probe role). When the re-audit refuses `hr`, a fault every replica
shares, both replicas stay in the rotation, `/readyz` names each source's condition, `shop` is
served through the proxy and `hr`'s calls are refused naming it; the logs of a two-source start
name each source, and the start-up summary says what each one does."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any, Final

import httpx2
import psycopg
import pytest
import trio
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.demo.cluster import Cluster
from mcp_suite.protocol.mcp import MODERN_VERSION
from tests.support.haproxy import HaProxy, open_haproxy
from tests.support.http_server import HttpServer, open_http_server
from tests.support.issuer import TestIssuer, free_port, open_issuer
from tests.support.pg import PROBE_ROLE, probe_dsn

pytestmark = [pytest.mark.pg, pytest.mark.e2e]

HAZARD: Final = f"GRANT INSERT ON docs.pages TO {PROBE_ROLE}"
FIX: Final = f"REVOKE INSERT ON docs.pages FROM {PROBE_ROLE}"
META: Final = {
    "io.modelcontextprotocol/protocolVersion": MODERN_VERSION,
    "io.modelcontextprotocol/clientCapabilities": {},
}


def write_config(directory: Path, sources: dict[str, str], **more: str) -> Path:
    """A configuration file naming `sources` (name -> DSN), each password in a file of its own."""
    text = []
    for name, dsn in sources.items():
        options = conninfo_to_dict(dsn)
        password = str(options.pop("password"))
        secret = directory / f"{name}.password"
        secret.write_text(password + "\n")
        secret.chmod(0o600)
        bare = make_conninfo(**{k: str(v) for k, v in options.items()})
        text.append(
            f'[[sources]]\nname = "{name}"\ndescription = "The {name} database"\ndsn = "{bare}"\n'
            f'password_file = "{secret}"\n' + "".join(f"{k} = {v}\n" for k, v in more.items())
        )
    path = directory / "sources.toml"
    path.write_text("\n".join(text))
    return path


def probe_of(server: HttpServer, path: str = "/readyz") -> tuple[int, str]:
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}")
    try:
        with urllib.request.urlopen(request, timeout=5) as answer:  # loopback only
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def wait_body(server: HttpServer, wanted: str, timeout_s: float = 20) -> tuple[int, str]:
    deadline = time.monotonic() + timeout_s
    while True:
        seen = probe_of(server)
        if wanted in seen[1] or time.monotonic() > deadline:
            return seen
        time.sleep(0.1)


@pytest.fixture
def fleet(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], tmp_path: Path
) -> Iterator[tuple[HaProxy, list[HttpServer], TestIssuer]]:
    config = write_config(
        tmp_path, {"shop": demo_cluster.reader_dsn, "hr": probe_dsn(demo_cluster)}, reaudit_interval_s="1.0"
    )
    with ExitStack() as stack:
        issuer = stack.enter_context(open_issuer())
        ports = [free_port(), free_port(), free_port()]
        proxy = stack.enter_context(open_haproxy([f"127.0.0.1:{port}" for port in ports]))
        env = {"MCP_CONFIG": str(config), "MCP_HTTP_RESOURCE_URI": proxy.url}
        replicas = [stack.enter_context(open_http_server(issuer, env, port=port)) for port in ports[:2]]
        yield proxy, replicas, issuer


async def call(raw: httpx2.AsyncClient, url: str, token: str, source: str) -> httpx2.Response:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "read_only_sql",
            "arguments": {"sql": "SELECT 1 AS one", "source": source},
            "_meta": META,
        },
    }
    headers = {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN_VERSION,
        "Mcp-Method": "tools/call",
        "Mcp-Name": "read_only_sql",
    }
    return await raw.post(url, json=body, headers=headers)


async def test_one_refused_source_takes_no_replica_out_of_the_rotation_and_the_other_serves(
    fleet: tuple[HaProxy, list[HttpServer], TestIssuer], probe: psycopg.Connection[Any]
) -> None:
    proxy, replicas, issuer = fleet
    proxy.wait_states({"mcp1": "UP", "mcp2": "UP", "mcp3": "DOWN"})
    for replica in replicas:
        assert probe_of(replica) == (200, "ok\nsource shop: serving\nsource hr: serving\n")

    probe.execute(HAZARD)
    for replica in replicas:
        assert wait_body(replica, "hr: refused") == (200, "ok\nsource shop: serving\nsource hr: refused\n")
    # Three of HAProxy's checks (one a second; two failures take a replica out) see the refusal.
    time.sleep(3.5)
    assert {name: state for name, state in proxy.states().items() if name != "mcp3"} == {
        "mcp1": "UP",
        "mcp2": "UP",
    }
    token = issuer.token(proxy.url, sub="ana", scope="sql:read")
    with trio.fail_after(60):
        async with httpx2.AsyncClient() as raw:
            served = [await call(raw, proxy.url, token, "shop") for _ in range(4)]
            refused = await call(raw, proxy.url, token, "hr")
    assert [answer.status_code for answer in served] == [200] * 4
    assert all(answer.json()["result"]["isError"] is False for answer in served)
    result = refused.json()["result"]
    assert result["isError"] is True
    problem = json.loads(result["content"][0]["text"])
    assert problem["type"] == "urn:mcp-suite:problem:role-refused"
    assert problem["metadata"]["source"] == "hr"

    probe.execute(FIX)
    for replica in replicas:
        assert wait_body(replica, "hr: serving")[0] == 200
    # Every line the re-audit wrote about hr names it; none about shop changed.
    for replica in replicas:
        lines = replica.messages_once("passes the audit again")
        stopped = [line for line in lines if "the role audit refused" in line]
        assert stopped, lines
        assert all(line.startswith("read_only_sql: source 'hr': ") for line in stopped), stopped
        again = [line for line in lines if "passes the audit again" in line]
        assert again, lines
        assert all(line.startswith("read_only_sql: source 'hr': ") for line in again), again


def test_a_replica_none_of_whose_sources_serves_is_not_ready(demo_cluster: Cluster, tmp_path: Path) -> None:
    config = write_config(tmp_path, {"gone": "host=127.0.0.1 port=1 dbname=x user=x password=x"})
    with open_http_server(None, {"MCP_CONFIG": str(config)}) as server:
        status, body = probe_of(server)
        assert (status, body) == (503, "not ready\nsource gone: unreachable\n")
        assert probe_of(server, "/healthz") == (200, "ok\n")


def test_the_logs_of_a_two_source_start_name_each_source_and_the_summary_is_true(
    demo_cluster: Cluster, probe: psycopg.Connection[Any], tmp_path: Path
) -> None:
    probe.execute(HAZARD)  # hr's role can write: refused at start-up, the others serve
    wrong = demo_cluster.reader_dsn.replace("password=", "password=wrong")
    sources = {"shop": demo_cluster.reader_dsn, "hr": probe_dsn(demo_cluster), "pay": wrong}
    config = write_config(tmp_path, sources)
    with open_http_server(None, {"MCP_CONFIG": str(config)}) as server:
        status, body = probe_of(server)
        records = server.records()
    assert status == 200
    assert body == "ok\nsource shop: serving\nsource hr: refused\nsource pay: login-refused\n"
    lines = [str(r.get("msg", "")) for r in records]
    assert not [line for line in lines if "MCP_SQL_DSN" in line], lines
    login = [line for line in lines if "refusing the login" in line]
    assert login, lines
    assert all(line.startswith("read_only_sql: source 'pay': the database is ") for line in login)
    stopped = [line for line in lines if "the SQL tools stop serving" in line]
    assert stopped, lines
    assert all(line.startswith("read_only_sql: source 'hr': ") for line in stopped), stopped
    summary = [line for line in lines if line.startswith("read_only_sql: sources at start-up: ")]
    assert len(summary) == 1
    assert summary[0].startswith(
        "read_only_sql: sources at start-up: shop serving; hr refused by the role audit"
    )
    assert "; pay refusing the server's login" in summary[0]


# -- failures the model can act on ------------------------------------------------------------------


def _sdk_parameters(config: Path) -> Any:
    from mcp.client.stdio import StdioServerParameters

    from tests.support.client import REPO

    return StdioServerParameters(
        command=sys.executable,
        args=["-X", "dev", "-m", "mcp_suite", "--config", str(config)],
        env={"MCP_METRICS_ENABLED": "false", "PYTHONPATH": "."},
        cwd=REPO,
    )


def _document(result: Any) -> dict[str, Any]:
    """The problem document of an SDK `CallToolResult` with isError (its one text block)."""
    document: dict[str, Any] = json.loads(result.content[0].text)
    return document


async def test_an_outage_reaches_the_sdk_client_as_a_tool_result_naming_its_source(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    from mcp import Client

    gone = "host=127.0.0.1 port=1 dbname=x user=x password=x"
    config = write_config(tmp_path, {"shop": demo_cluster.reader_dsn, "gone": gone})
    with trio.fail_after(60):
        async with Client(_sdk_parameters(config)) as client:
            # The SDK raises on a JSON-RPC error; a tool result with isError reaches the model.
            down = await client.call_tool("read_only_sql", {"sql": "SELECT 1 AS one", "source": "gone"})
            served = await client.call_tool("read_only_sql", {"sql": "SELECT 1 AS one", "source": "shop"})
    assert down.is_error is True
    problem = _document(down)
    assert problem["type"] == "urn:mcp-suite:problem:database-unavailable"
    assert problem["metadata"]["source"] == "gone"
    assert problem["metadata"]["retryable"] is True
    assert "retry_after_s" in problem["metadata"]
    assert served.is_error is False


async def test_a_source_that_reads_only_through_an_identity_map_is_not_offered_over_stdio(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    from mcp import Client

    config = write_config(tmp_path, {"shop": demo_cluster.reader_dsn, "crm": demo_cluster.reader_dsn})
    config.write_text(
        config.read_text()
        + '\n[sources.identity]\n\n[[sources.identity.rules]]\ngroup = "sales"\nrole = "mcp_sales"\n'
    )
    with trio.fail_after(60):
        async with Client(_sdk_parameters(config)) as client:
            tools = (await client.list_tools()).tools
            resources = (await client.list_resources()).resources
            refused = await client.call_tool("read_only_sql", {"sql": "SELECT 1 AS one", "source": "crm"})
            served = await client.call_tool("read_only_sql", {"sql": "SELECT 1 AS one", "source": "shop"})
    for tool in tools:
        assert tool.input_schema["properties"]["source"]["enum"] == ["shop"], tool.name
    assert [str(r.uri) for r in resources] == ["postgres://shop/schema"]
    assert refused.is_error is True
    assert _document(refused)["invalid_params"] == ["source"]
    assert served.is_error is False
    # The log says so (a start that ends at once, at EOF).
    parameters = _sdk_parameters(config)
    done = subprocess.run(
        [parameters.command, *parameters.args],
        input=b"",
        capture_output=True,
        env={**os.environ, **parameters.env},
        cwd=parameters.cwd,
        timeout=60,
        check=False,
    )
    said = done.stderr.decode()
    assert done.returncode == 0, said
    assert "source 'crm': not offered over stdio" in said
    assert 'sources at start-up: shop serving"' in said  # crm is not opened at all
