"""The shipped HAProxy template (containers/haproxy/haproxy.cfg): `haproxy -c` accepts it once its
variables are set and refuses it when one is missing (the backends come from the environment, none
is written in); with MCPLB_RESOLVERS it starts while no replica's name resolves yet, without it a
name must resolve at start, as before; and its timeouts sit where docs/operations/remote.md says,
beside the server's own defaults."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mcp_suite.settings import load_settings
from tests.support.haproxy import HAPROXY_CONFIG, check_config, template_env

REPLICAS = ("127.0.0.1:18001", "127.0.0.1:18002", "127.0.0.1:18003")


def _seconds(directive: str) -> float:
    """The value of one `timeout <what>` or `expire` of the template, in seconds."""
    match = re.search(rf"^\s*{directive}\s+(\d+)([smh])\b", HAPROXY_CONFIG.read_text(), re.MULTILINE)
    assert match, directive
    return int(match[1]) * {"s": 1, "m": 60, "h": 3600}[match[2]]


def test_haproxy_accepts_the_template_with_its_variables_set(tmp_path: Path) -> None:
    checked = check_config(template_env("127.0.0.1:18000", tmp_path / "admin.sock", REPLICAS))
    assert (checked.returncode, checked.stdout.strip()) == (0, "Configuration file is valid")


def test_haproxy_refuses_the_template_when_a_replica_is_not_named(tmp_path: Path) -> None:
    env = template_env("127.0.0.1:18000", tmp_path / "admin.sock", REPLICAS)
    del env["MCPLB_REPLICA_2"]
    checked = check_config(env)
    assert checked.returncode != 0
    assert "'server' expects <name> and <addr>" in checked.stderr


# Names that never resolve: what HAProxy in the compose stack sees before the replicas exist.
UNRESOLVED = ("mcp1.invalid:8000", "mcp2.invalid:8000", "mcp3.invalid:8000")


@pytest.mark.parametrize("resolvers", ["resolv.conf", "127.0.0.1:53"])
def test_haproxy_accepts_the_template_with_resolvers_while_no_name_resolves(
    tmp_path: Path, resolvers: str
) -> None:
    env = template_env("127.0.0.1:18000", tmp_path / "admin.sock", UNRESOLVED)
    env["MCPLB_RESOLVERS"] = resolvers
    checked = check_config(env)
    assert checked.returncode == 0
    assert checked.stdout.strip().splitlines() == ["Warnings were found.", "Configuration file is valid"]
    # The servers wait in maintenance for their names (init-addr ... none), HAProxy starts.
    assert checked.stderr.count("could not resolve address") == 3
    assert "disabling server" in checked.stderr


def test_haproxy_with_resolvers_also_takes_ip_addresses(tmp_path: Path) -> None:
    env = template_env("127.0.0.1:18000", tmp_path / "admin.sock", REPLICAS)
    env["MCPLB_RESOLVERS"] = "resolv.conf"
    checked = check_config(env)
    assert (checked.returncode, checked.stdout.strip()) == (0, "Configuration file is valid")


def test_haproxy_without_resolvers_refuses_names_that_do_not_resolve_at_start(tmp_path: Path) -> None:
    checked = check_config(template_env("127.0.0.1:18000", tmp_path / "admin.sock", UNRESOLVED))
    assert checked.returncode != 0
    assert "could not resolve address 'mcp1.invalid'" in checked.stderr


def test_haproxy_refuses_a_nameserver_without_a_port(tmp_path: Path) -> None:
    env = template_env("127.0.0.1:18000", tmp_path / "admin.sock", REPLICAS)
    env["MCPLB_RESOLVERS"] = "127.0.0.1"
    checked = check_config(env)
    assert checked.returncode != 0
    assert "missing port specification" in checked.stderr


def test_the_templates_timeouts_leave_the_replicas_answers_to_the_replicas() -> None:
    defaults = load_settings({})
    # A slow call gets the replica's deadline answer, not the proxy's 504.
    assert _seconds("timeout server") > defaults.call_deadline_s
    # A sticky entry is not forgotten while the replica still keeps the session.
    assert _seconds(r"stick-table .* expire") >= defaults.http_session_idle_s
    # The proxy gives up on a slow request body no later than the replica would.
    assert _seconds("timeout http-request") <= defaults.http_body_timeout_s


def test_the_template_routes_sessions_by_their_id_and_the_rest_round_robin() -> None:
    lines = [line.strip() for line in HAPROXY_CONFIG.read_text().splitlines()]
    assert "balance roundrobin" in lines
    assert "stick store-response res.hdr(mcp-session-id)" in lines
    assert "stick match req.hdr(mcp-session-id)" in lines
    assert [line.split()[1] for line in lines if line.startswith("server ")] == ["mcp1", "mcp2", "mcp3"]
