"""`make mutate` mutates what its table reports: `[tool.mutmut]` and tests/mutation's MODULES agree."""

from __future__ import annotations

import tomllib

from tests.mutation.__main__ import MODULES, REPO


def test_the_mutmut_configuration_matches_the_modules_of_the_table() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mutmut"]
    assert config["only_mutate"] == list(MODULES)
    guarding = [test for tests in MODULES.values() for test in tests]
    selection = config["pytest_add_cli_args_test_selection"]
    assert len(set(selection)) == len(selection)  # a module's tests may guard another one too
    assert sorted(selection) == sorted(set(guarding))
    for path in [*MODULES, *guarding]:
        assert (REPO / path).is_file(), path
