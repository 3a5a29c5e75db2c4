"""The `otel` extra (pyproject.toml) declares every package `runtime/telemetry.py` imports, pinned
to the versions the tests run with (requirements/dev.txt), every OpenTelemetry distribution it
brings included: `pip install 'mcp-suite[otel]'` installs what was tested."""

from __future__ import annotations

import ast
import tomllib
from importlib.metadata import distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

REPO = Path(__file__).resolve().parents[3]
# import name (the longest prefix that matches) -> distribution
DISTRIBUTIONS = {
    "opentelemetry": "opentelemetry-api",
    "opentelemetry.sdk": "opentelemetry-sdk",
    "opentelemetry.exporter.otlp": "opentelemetry-exporter-otlp-proto-http",
    "opentelemetry.exporter.prometheus": "opentelemetry-exporter-prometheus",
    "prometheus_client": "prometheus-client",
}


def _locked() -> dict[str, str]:
    pins = {}
    for line in (REPO / "requirements" / "dev.txt").read_text().splitlines():
        if "==" in line and not line.startswith((" ", "#")):
            requirement = Requirement(line.rstrip(" \\"))
            pins[requirement.name] = str(requirement.specifier).removeprefix("==")
    return pins


def _extra() -> list[Requirement]:
    return [
        Requirement(text)
        for text in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"][
            "otel"
        ]
    ]


def test_the_otel_extra_declares_what_the_telemetry_module_imports_pinned_to_the_lock() -> None:
    declared = {r.name: r for r in _extra()}
    tree = ast.parse((REPO / "mcp_suite" / "runtime" / "telemetry.py").read_text())
    imported = {
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
        and node.module
        and node.module.startswith(("opentelemetry", "prometheus"))
    }
    needed = {
        dist for prefix, dist in DISTRIBUTIONS.items() for module in imported if module.startswith(prefix)
    }
    assert needed <= set(declared), needed - set(declared)
    locked = _locked()
    for name, requirement in declared.items():
        assert str(requirement.specifier) == f"=={locked[name]}", (requirement, locked[name])


def _requires(name: str) -> list[str]:
    """The distributions `name` (installed) requires, extras and other platforms left out."""
    names: list[str] = []
    for text in distribution(name).requires or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            names.append(canonicalize_name(requirement.name))
    return names


def test_every_opentelemetry_distribution_the_extra_brings_is_pinned_in_it() -> None:
    declared: set[str] = {canonicalize_name(r.name) for r in _extra()}
    brought: set[str] = set()
    todo = list(declared)
    while todo:
        name = todo.pop()
        if name not in brought:
            brought.add(name)
            todo += _requires(name)
    ours = {name for name in brought if name.startswith(("opentelemetry-", "prometheus-"))}
    assert ours <= declared, sorted(ours - declared)
