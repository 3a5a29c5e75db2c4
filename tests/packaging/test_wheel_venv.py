"""The wheel ships what it declares: installed in a clean venv with its declared requirements only
(tests/support/wheel.py), every module it holds imports, the CLI answers, and `mcp-suite demo`
serves from it with the `demo` extra. An import of anything undeclared fails here."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging.utils import canonicalize_name

from tests.support.declared import EXTRA_OF, load_pyproject
from tests.support.wheel import (
    REPO,
    CleanVenv,
    install_wheel,
    link_distributions,
    open_clean_venv,
    requirement_closure,
    wheel_modules,
)
from tests.support.wire import check_line, initialize_request

pytestmark = [pytest.mark.pg, pytest.mark.e2e]  # `demo` starts a PostgreSQL of its own

# Runs the server at import: `python -m mcp_suite --version` runs it instead.
SCRIPTS = {"mcp_suite.__main__"}
IMPORT_ALL = """
import importlib, sys
failed = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed.append(f"{name}: {type(exc).__name__}: {exc}")
sys.stdout.write("\\n".join(failed))
sys.exit(1 if failed else 0)
"""


@pytest.fixture
def work() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="mcp-suite-venv-"))
    path.chmod(0o755)  # as a home directory is: the demo's service account (as root) must reach it
    try:
        yield path
    finally:
        shutil.rmtree(path)


def _locked_names(lock: str) -> set[str]:
    """The distributions requirements/<lock>.txt pins."""
    text = (REPO / "requirements" / f"{lock}.txt").read_text(encoding="utf-8")
    return {
        canonicalize_name(line.partition("==")[0])
        for line in text.splitlines()
        if "==" in line and not line.startswith((" ", "#"))
    }


def _venv(work: Path, wheel: Path, *extras: str) -> CleanVenv:
    """A clean venv with the requirements the wheel declares for `extras`, then the wheel."""
    project = load_pyproject()["project"]
    assert isinstance(project, dict)
    venv = open_clean_venv(work / "venv")
    requirements = list(project["dependencies"])
    for extra in extras:
        requirements += project["optional-dependencies"][extra]
    link_distributions(venv, requirement_closure(requirements, extras))
    install_wheel(venv, wheel, extras)
    return venv


def _env(work: Path) -> dict[str, str]:
    """No MCP_* setting, no PYTHONPATH (nothing of this checkout), a home of its own."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("MCP_", "PYTHON", "COV"))}
    return {**keep, "HOME": str(work), "XDG_CACHE_HOME": str(work / "cache")}


def _run(
    argv: list[str], work: Path, *, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    cwd = work / "elsewhere"
    cwd.mkdir(exist_ok=True)
    return subprocess.run(
        argv,
        input=stdin,
        env=_env(work),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_every_module_of_the_wheel_imports_with_the_core_requirements_alone(work: Path, wheel: Path) -> None:
    project = load_pyproject()["project"]
    assert isinstance(project, dict)
    # What the venv gets is the runtime lock's (`make run` installs the same versions).
    assert requirement_closure(project["dependencies"]) <= _locked_names("runtime")
    venv = _venv(work, wheel)
    modules = [m for m in wheel_modules(wheel) if m not in SCRIPTS and m not in EXTRA_OF]
    assert "mcp_suite.demo.cluster" in modules
    assert not [m for m in modules if not m.startswith("mcp_suite")]  # the wheel holds the package only
    proc = _run([str(venv.python), "-I", "-c", IMPORT_ALL, *modules], work)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for argv in (["--help"], ["check-role", "--help"]):
        answered = _run([str(venv.script("mcp-suite")), *argv], work)
        assert answered.returncode == 0, answered.stderr
        assert answered.stdout.startswith("usage: mcp-suite")
    version = _run([str(venv.python), "-I", "-m", "mcp_suite", "--version"], work)
    assert (version.returncode, version.stdout.split()[0]) == (0, "mcp-suite"), version.stderr


def test_the_modules_of_an_extra_import_once_it_is_installed(work: Path, wheel: Path) -> None:
    for extra in sorted(set(EXTRA_OF.values())):
        venv = _venv(work / extra, wheel, extra)
        modules = [m for m, of in EXTRA_OF.items() if of == extra]
        proc = _run([str(venv.python), "-I", "-c", IMPORT_ALL, *modules], work)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_demo_serves_from_the_wheel_with_its_extra_and_stops_on_eof(work: Path, wheel: Path) -> None:
    venv = _venv(work, wheel, "demo")
    mcp_suite = str(venv.script("mcp-suite"))
    requests = [initialize_request("wheel"), {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    try:
        proc = _run(
            [mcp_suite, "demo"],
            work,
            stdin="".join(json.dumps(r) + "\n" for r in requests),  # then EOF
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr
        (reply,) = (check_line(line.encode()) for line in proc.stdout.splitlines(keepends=True))
        assert reply["id"] == 1
        assert reply["result"]["serverInfo"]["name"] == "mcp-suite"
    finally:
        destroyed = _run([mcp_suite, "demo", "destroy"], work)
    assert destroyed.returncode == 0, destroyed.stderr
