"""A setting a source of the configuration file may set for itself is marked so on its field, once:
the file accepts its key (the field's name without `sql_`) for every source, refuses its variable
beside the file, and docs/configuration.md documents it per source with its variable."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from mcp_suite.settings import SOURCE_KEYS, Settings, SettingsError, variable_of
from mcp_suite.tools.sql.sources import load_sources

CONFIGURATION = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
A = "[[sources]]\nname='a'\ndescription='d'\ndsn='dbname=a'\n"
# The keys of a source that are its own, not a setting's.
SOURCE_OWN_KEYS = {
    "name",
    "description",
    "dsn",
    "password_file",
    "password_env",
    "identity",
    "tools",
    "free_sql",
    "schema",
}
FIELDS = {spec.name: spec for spec in dataclasses.fields(Settings)}


def _other_value(field_name: str) -> object:
    """A valid value of the field that is not its default."""
    spec, default = FIELDS[field_name], FIELDS[field_name].default
    rule = spec.metadata
    if "choices" in rule:
        return next(choice for choice in rule["choices"] if choice != default)
    if "kind" in rule:
        step = rule["kind"](1)
        return default + step if default + step <= rule["high"] else default - step
    if isinstance(default, bool):
        return not default
    assert default == ()  # the lists: names every list's parser accepts
    return ("public.f",)


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return json.dumps(list(value))
    return json.dumps(value)


def test_every_marked_field_is_a_sql_setting_keyed_by_its_name_without_sql() -> None:
    assert SOURCE_KEYS
    for key, field_name in SOURCE_KEYS.items():
        assert field_name == "sql_" + key
        assert FIELDS[field_name].metadata["per_source"] is True
    unmarked = {name for name, spec in FIELDS.items() if not spec.metadata.get("per_source")}
    assert unmarked.isdisjoint(SOURCE_KEYS.values())


@pytest.mark.parametrize("key", sorted(SOURCE_KEYS))
def test_every_marked_field_is_accepted_per_source(tmp_path: Path, key: str) -> None:
    field_name = SOURCE_KEYS[key]
    value = _other_value(field_name)
    path = tmp_path / "sources.toml"
    path.write_text(A + f"{key} = {_toml(value)}\n" + A.replace("'a'", "'b'"))
    settings = Settings(config_file=path)
    (a, b) = load_sources(settings, {})
    assert getattr(a.settings, field_name) == value != getattr(settings, field_name)
    assert getattr(b.settings, field_name) == getattr(settings, field_name)  # its own source only


@pytest.mark.parametrize("key", sorted(SOURCE_KEYS))
def test_every_marked_field_s_variable_is_refused_beside_the_file(tmp_path: Path, key: str) -> None:
    path = tmp_path / "sources.toml"
    path.write_text(A)
    variable = variable_of(SOURCE_KEYS[key])
    with pytest.raises(SettingsError, match=f"{variable} may not be set beside it"):
        load_sources(Settings(config_file=path), {variable: "1"})


def _documented_per_source() -> dict[str, str]:
    """The configuration file's table of a source's keys: each setting's key -> the variable the
    same row names at the same place."""
    text = CONFIGURATION.read_text()
    table = text[text.index("| key | required | meaning (the setting it replaces for this source) |") :]
    table = table[: table.index("\n\n")]
    documented: dict[str, str] = {}
    for row in table.splitlines()[2:]:
        keys_cell, _required, meaning = (cell.strip() for cell in row.strip("|").split("|"))
        keys = re.findall(r"`([a-z_]+)`", keys_cell)
        variables = re.findall(r"`(MCP_[A-Z0-9_]+)`", meaning)
        if set(keys) <= SOURCE_OWN_KEYS:
            continue
        assert len(keys) == len(variables), row
        documented |= dict(zip(keys, variables, strict=True))
    return documented


def test_every_marked_field_is_documented_per_source_with_its_variable_and_nothing_else_is() -> None:
    assert _documented_per_source() == {key: variable_of(name) for key, name in SOURCE_KEYS.items()}
