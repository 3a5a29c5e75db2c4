"""The environment's channel: `Settings` from the `MCP_*` variables.

Owns: reading the variables (each parsed by its field's parser, `model.PARSERS`), telling this
server's misspelt names from another program's (`SETTING_FAMILIES`, `FOREIGN_IN_FAMILIES`), and
naming every problem by its variable. Must not list the names the project's tooling reads (except
the one inside a family of ours, `FOREIGN_IN_FAMILIES`); reads `os.environ` only when called.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Final

from mcp_suite.settings.model import ENV_PREFIX, ENV_VARIABLES, PARSERS, Settings
from mcp_suite.settings.rules import SettingsError

__all__ = ["FOREIGN_IN_FAMILIES", "SETTING_FAMILIES", "foreign_variables", "load_settings"]

# Name families of this server's own settings: an unknown name in one is a misspelling of ours.
# Other programs share the `MCP_` prefix in the same environments (Claude Code's `MCP_TIMEOUT`,
# a harness's `MCP_SUITE_CHECKOUT`, the project's own container scripts), so a name outside these
# families is refused only when it is within `_TYPO_DISTANCE` edits of a known name.
SETTING_FAMILIES: Final = (
    "MCP_SQL_",
    "MCP_FS_",
    "MCP_SAFE_",
    "MCP_METRICS_",
    "MCP_HTTP_",
    "MCP_OTEL_",
    "MCP_PROMETHEUS_",
)
_TYPO_DISTANCE: Final = 2
# Another program's names inside a family of ours (the host folder a container mounts as
# MCP_SAFE_DATA_DIR): foreign like any other program's, not misspellings. Only a name a family would
# claim belongs here: a name outside the families and far from ours is foreign without a list
# (tests/unit/settings/test_settings_variables.py proves this holds exactly what the project's tooling needs).
FOREIGN_IN_FAMILIES: Final = frozenset({"MCP_SAFE_DATA_HOST_DIR"})


def _within_edits(a: str, b: str, limit: int) -> bool:
    """Whether `a` becomes `b` in at most `limit` single-character insertions, deletions or changes."""
    if abs(len(a) - len(b)) > limit:
        return False
    previous = list(range(len(b) + 1))
    for i, char in enumerate(a, 1):
        current = [i]
        for j, other in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char != other)))
        if min(current) > limit:
            return False
        previous = current
    return previous[-1] <= limit


def _is_ours(name: str) -> bool:
    """An unknown `MCP_*` name that can only be a misspelling of one of this server's settings."""
    if name in FOREIGN_IN_FAMILIES:
        return False
    return name.startswith(SETTING_FAMILIES) or any(
        _within_edits(name, known, _TYPO_DISTANCE) for known in ENV_VARIABLES
    )


def _unknown_variables(env: Mapping[str, str]) -> list[str]:
    """A problem per unknown `MCP_*` name that is a likely misspelling of one of this server's
    (`_is_ours`): a misspelt name must not keep a default silently."""
    import difflib  # only when there is a stranger to name

    problems = []
    for name in sorted(env):
        if not name.startswith(ENV_PREFIX) or name in PARSERS or not _is_ours(name):
            continue
        close = difflib.get_close_matches(name, ENV_VARIABLES, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]}?" if close else "see docs/configuration.md for the known names"
        problems.append(f"{name}: not a known setting ({hint})")
    return problems


def foreign_variables(environ: Mapping[str, str] | None = None) -> list[str]:
    """The `MCP_*` names that are neither this server's nor likely misspellings of them: another
    program's (the server ignores them, and says so once at start-up)."""
    env = os.environ if environ is None else environ
    return sorted(n for n in env if n.startswith(ENV_PREFIX) and n not in PARSERS and not _is_ours(n))


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build `Settings` from `MCP_*` variables.

    An empty variable counts as unset; an `MCP_*` name that is not a setting is refused, with the
    nearest known name, when it is a likely misspelling of ours (in a family of ours, or a couple of
    edits from a known name); another program's is left alone (`foreign_variables`). Every problem
    is collected and reported together, unknown names, values and ranges alike, naming the variable
    and the rule, never the value (the DSN is secret; other values are not needed to fix it).
    """
    env = os.environ if environ is None else environ
    values: dict[str, object] = {}
    problems = _unknown_variables(env)
    for name, (field_name, parser) in PARSERS.items():
        raw = env.get(name)
        if raw is None or raw == "":
            continue
        try:
            values[field_name] = parser(raw)
        except ValueError as exc:
            problems.append(f"{name}: {exc}")
    try:
        settings = Settings(**values)  # type: ignore[arg-type]  # values are typed by their parsers
    except SettingsError as exc:  # the ranges and the rules across settings, named by their variables
        problems.append(str(exc))
    if problems:
        raise SettingsError("; ".join(problems))
    return settings
