"""`make run-container` (containers/run.sh) refuses a missing data folder and an unreachable Docker
daemon in one line of its own, before any engine command runs. The engine is a stand-in script."""

from __future__ import annotations

import itertools
import os
import subprocess
from pathlib import Path

import pytest

RUN_SCRIPT = Path(__file__).resolve().parents[3] / "containers" / "run.sh"

# A stand-in `docker` whose daemon is down: `info` fails with Docker's own banner, and any other
# command is recorded (none may run).
NO_DAEMON = """#!/bin/sh
if [ "$1" = info ]; then
    echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is it running?' >&2
    exit 1
fi
echo "$@" >> "{calls}"
exit 0
"""


def _run(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    docker = bin_dir / "docker"
    docker.write_text(NO_DAEMON.format(calls=tmp_path / "calls"))
    docker.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "ENGINE", "CONTAINERS_CONF"))}
    return subprocess.run(
        [str(RUN_SCRIPT)],
        env={**base, "PATH": f"{bin_dir}:{base.get('PATH', '/usr/bin:/bin')}", "ENGINE": "docker", **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_a_missing_data_folder_is_refused_in_one_line_before_the_engine_runs(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-folder"
    proc = _run(tmp_path, MCP_SAFE_DATA_HOST_DIR=str(missing))
    assert proc.returncode == 78
    assert proc.stderr.splitlines() == [
        f"run-container: MCP_SAFE_DATA_HOST_DIR={missing} is not a folder this user can enter"
    ]
    assert proc.stdout == ""
    assert not (tmp_path / "calls").exists()


def test_a_docker_cli_without_its_daemon_gets_a_one_line_hint_instead_of_its_banner(tmp_path: Path) -> None:
    proc = _run(tmp_path)
    assert proc.returncode == 69
    assert proc.stderr.splitlines() == [
        "run-container: the docker command cannot reach a Docker daemon: start it, "
        "or use podman (ENGINE=podman)"
    ]
    assert proc.stdout == ""
    assert not (tmp_path / "calls").exists()  # no build, no run


# A stand-in `podman` that records each argument of its one `run` on its own line.
RECORDER = """#!/bin/sh
printf '%s\\n' "$@" > "{calls}"
exit 0
"""


def _run_http(tmp_path: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    podman = bin_dir / "podman"
    calls = tmp_path / "calls"
    podman.write_text(RECORDER.format(calls=calls))
    podman.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "ENGINE", "CONTAINERS_CONF"))}
    proc = subprocess.run(
        [str(RUN_SCRIPT), "http"],
        env={
            **base,
            "PATH": f"{bin_dir}:{base.get('PATH', '/usr/bin:/bin')}",
            "ENGINE": "podman",
            "MCP_SKIP_BUILD": "1",
            **env,
        },
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    argv = calls.read_text().splitlines() if calls.exists() else []
    return proc, argv


def test_the_http_mode_publishes_one_loopback_port_and_keeps_settings_off_the_command_line(
    tmp_path: Path,
) -> None:
    secret_dsn = "host=db dbname=app user=mcp_reader password=not-on-a-command-line"
    proc, argv = _run_http(
        tmp_path,
        MCP_SQL_DSN=secret_dsn,
        MCP_HTTP_RESOURCE_URI="https://mcp.example.com/mcp",
        MCP_HTTP_ISSUER="https://idp.example.com",
        MCP_HTTP_JWKS_URL="https://idp.example.com/jwks",
        MCP_HTTP_HOST="127.0.0.1",
        MCP_HTTP_PORT="9999",
    )
    assert proc.returncode == 0, proc.stderr
    assert argv[0] == "run"
    assert argv[-2:] == ["localhost/mcp-suite:latest", "serve-http"]
    pairs = set(itertools.pairwise(argv))
    assert ("--publish", "127.0.0.1:8000:8000") in pairs
    assert ("--network", "bridge") in pairs
    assert "-i" not in argv
    assert sum(a in ("--publish", "-p") for a in argv) == 1
    for flag in ("--read-only", "--cap-drop", "--security-opt", "--user", "--pids-limit", "--memory"):
        assert flag in argv
    # The server listens on the container's interface, on the port that is published.
    assert ("-e", "MCP_HTTP_HOST=0.0.0.0") in pairs
    assert ("-e", "MCP_HTTP_PORT=8000") in pairs
    for name in ("MCP_SQL_DSN", "MCP_HTTP_RESOURCE_URI", "MCP_HTTP_ISSUER", "MCP_HTTP_JWKS_URL"):
        assert ("-e", name) in pairs  # the name alone: the engine copies the value
    assert not any("not-on-a-command-line" in a or "idp.example.com" in a for a in argv)
    assert ("-e", "MCP_HTTP_HOST") not in pairs
    assert ("-e", "MCP_HTTP_PORT") not in pairs


def test_the_http_mode_takes_another_published_address_and_network(tmp_path: Path) -> None:
    proc, argv = _run_http(tmp_path, MCP_CONTAINER_PUBLISH="10.0.0.5:443", MCP_CONTAINER_NETWORK="mcp-edge")
    assert proc.returncode == 0, proc.stderr
    pairs = set(itertools.pairwise(argv))
    assert ("--publish", "10.0.0.5:443:8000") in pairs
    assert ("--network", "mcp-edge") in pairs


def test_the_http_mode_refuses_to_run_without_tokens(tmp_path: Path) -> None:
    proc, argv = _run_http(tmp_path, MCP_HTTP_AUTH="none")
    assert proc.returncode == 78
    assert proc.stderr.startswith("run-container: MCP_HTTP_AUTH=none is for a loopback address only")
    assert argv == []  # nothing ran


def test_an_unknown_mode_is_refused() -> None:
    proc = subprocess.run(
        [str(RUN_SCRIPT), "sse"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 64
    assert proc.stderr == "run-container: usage: containers/run.sh [stdio|http]\n"


# -- the container runs what the server runs (issue 53) ---------------------------------------------


def _run_stdio(
    tmp_path: Path, engine: str = RECORDER, **env: str
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    podman = bin_dir / "podman"
    calls = tmp_path / "calls"
    podman.write_text(engine.format(calls=calls))
    podman.chmod(0o755)
    base = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "ENGINE", "CONTAINERS_CONF"))}
    proc = subprocess.run(
        [str(RUN_SCRIPT)],
        env={**base, "PATH": f"{bin_dir}:/usr/bin:/bin", "ENGINE": "podman", **env},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    argv = calls.read_text().splitlines() if calls.exists() else []
    return proc, argv


def _config(tmp_path: Path, password_file: str) -> Path:
    path = tmp_path / "sources.toml"
    path.write_text(
        '[[sources]]\nname = "shop"\ndescription = "d"\ndsn = "host=/run/pg dbname=shop user=r"\n'
        f'password_file = "{password_file}"\n\n'
        '[[sources]]\nname = "hr"\ndescription = "e"\ndsn = "host=/run/pg dbname=hr user=r"\n'
        'password_env = "HR_PASSWORD"\n'
    )
    return path


def test_every_setting_and_the_configuration_file_with_its_password_files_go_into_the_container(
    tmp_path: Path,
) -> None:
    secret = tmp_path / "shop.password"
    secret.write_text("not-on-a-command-line\n")
    secret.chmod(0o600)
    if os.geteuid() == 0:  # a rootful engine: inside, the owner is the container's user
        os.chown(secret, 10001, 10001)
    config = _config(tmp_path, str(secret))
    proc, argv = _run_stdio(
        tmp_path,
        MCP_SKIP_BUILD="1",
        MCP_CONFIG=str(config),
        MCP_SQL_MAX_ROWS="10",
        MCP_SQL_MAX_ROWZ="3",  # misspelt: passed on, so the server inside refuses it as outside
        MCP_OTEL_ENDPOINT="http://collector:4318",
        HR_PASSWORD="not-on-a-command-line-either",
        MCP_CONTAINER_NAME="mcp",
        MCP_SAFE_DATA_DIR="/host/path",
    )
    assert proc.returncode == 0, proc.stderr
    pairs = set(itertools.pairwise(argv))
    assert ("-v", f"{config}:{config}:ro") in pairs
    assert ("-v", f"{secret}:{secret}:ro") in pairs
    for name in ("MCP_CONFIG", "MCP_SQL_MAX_ROWS", "MCP_SQL_MAX_ROWZ", "MCP_OTEL_ENDPOINT", "HR_PASSWORD"):
        assert ("-e", name) in pairs, name
    # The script's own variables, and a host path for the image's data folder, stay outside.
    for name in ("MCP_CONTAINER_NAME", "MCP_SKIP_BUILD", "MCP_SAFE_DATA_DIR"):
        assert ("-e", name) not in pairs, name
    assert not any("not-on-a-command-line" in a for a in argv)
    assert argv[-1] == "localhost/mcp-suite:latest"


def test_a_configuration_file_whose_password_file_is_relative_is_refused_in_one_line(tmp_path: Path) -> None:
    config = _config(tmp_path, "shop.password")
    proc, argv = _run_stdio(tmp_path, MCP_SKIP_BUILD="1", MCP_CONFIG=str(config))
    assert proc.returncode == 78
    assert proc.stderr.splitlines() == [
        f"run-container: MCP_CONFIG={config}: password_file 'shop.password': an absolute path without "
        "':' (it is mounted at the same path)"
    ]
    assert argv == []


# A stand-in `podman` without any image: `image inspect` fails, anything else is recorded.
NO_IMAGES = """#!/bin/sh
if [ "$1" = image ]; then exit 125; fi
echo "$@" >> "{calls}"
exit 0
"""


def test_a_build_without_root_or_debootstrap_and_without_a_base_says_in_one_line_how_to_get_one(
    tmp_path: Path,
) -> None:
    # PATH without /usr/sbin: no debootstrap, as for most users.
    proc, argv = _run_stdio(tmp_path, engine=NO_IMAGES)
    assert proc.returncode == 69
    (line,) = proc.stderr.splitlines()
    assert line.startswith(
        "run-container: no base image: build localhost/mcp-suite-base:bookworm once as root"
    )
    assert "MCP_BASE_IMAGE=default" in line
    assert argv == []  # no build was started


def test_a_configuration_file_the_container_s_user_cannot_read_is_refused_in_one_line(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the check compares the files' owner with the container's user as a rootful engine does")
    secret = tmp_path / "shop.password"
    secret.write_text("x\n")
    config = _config(tmp_path, str(secret))
    config.chmod(0o600)  # the host's root alone: the container's user 10001 could not read it
    proc, argv = _run_stdio(tmp_path, MCP_SKIP_BUILD="1", MCP_CONFIG=str(config))
    assert proc.returncode == 78
    assert proc.stderr.splitlines() == [
        f"run-container: {config} cannot be read by the container's user 10001: chgrp 10001 it and chmod g+r"
        " (mode 0640), or chown 10001 it"
    ]
    assert argv == []
    os.chown(config, 0, 10001)
    config.chmod(0o640)
    # A password file readable by the container's group is refused all the same: the server takes
    # one its owner alone may read (as libpq does), and inside, that owner must be 10001.
    os.chown(secret, 0, 10001)
    secret.chmod(0o640)
    proc, argv = _run_stdio(tmp_path, MCP_SKIP_BUILD="1", MCP_CONFIG=str(config))
    assert proc.returncode == 78
    assert proc.stderr.splitlines() == [
        f"run-container: the password file {secret} must be the container's user's alone: chown 10001 it"
        " and chmod 600 it"
    ]
    assert argv == []
    os.chown(secret, 10001, 10001)
    secret.chmod(0o600)
    proc, argv = _run_stdio(tmp_path, MCP_SKIP_BUILD="1", MCP_CONFIG=str(config))
    assert proc.returncode == 0, proc.stderr
