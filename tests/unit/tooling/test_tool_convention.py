"""Every hand-kept list of the tools agrees with the tools themselves (tests/support/convention.py):
the layout of each family, the registry's openers, the MCP bundle's manifest, the scope table of
docs/operations/remote.md, the container smoke tests, the setting families and the mutation list.
A new tool that skips a step fails here, saying which file to edit."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from mcp_suite.settings import ENV_VARIABLES, SETTING_FAMILIES, SecretStr, Settings, variable_of
from mcp_suite.tools.registry import open_registry
from tests.support import convention

# A database nobody listens on: the start-up audit cannot connect, which is not fatal, and the SQL
# tools are registered all the same (nothing here calls them).
_NO_DATABASE = "postgresql://reader:secret@127.0.0.1:1/mcp_demo"


def _variables() -> dict[str, str]:
    """Each settings field's variable (a field no variable sets is left out)."""
    found = {}
    for field in dataclasses.fields(Settings):
        try:
            found[field.name] = variable_of(field.name)
        except KeyError:
            continue
    return found


def test_the_registry_serves_every_face_of_the_convention_with_its_family_s_scope(tmp_path: Path) -> None:
    settings = Settings(sql_dsn=SecretStr(_NO_DATABASE), safe_data_dir=tmp_path, sql_connect_timeout_s=1.0)
    expected = {face.name: family.scope for family in convention.families().values() for face in family.faces}
    with open_registry(settings) as registry:
        assert {name: spec.scope for name, spec in registry.tools.items()} == expected


def test_every_family_has_one_layout_and_every_face_is_alone_in_its_package() -> None:
    assert convention.check_layout() == []


def test_the_registry_opens_every_family() -> None:
    assert convention.check_registry() == []


def test_the_bundle_manifest_lists_every_tool() -> None:
    assert convention.check_manifest() == []


def test_the_scope_table_names_each_family_s_tools_and_the_docs_every_scope() -> None:
    assert convention.check_scope_docs() == []


def test_every_tool_has_its_page_and_its_row_in_the_tools_readme() -> None:
    assert convention.check_tool_docs() == []


def test_the_container_smoke_tests_expect_every_tool_and_scope() -> None:
    assert convention.check_smoke_lists() == []


def test_a_setting_only_a_family_reads_is_in_a_setting_family() -> None:
    variables = _variables()
    assert sorted(variables.values()) == sorted(ENV_VARIABLES)
    assert convention.check_setting_families(convention.REPO, variables, SETTING_FAMILIES) == []


def test_the_settings_check_sees_what_each_family_reads() -> None:
    variables = _variables()
    read = {
        name: set().union(*(convention.fields_read(p, variables) for p in family.path.rglob("*.py")))
        for name, family in convention.families().items()
    }
    assert {"metrics_disk_path"} <= read["metrics"]
    assert {"fs_max_bytes", "fs_list_max_bytes", "safe_data_dir"} <= read["files"]
    assert {"sql_max_rows", "sql_pool_max_size"} <= read["sql"]


def test_every_guardrail_module_of_the_mutation_list_exists_in_a_family() -> None:
    assert convention.check_mutation_modules() == []
