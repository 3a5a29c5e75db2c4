"""The `otel` extra (pyproject.toml) declares every package `runtime/telemetry.py` imports, and its
ranges admit the versions the tests run with (requirements/dev.txt)."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
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


def test_the_otel_extra_declares_what_the_telemetry_module_imports_in_ranges_that_admit_the_lock() -> None:
    extra = [
        Requirement(text)
        for text in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"][
            "otel"
        ]
    ]
    declared = {r.name: r for r in extra}
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
        assert requirement.specifier.contains(locked[name], prereleases=True), (requirement, locked[name])
