"""The shipped HAProxy template (containers/haproxy/haproxy.cfg): `haproxy -c` accepts it once its
variables are set and refuses it when one is missing (the backends come from the environment, none
is written in), and its timeouts sit where docs/operations/remote.md says, beside the server's own
defaults."""

from __future__ import annotations

import re
from pathlib import Path

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
