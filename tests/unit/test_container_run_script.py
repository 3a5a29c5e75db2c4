"""`make run-container` (containers/run.sh) refuses a missing data folder and an unreachable Docker
daemon in one line of its own, before any engine command runs. The engine is a stand-in script."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

RUN_SCRIPT = Path(__file__).resolve().parents[2] / "containers" / "run.sh"

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
