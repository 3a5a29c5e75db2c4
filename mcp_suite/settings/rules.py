"""The rules of the settings: what a value may be, and how each field is marked with its rule.

Owns: the field marks (`typed`, `flag`, `integer`, `number`, `one_of`: a field's types, range or
choices, the parser of its variable's text, whether a source may set it), the strict parsers of the
variables' text, the check of one value against its field's mark (`field_problem`), and `Problem`:
a sentence about some fields that each channel renders with its own name of each field (the `MCP_*`
variable, the configuration file's key), so no message is reworded after the fact. Pure: no I/O on
import, no environment; imports nothing of the package.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, get_args

__all__ = [
    "EXTENSION_NAMES",
    "FUNCTION_NAMES",
    "LOOPBACK_HOSTS",
    "ROLE_NAMES",
    "Names",
    "Parser",
    "Problem",
    "SecretStr",
    "SettingsError",
    "field_problem",
    "flag",
    "integer",
    "names",
    "number",
    "one_of",
    "typed",
]

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
CpuAffinity = Literal["single", "off"]
HttpAuth = Literal["jwt", "none"]
SqlPooler = Literal["none", "transaction"]
LOG_LEVELS: Final[tuple[str, ...]] = get_args(LogLevel)
AFFINITIES: Final[tuple[str, ...]] = get_args(CpuAffinity)
HTTP_AUTH_MODES: Final[tuple[str, ...]] = get_args(HttpAuth)
SQL_POOLERS: Final[tuple[str, ...]] = get_args(SqlPooler)
# The hosts `MCP_HTTP_AUTH=none` may bind: loopback only (docs/operations/remote.md).
LOOPBACK_HOSTS: Final = frozenset({"127.0.0.1", "::1", "localhost"})


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong with the settings: `text` about `fields`, whose `{0}`, `{1}`... stand for the
    fields' names in the channel the values came from (`render`)."""

    fields: tuple[str, ...]
    text: str

    def render(self, name_of: Callable[[str], str]) -> str:
        return self.text.format(*(name_of(field) for field in self.fields))


class SettingsError(Exception):
    """Configuration is invalid; the message names the variable(s) and never echoes a secret.

    `problems` holds the model's own problems (empty for a reader's), for a channel that names the
    fields otherwise than by their variables (the configuration file names them by its keys)."""

    def __init__(self, message: str, problems: Sequence[Problem] = ()) -> None:
        super().__init__(message)
        self.problems = tuple(problems)


class SecretStr:
    """A string that never shows itself: `repr` and `str` print asterisks; read it explicitly."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def get_secret_value(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "SecretStr('**********')"

    def __str__(self) -> str:
        return "**********"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SecretStr) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)


# The parsers of the variables' text. Strict: "5" is an int only for int fields, booleans only accept
# true/false/1/0/yes/no/on/off.
Parser = Callable[[str], object]
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


def parse_bool(raw: str) -> bool:
    low = raw.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError("expected true or false")


def parse_int(raw: str) -> int:
    text = raw.strip().replace("_", "")
    if not text or not (text.isdigit() or (text[0] == "-" and text[1:].isdigit())):
        raise ValueError("expected an integer")
    return int(text)


def parse_float(raw: str) -> float:
    try:
        value = float(raw.strip())
    except ValueError:
        raise ValueError("expected a number") from None
    if not math.isfinite(value):
        raise ValueError("expected a finite number")
    return value


def parse_path(raw: str) -> Path:
    if not raw or "\x00" in raw:
        raise ValueError("expected a path")
    return Path(raw)


def parse_dir(raw: str) -> Path:
    path = parse_path(raw)
    # A client starts the server in a working directory of its own choosing: a relative path would
    # quietly mean a folder nobody named.
    if not path.is_absolute():
        raise ValueError("must be an absolute path")
    if not path.is_dir():
        raise ValueError("must be an existing directory")
    return path


def parse_dsn(raw: str) -> SecretStr:
    from mcp_suite.dsn import dsn_problem  # only when a DSN is set (it loads libpq's keywords)

    problem = dsn_problem(raw)
    if problem:
        raise ValueError(problem)
    return SecretStr(raw)


@dataclass(frozen=True, slots=True)
class Names:
    """The rule of a list of names, in either channel: which name is valid, and the sentence saying
    so, whose `{sep}` is where a variable's wording says how its one string holds the names."""

    valid: Callable[[str], bool]
    wording: str

    def parse(self, raw: str) -> tuple[str, ...]:
        """A variable's names: separated by commas, each stripped, the empty ones dropped."""
        names = tuple(part.strip() for part in raw.split(",") if part.strip())
        if not all(self.valid(name) for name in names):
            raise ValueError(self.wording.format(sep=", separated by commas"))
        return names

    def problem(self, value: tuple[object, ...]) -> str | None:
        """What is wrong with a list of names given whole (the configuration file's): the same rule."""
        if all(isinstance(name, str) and name and self.valid(name) for name in value):
            return None
        return self.wording.format(sep="")


def _function_name(name: str) -> bool:
    schema, dot, function = name.partition(".")
    return bool(schema and dot and function) and "." not in function and not any(c in name for c in " ()\"'")


FUNCTION_NAMES: Final = Names(_function_name, "expected schema.function names{sep}")
ROLE_NAMES: Final = Names(
    lambda name: not any(c in name for c in "\"'"),
    "expected role names as PostgreSQL stores them{sep} (no quotes)",
)
EXTENSION_NAMES: Final = Names(
    lambda name: not any(c in name for c in "\"' "),
    "expected extension names as pg_extension holds them{sep}",
)


def parse_host(raw: str) -> str:
    host = raw.strip()
    if not host or any(c in host for c in " /[]"):
        raise ValueError("expected a host name or an IP address (no brackets, no port)")
    return host


def parse_endpoint_path(raw: str) -> str:
    path = raw.strip()
    if not path.startswith("/") or path == "/" or path.endswith("/") or any(c in path for c in " ?#%"):
        raise ValueError("expected a path such as /mcp (no trailing slash, query or fragment)")
    return path


def parse_url(raw: str) -> str:
    from urllib.parse import urlsplit  # only when an HTTP setting is set

    url = raw.strip()
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.fragment or " " in url:
        raise ValueError("expected an absolute http(s) URL without a fragment")
    return url


def parse_origins(raw: str) -> tuple[str, ...]:
    from urllib.parse import urlsplit

    origins = tuple(part.strip().lower() for part in raw.split(",") if part.strip())
    for origin in origins:
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.path or parts.query:
            raise ValueError("expected origins as scheme://host[:port], separated by commas")
    return origins


def parse_service_name(raw: str) -> str:
    name = raw.strip()
    if not name or len(name) > 128 or not name.isprintable():
        raise ValueError("expected a printable name of at most 128 characters")
    return name


def _choice(choices: tuple[str, ...], *, aliases: Mapping[str, str] | None = None) -> Parser:
    """The parser of a field with `choices`, all in one case: any case is read (`warn`, ` OFF `)."""
    fold = str.upper if choices[0].isupper() else str.lower
    wording = f"expected {', '.join(choices[:-1])} or {choices[-1]}"

    def parse(raw: str) -> str:
        value = fold(raw.strip())
        value = (aliases or {}).get(value, value)
        if value not in choices:
            raise ValueError(wording)
        return value

    return parse


# Each field of `Settings` is one option, written once: its rule (the types, range or choices that
# `Settings` checks), its parser (`parse`, None for a field not read from the environment) and, for
# a setting a source of the configuration file may set for itself, `per_source` (its key there is
# the field's name without `sql_`). Its variable is `MCP_` + the field's name upper-cased, or `MCP_`
# + the `variable` its metadata names.
def _marks(rule: dict[str, Any], *, per_source: bool) -> dict[str, Any]:
    return rule | ({"per_source": True} if per_source else {})


def typed(
    *types: type, parse: Parser, variable: str | None = None, per_source: bool = False
) -> dict[str, Any]:
    rule = {"types": types, "parse": parse} | ({"variable": variable} if variable else {})
    return _marks(rule, per_source=per_source)


def names(rule: Names, *, per_source: bool = False) -> dict[str, Any]:
    return _marks({"types": (tuple,), "parse": rule.parse, "names": rule}, per_source=per_source)


def flag(*, per_source: bool = False) -> dict[str, Any]:
    return typed(bool, parse=parse_bool, per_source=per_source)


def integer(low: int, high: int, *, env: bool = True, per_source: bool = False) -> dict[str, Any]:
    rule = {"kind": int, "low": low, "high": high, "parse": parse_int if env else None}
    return _marks(rule, per_source=per_source)


def number(low: float, high: float, *, low_open: bool = False, per_source: bool = False) -> dict[str, Any]:
    rule = {"kind": float, "low": low, "high": high, "low_open": low_open, "parse": parse_float}
    return _marks(rule, per_source=per_source)


def one_of(
    choices: tuple[str, ...], *, aliases: Mapping[str, str] | None = None, per_source: bool = False
) -> dict[str, Any]:
    return _marks({"choices": choices, "parse": _choice(choices, aliases=aliases)}, per_source=per_source)


def field_problem(spec: dataclasses.Field[Any], value: object) -> Problem | None:
    """What is wrong with `value` for field `spec`; None when it is valid.

    Strict, like the environment parsers: a bool is not an int, a string is not a number, an
    integer is accepted for a float; numbers must be finite and inside the field's range.
    """
    rule = spec.metadata
    if "kind" in rule:
        kind = rule["kind"]
        wrong_kind = kind is int and isinstance(value, float)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or wrong_kind:
            return _about(spec, f"expected {'a number' if kind is float else 'an integer'}")
        if not math.isfinite(value):
            return _about(spec, "expected a finite number")
        low, high = rule["low"], rule["high"]
        too_low = value <= low if rule.get("low_open") else value < low
        if too_low or value > high:
            bound = "above" if rule.get("low_open") else "at least"
            return _about(spec, f"must be {bound} {low} and at most {high}")
        return None
    if "choices" in rule:
        return (
            None
            if value in rule["choices"]
            else _about(spec, f"expected one of {', '.join(rule['choices'])}")
        )
    if not isinstance(value, rule["types"]):
        return _about(spec, "invalid value")
    problem = rule["names"].problem(value) if "names" in rule else None
    return None if problem is None else _about(spec, problem)


def _about(spec: dataclasses.Field[Any], text: str) -> Problem:
    return Problem((spec.name,), "{0}: " + text)
