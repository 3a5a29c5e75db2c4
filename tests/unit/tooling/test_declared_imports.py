"""Every import of the installed package is a declared dependency: core for every module, an
extra's for the modules of that extra (`EXTRA_OF`). The test harness lives outside the package."""

from __future__ import annotations

from pathlib import Path

from tests.support.declared import (
    REPO,
    foreign_imports,
    load_pyproject,
    package_modules,
    undeclared_imports,
)


def test_every_module_of_the_package_imports_only_what_its_requirements_declare() -> None:
    imports = [
        found
        for module, path in package_modules(REPO)
        for found in foreign_imports(module, path.read_text(encoding="utf-8"))
    ]
    assert imports  # the walk saw the package's imports (trio, psycopg...)
    assert undeclared_imports(imports, load_pyproject()) == []


def test_an_import_of_a_test_tool_or_of_a_dependency_s_dependency_is_reported(tmp_path: Path) -> None:
    source = (
        "import anyio\n"  # the SDK's event loop: a dev dependency only
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from mcp import Client\n"
        "def later():\n"
        "    import h11\n"  # hypercorn's dependency, not ours
        "import trio\n"
    )
    problems = undeclared_imports(foreign_imports("mcp_suite.demo.tour", source), load_pyproject())
    assert [p.split(" ", 3)[:3] for p in problems] == [
        ["mcp_suite.demo.tour:1", "imports", "anyio"],
        ["mcp_suite.demo.tour:4", "imports", "mcp"],
        ["mcp_suite.demo.tour:6", "imports", "h11"],
    ]


def test_an_extra_s_import_is_declared_for_its_module_only() -> None:
    source = "import opentelemetry.sdk.trace\n"
    pyproject = load_pyproject()
    assert undeclared_imports(foreign_imports("mcp_suite.runtime.telemetry", source), pyproject) == []
    (problem,) = undeclared_imports(foreign_imports("mcp_suite.runtime.http", source), pyproject)
    assert "the core requirements do not declare it" in problem


def test_the_demo_in_the_package_holds_none_of_the_test_harness_servers() -> None:
    demo = {module for module, _ in package_modules(REPO) if module.startswith("mcp_suite.demo")}
    assert "mcp_suite.demo.cluster" in demo
    assert not {m for m in demo if m.rpartition(".")[2] in {"replica", "pgbouncer", "tls", "tour"}}
