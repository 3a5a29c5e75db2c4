"""The configuration file's channel: the one TOML file (`MCP_CONFIG`, `--config`; the standard
library's tomllib) and the settings a source of it sets for itself.

Owns: reading the file into its document (`read_file`), the variables that may not be set beside it
(`variables_beside_file`), and a source's own `Settings` from its table (`source_settings`): the
process's settings with the values of the keys the model marks `per_source` (`SOURCE_KEYS`) in
place, every problem named by the file's key (a setting no source sets by its variable). The
sources themselves (names, connection strings, passwords, identity maps) are the SQL family's
(`tools/sql/sources.py`). Reads the one file it is given; no network.
"""

from __future__ import annotations

import dataclasses
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from mcp_suite.settings.model import ENV_PREFIX, SOURCE_KEYS, Settings, name_of_field, variable_of
from mcp_suite.settings.rules import SecretStr, SettingsError

__all__ = ["read_file", "source_settings", "variables_beside_file"]

# field -> its key in a source's table (SOURCE_KEYS turned around).
_KEY_OF: Final[Mapping[str, str]] = {field_name: key for key, field_name in SOURCE_KEYS.items()}


def read_file(path: Path) -> dict[str, Any]:
    """The file's TOML document; raises `SettingsError` naming the file when it cannot be read or
    is not TOML."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"{path}: cannot be read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise SettingsError(f"{path}: not valid TOML ({exc})") from None


def variables_beside_file(settings: Settings, environ: Mapping[str, str]) -> list[str]:
    """The variables set beside the file that the file's sources replace: `MCP_SQL_DSN`, the audit's
    DSN (it must lead to each source's own role and database) and each per-source setting's."""
    beside = [ENV_PREFIX + "SQL_DSN"] if settings.sql_dsn is not None else []
    beside += [ENV_PREFIX + "SQL_AUDIT_DSN"] if settings.sql_audit_dsn is not None else []
    return beside + [name for name in map(variable_of, _KEY_OF) if environ.get(name)]


def _name_in_file(field_name: str) -> str:
    """A field's name in a source's table: its key; a setting the file does not set keeps its
    variable (the call deadline a statement timeout must stay below)."""
    return _KEY_OF.get(field_name) or name_of_field(field_name)


def source_settings(
    settings: Settings, table: Mapping[str, Any], dsn: SecretStr | None, where: str, problems: list[str]
) -> Settings | None:
    """`settings` with `dsn` and the per-source values `table` holds, or None with each problem of
    those values noted, named `where: key` (a key whose value is not a list where one is due is
    left out, its problem noted, and the rest still checked)."""
    overrides: dict[str, Any] = {}
    for key, field_name in SOURCE_KEYS.items():
        if key not in table:
            continue
        value = table[key]
        if tuple in Settings.__dataclass_fields__[field_name].metadata.get("types", ()):
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                problems.append(f"{where}: {key}: a list of strings")
                continue
            value = tuple(value)
        overrides[field_name] = value
    try:
        return dataclasses.replace(settings, sql_dsn=dsn, **overrides)
    except SettingsError as exc:
        # The model's problems, each named in the file; its message names variables, so it is not used.
        problems += [f"{where}: {problem.render(_name_in_file)}" for problem in exc.problems]
        return None
