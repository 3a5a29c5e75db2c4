"""`make mutate` mutates what its table reports: `[tool.mutmut]` and tests/mutation's MODULES agree."""

from __future__ import annotations

import tomllib

import pytest

from tests.mutation.__main__ import GUARDRAIL_MODULES, MODULES, REPO, main, module_of


def test_the_mutmut_configuration_matches_the_modules_of_the_table() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert config["only_mutate"] == list(GUARDRAIL_MODULES) == list(MODULES)
    guarding = [test for tests in MODULES.values() for test in tests]
    selection = config["pytest_add_cli_args_test_selection"]
    assert len(set(selection)) == len(selection)  # a module's tests may guard another one too
    assert sorted(selection) == sorted(set(guarding))
    for path in [*MODULES, *guarding]:
        assert (REPO / path).is_file(), path


def test_each_mutant_is_counted_for_its_own_module_also_a_package_s() -> None:
    policy = "mcp_suite/tools/sql/engine/policy/"
    assert module_of("mcp_suite.tools.sql.engine.policy.x_vet_sql__mutmut_1") == policy + "__init__.py"
    assert (
        module_of("mcp_suite.tools.sql.engine.policy.rewrite.x_generate__mutmut_6") == policy + "rewrite.py"
    )
    assert (
        module_of("mcp_suite.runtime.limiter.xǁTicketǁ__init____mutmut_1") == "mcp_suite/runtime/limiter.py"
    )
    assert module_of("mcp_suite.tools.sql.read_only_sql.x_other__mutmut_1") is None


def test_the_coverage_floor_of_the_makefile_covers_the_one_list_of_guardrail_modules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["modules"]) == 0
    assert capsys.readouterr().out == ",".join(GUARDRAIL_MODULES) + "\n"
    makefile = (REPO / "Makefile").read_text()
    assert "GUARDRAIL_MODULES = $(shell $(BIN)/python -m tests.mutation modules)" in makefile
    assert "--include='$(GUARDRAIL_MODULES)'" in makefile
    for module in GUARDRAIL_MODULES:  # listed nowhere else
        assert module not in makefile, module
