"""The executor runs only what the policy vetted: no public method of it takes text, and only the
policy makes the `VettedQuery` it takes (a layer test that runs text past the policy says so:
`tests.support.pg.run_unvetted`)."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

from mcp_suite.tools.sql.engine.executor import Executor

PACKAGE = Path(__file__).resolve().parents[4] / "mcp_suite"
POLICY = PACKAGE / "tools" / "sql" / "engine" / "policy" / "__init__.py"


def _public_parameters() -> list[tuple[str, str, object]]:
    return [
        (name, parameter.name, parameter.annotation)
        for name, member in inspect.getmembers(Executor, inspect.isfunction)
        if not name.startswith("_")
        for parameter in inspect.signature(member).parameters.values()
    ]


def test_no_public_method_of_the_executor_takes_text() -> None:
    texts = [(method, name) for method, name, annotation in _public_parameters() if annotation == "str"]
    assert texts == []


def test_the_executor_runs_a_query_only_as_a_vetted_query() -> None:
    queries = {method for method, _, annotation in _public_parameters() if annotation == "VettedQuery"}
    assert queries == {"run_vetted"}


def test_only_the_policy_makes_a_vetted_query() -> None:
    makers = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Call)
        and (getattr(node.func, "id", None) or getattr(node.func, "attr", None)) == "VettedQuery"
    )
    assert makers == [str(POLICY.relative_to(PACKAGE))]
