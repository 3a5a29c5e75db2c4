"""Each option written once: the variables derive from the settings' fields, and the tooling's own
`MCP_*` names (read from the tooling, not from settings) are left alone by the server."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from mcp_suite.settings import (
    ENV_VARIABLES,
    FOREIGN_IN_FAMILIES,
    SETTING_FAMILIES,
    Settings,
    SettingsError,
    foreign_variables,
    load_settings,
    variable_of,
)
from tests.support.tooling_variables import DOCUMENTED_TOOLING_NAMES, TOOLING_NAMES

CONFIGURATION = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
# Fields the environment does not set: the channels' sizes (the wire contract's limits are constants
# of `settings.limits`, not fields).
NOT_FROM_THE_ENVIRONMENT = {"inbound_channel_size", "outbound_channel_size"}


def _variables_by_field() -> dict[str, str]:
    found = {}
    for spec in dataclasses.fields(Settings):
        try:
            found[spec.name] = variable_of(spec.name)
        except KeyError:
            continue
    return found


def test_every_field_but_the_fixed_ones_has_exactly_one_variable_and_each_variable_one_field() -> None:
    by_field = _variables_by_field()
    fields = {spec.name for spec in dataclasses.fields(Settings)}
    assert fields - set(by_field) == NOT_FROM_THE_ENVIRONMENT
    assert sorted(by_field.values()) == sorted(ENV_VARIABLES)
    assert len(set(ENV_VARIABLES)) == len(ENV_VARIABLES) == len(by_field)


def test_a_variable_is_its_field_s_name_upper_cased_unless_the_field_names_another() -> None:
    exceptions = {
        field: name for field, name in _variables_by_field().items() if name != "MCP_" + field.upper()
    }
    assert exceptions == {"config_file": "MCP_CONFIG"}


def test_the_variables_are_those_the_configuration_tables_document_each_once() -> None:
    rows = re.findall(r"^\| `(MCP_[A-Z0-9_]+)` \|", CONFIGURATION.read_text(), flags=re.MULTILINE)
    assert sorted(rows) == sorted(ENV_VARIABLES)


@pytest.mark.parametrize("name", sorted(TOOLING_NAMES))
def test_each_tooling_variable_is_left_alone_by_the_server(name: str) -> None:
    assert load_settings({name: "1"}) == load_settings({})
    assert foreign_variables({name: "1"}) == [name]


def test_all_the_tooling_variables_together_still_start_the_server() -> None:
    assert load_settings(dict.fromkeys(TOOLING_NAMES, "x")) == load_settings({})


def test_the_documented_tooling_variables_are_the_ones_the_tooling_reads() -> None:
    assert DOCUMENTED_TOOLING_NAMES <= TOOLING_NAMES
    # Not exported to a server: the container scripts' shell arrays and the test suite's canary
    # (docs/quality.md).
    undocumented = {"MCP_HARDENING", "MCP_PROFILE", "MCP_PROFILE_HTTP", "MCP_HERMETIC_CANARY"}
    assert undocumented == TOOLING_NAMES - DOCUMENTED_TOOLING_NAMES


def test_the_server_holds_as_foreign_exactly_the_tooling_names_inside_its_families() -> None:
    assert {name for name in TOOLING_NAMES if name.startswith(SETTING_FAMILIES)} == FOREIGN_IN_FAMILIES


def test_a_misspelling_next_to_a_foreign_name_of_a_family_is_still_refused() -> None:
    for typo in ("MCP_SAFE_DATA_HOST_DI", "MCP_SAFE_DATA_HOST_DIRS"):
        with pytest.raises(SettingsError, match=f"{typo}: not a known setting"):
            load_settings({typo: "1"})
