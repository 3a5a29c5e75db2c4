"""`containers/run.sh` (what `make run-container` runs) passes on what the server reads: the
configuration file and every `MCP_*` setting. The engine is a stand-in that runs the server on
this host with exactly the environment the container would get (the `-e` names `run.sh` gives
it, their values from its own environment, nothing else), so the server's answer says what the
container would serve; the image's own mounts and hardening are containers/smoke.sh's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from mcp_suite.demo.cluster import Cluster
from tests.support.client import REPO
from tests.support.wire import initialize_request

pytestmark = pytest.mark.pg

RUN_SCRIPT = REPO / "containers" / "run.sh"

# `podman run ... IMAGE [serve-http]` as the server on this host, with only the variables `-e` names.
STAND_IN = """#!{python}
import os, sys
args = sys.argv[1:]
assert args[0] == "run", args
env = {{"PATH": "/usr/bin:/bin", "PYTHONPATH": {repo!r}, "MCP_CPU_AFFINITY": "off"}}
rest = iter(args[1:])
command = []
for arg in rest:
    if arg == "-e":
        name, _, value = next(rest).partition("=")
        if value or name not in os.environ:
            env[name] = value
        else:
            env[name] = os.environ[name]
    elif arg.startswith("localhost/"):
        command = list(rest)
        break
os.execve(sys.executable, [sys.executable, "-m", "mcp_suite", *command], env)
"""


def _run(
    tmp_path: Path, env: dict[str, str], lines: list[dict[str, Any]]
) -> subprocess.CompletedProcess[bytes]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    podman = bin_dir / "podman"
    podman.write_text(STAND_IN.format(python=sys.executable, repo=str(REPO)))
    podman.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "ENGINE", "CONTAINERS_CONF"))}
    return subprocess.run(
        [str(RUN_SCRIPT)],
        env={**base, "PATH": f"{bin_dir}:/usr/bin:/bin", "ENGINE": "podman", "MCP_SKIP_BUILD": "1", **env},
        input=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
        capture_output=True,
        timeout=90,
        check=False,
    )


def _config(cluster: Cluster, tmp_path: Path) -> Path:
    options = conninfo_to_dict(cluster.reader_dsn)
    secret = tmp_path / "shop.password"
    secret.write_text(str(options.pop("password")) + "\n")
    secret.chmod(0o600)  # libpq's rule for a password file: its owner's alone
    if os.geteuid() == 0:  # a rootful engine: inside, the owner is the container's user
        os.chown(secret, 10001, 10001)
    dsn = make_conninfo(**{k: str(v) for k, v in options.items()})
    path = tmp_path / "sources.toml"
    path.write_text(
        f'[[sources]]\nname = "shop"\ndescription = "The shop"\ndsn = "{dsn}"\npassword_file = "{secret}"\n'
    )
    return path


INIT: Any = initialize_request("t", request_id=0, version="2025-11-25")


def _call(arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "read_only_sql", "arguments": arguments},
    }


def _result(done: subprocess.CompletedProcess[bytes]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr.decode()
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    result: dict[str, Any] = answers[1]["result"]
    return result


INITIALIZED: Any = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_the_configuration_file_and_its_password_file_reach_the_server_in_the_container(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    config = _config(demo_cluster, tmp_path)
    done = _run(
        tmp_path,
        {"MCP_CONFIG": str(config), "MCP_METRICS_ENABLED": "false"},
        [INIT, INITIALIZED, _call({"sql": "SELECT 7 AS seven", "source": "shop"})],
    )
    result = _result(done)
    assert result["isError"] is False, result
    assert result["structuredContent"]["rows"] == [[7]]


def test_a_row_limit_reaches_the_server_in_the_container(demo_cluster: Cluster, tmp_path: Path) -> None:
    done = _run(
        tmp_path,
        {"MCP_SQL_DSN": demo_cluster.reader_dsn, "MCP_SQL_MAX_ROWS": "10", "MCP_METRICS_ENABLED": "false"},
        [INIT, INITIALIZED, _call({"sql": "SELECT 1", "max_rows": 11})],
    )
    result = _result(done)
    assert result["isError"] is True, result
    problem = json.loads(result["content"][0]["text"])
    assert problem["invalid_params"] == ["max_rows"]


def test_a_setting_beside_the_configuration_file_is_refused_in_the_container_as_outside(
    demo_cluster: Cluster, tmp_path: Path
) -> None:
    config = _config(demo_cluster, tmp_path)
    done = _run(tmp_path, {"MCP_CONFIG": str(config), "MCP_SQL_MAX_ROWS": "10"}, [INIT])
    assert done.returncode == 78
    assert b"MCP_SQL_MAX_ROWS may not be set beside it" in done.stderr
    assert done.stdout == b""


def test_a_misspelt_setting_is_refused_by_the_server_in_the_container_as_outside(tmp_path: Path) -> None:
    done = _run(tmp_path, {"MCP_SQL_MAX_ROWZ": "10"}, [INIT])
    assert done.returncode == 78
    assert b"MCP_SQL_MAX_ROWZ" in done.stderr
    assert b"MCP_SQL_MAX_ROWS" in done.stderr  # the nearest known name
    assert done.stdout == b""
