"""`.ci/system-packages`: root with apt-get installs what is missing; anyone else is told what to
install, with the one command that does it, and the step fails (a contributor's `make test`)."""

from __future__ import annotations

import glob
import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml  # type: ignore[import-untyped]  # PyYAML ships no stubs

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / ".ci" / "system-packages"


def _run(tmp_path: Path, *pairs: str, uid: int) -> subprocess.CompletedProcess[str]:
    """The script with an `id` that answers `uid` (a non-root user without creating one) and an
    `apt-get` that records its calls instead of installing."""
    stubs = tmp_path / "bin"
    stubs.mkdir(exist_ok=True)
    (stubs / "id").write_text(f'#!/bin/sh\n[ "$1" = -un ] && echo tester || echo {uid}\n')
    (stubs / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> "{tmp_path}/apt-get"\n')
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    return subprocess.run(
        [str(SCRIPT), *pairs],
        env={**os.environ, "PATH": f"{stubs}:/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_a_non_root_user_is_told_which_packages_are_missing_and_the_command_that_installs_them(
    tmp_path: Path,
) -> None:
    proc = _run(tmp_path, "sh=dash", "mcp-suite-absent-a=pkg-a", "/nonexistent/*/bin/x=pkg-b", uid=1000)
    assert proc.returncode == 1
    assert "missing system packages: pkg-a pkg-b" in proc.stderr
    # A fresh machine's package lists may be empty: the one line updates them first.
    assert re.search(
        r"^ +sudo apt-get update && sudo apt-get install -y pkg-a pkg-b$", proc.stderr, flags=re.MULTILINE
    )
    assert "dash" not in proc.stderr  # present programs are not listed
    assert not (tmp_path / "apt-get").exists()  # nothing was run on the user's behalf


def test_root_installs_the_missing_packages_itself(tmp_path: Path) -> None:
    proc = _run(tmp_path, "sh=dash", "mcp-suite-absent-a=pkg-a", uid=0)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "apt-get").read_text().splitlines() == ["update -q", "install -y -q pkg-a"]


def test_nothing_missing_is_silent_for_anyone(tmp_path: Path) -> None:
    proc = _run(tmp_path, "sh=dash", uid=1000)
    assert (proc.returncode, proc.stderr) == (0, "")


def test_the_github_workflow_installs_the_system_packages_as_root_before_make_test() -> None:
    workflow = yaml.safe_load((REPO / ".github" / "workflows" / "ci.yml").read_text())
    runs = [step.get("run") for step in workflow["jobs"]["test"]["steps"]]
    assert "sudo make system-packages" in runs
    assert runs.index("sudo make system-packages") < runs.index("make test")


def _test_packages() -> list[str]:
    lines = (REPO / ".ci" / "test-packages").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#")]


def test_the_tests_packages_are_one_list_that_make_help_and_every_installer_read(tmp_path: Path) -> None:
    pairs = _test_packages()
    packages = [pair.split("=", 1)[1] for pair in pairs]
    assert {"pgbouncer", "haproxy", "postgresql", "npm", "prometheus"} <= set(packages)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    shown = subprocess.run(
        ["make", "-s", "help"], cwd=REPO, env=env, capture_output=True, text=True, timeout=60, check=True
    ).stdout
    (line,) = [line for line in shown.splitlines() if line.startswith("make system-packages")]
    assert line.endswith("when missing: " + " ".join(packages)), line
    makefile = (REPO / "Makefile").read_text()
    assert "\t@.ci/system-packages --tests\n" in makefile
    assert ".ci/system-packages --tests " in (REPO / ".ci" / "run").read_text()
    # --tests reads the list: every one of its programs is looked for, each missing one named.
    path = "/usr/bin:/bin"
    expected = []
    for pair in pairs:
        program, package = pair.split("=", 1)
        present = (
            glob.glob(program) if "/" in program else shutil.which(program, path=path + ":/usr/sbin:/sbin")
        )
        expected += [] if present else [package]
    proc = _run(tmp_path, "--tests", "mcp-suite-absent-a=pkg-a", uid=1000)
    assert proc.returncode == 1
    assert f"missing system packages: {' '.join([*expected, 'pkg-a'])}\n" in proc.stderr
