"""Every limit and option of the server, each defined once (docs/configuration.md).

Rooms, each importing only those below it (an import contract): `limits` (the wire contract's
fixed limits, not read from the environment) and `rules` (what one value may be: the field marks,
the parsers, the check, `Problem` and `SettingsError`); `model` (the one frozen `Settings`, each
option a field carrying its rule, its variable derived from its name, its per-source mark, and the
rules across fields); and the two channels a value comes by: `environment` (the `MCP_*` variables)
and `file` (the one TOML file's per-source settings). Each problem is named in the channel its
value came from. This module only gathers the names the package's users import. Must not import
trio or any tool module, nor do I/O on import.
"""

from __future__ import annotations

from mcp_suite.settings.environment import (
    FOREIGN_IN_FAMILIES,
    SETTING_FAMILIES,
    foreign_variables,
    load_settings,
)
from mcp_suite.settings.limits import (
    ARG_MAX_DEPTH,
    ARG_MAX_ITEMS,
    ARG_MAX_KEY_CHARS,
    AUDIT_SQL_MAX_CHARS,
    AUDIT_WRITE_WAIT_S,
    COMPLETION_MAX_VALUE_CHARS,
    COMPLETION_MAX_VALUES,
    ECHO_MAX_CHARS,
    INVISIBLE_SHOWN,
    MAX_FRAME_BYTES,
    MAX_JSON_DEPTH,
    MAX_SUBSCRIPTIONS,
    NAME_ECHO_CHARS,
    PROMETHEUS_MAX_CONNECTIONS,
    PROMETHEUS_TIMEOUT_S,
    REQUEST_STATE_MAX_CHARS,
    SQL_MAX_CHARS,
)
from mcp_suite.settings.model import (
    ENV_PREFIX,
    ENV_VARIABLES,
    SOURCE_KEYS,
    Settings,
    default_of,
    highest_of,
    variable_of,
)
from mcp_suite.settings.rules import LOOPBACK_HOSTS, SecretStr, SettingsError

__all__ = [
    "ARG_MAX_DEPTH",
    "ARG_MAX_ITEMS",
    "ARG_MAX_KEY_CHARS",
    "AUDIT_SQL_MAX_CHARS",
    "AUDIT_WRITE_WAIT_S",
    "COMPLETION_MAX_VALUES",
    "COMPLETION_MAX_VALUE_CHARS",
    "ECHO_MAX_CHARS",
    "ENV_PREFIX",
    "ENV_VARIABLES",
    "FOREIGN_IN_FAMILIES",
    "INVISIBLE_SHOWN",
    "LOOPBACK_HOSTS",
    "MAX_FRAME_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_SUBSCRIPTIONS",
    "NAME_ECHO_CHARS",
    "PROMETHEUS_MAX_CONNECTIONS",
    "PROMETHEUS_TIMEOUT_S",
    "REQUEST_STATE_MAX_CHARS",
    "SETTING_FAMILIES",
    "SOURCE_KEYS",
    "SQL_MAX_CHARS",
    "SecretStr",
    "Settings",
    "SettingsError",
    "default_of",
    "foreign_variables",
    "highest_of",
    "load_settings",
    "variable_of",
]
