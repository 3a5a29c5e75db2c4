"""The house's rooms and floors, from the import graph: every module of the package sits in a layer
of the import contract (`pyproject.toml`), and `protocol/` holds only the protocol: each of its
modules serves the transports (the runtime or the protocol itself imports it), none is a tool's
alone (the SQL identity map and the tools' text handling left it for the rooms that use them)."""

from __future__ import annotations

import re

import grimp

from tests.support.declared import REPO, load_pyproject, package_modules


def _layers() -> list[str]:
    """The modules and packages the layers contract names, siblings (`a | b`, `a : b`) included."""
    tool = load_pyproject()["tool"]
    assert isinstance(tool, dict)
    (layers,) = [
        c["layers"]
        for c in tool["importlinter"]["contracts"]
        if c["type"] == "layers" and c["name"].startswith("layers:")
    ]
    return [name.strip() for layer in layers for name in re.split(r"[|:]", layer)]


def _within(module: str, tops: list[str]) -> bool:
    return any(module == top or module.startswith(top + ".") for top in tops)


def test_every_module_of_the_package_sits_in_a_layer_of_the_import_contract() -> None:
    tops = _layers()
    modules = [name for name, _ in package_modules(REPO)]
    assert "mcp_suite.make_relay" in modules  # the walk saw the whole package
    # The package's own `__init__` (its name and version) is every floor's, as the root of them all.
    outside = {m for m in modules if m != "mcp_suite" and not _within(m, tops)}
    assert outside == set()


def test_every_module_of_the_protocol_serves_the_transports_not_a_tool_alone() -> None:
    graph = grimp.build_graph("mcp_suite", cache_dir=None)
    protocol = sorted(graph.find_descendants("mcp_suite.protocol"))
    assert "mcp_suite.protocol.core" in protocol
    only_outside = {
        module: sorted(graph.find_modules_that_directly_import(module))
        for module in protocol
        if not any(
            importer.startswith(("mcp_suite.runtime.", "mcp_suite.protocol."))
            for importer in graph.find_modules_that_directly_import(module)
        )
    }
    assert only_outside == {}
