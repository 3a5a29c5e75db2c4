"""The databases one server reads: named sources, from the configuration file or `MCP_SQL_DSN`.

Owns: the `[[sources]]` of the TOML configuration file (`MCP_CONFIG`, `--config`; read by
`settings.file`) as `Source`s, each a name, a description for the model, a connection string whose
password comes from a file or an environment variable the file names (never from the file itself),
and the settings of that source: the process's `Settings` with the source's own values of the
fields the model marks `per_source` in place (`settings.file.source_settings`). Without a file,
`MCP_SQL_DSN` and the `MCP_SQL_*` settings describe one source named `default`, as before.
A source's `[sources.identity]` table is its identity map (`tools.sql.engine.identity`, issue 42): over
HTTP each call reads as the role the caller's verified claims map to.
Every problem of the file is reported at once, naming the file, the source and the key, never a
value, as a `SettingsError` (exit 78). Reads the file and the password files; no network.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from mcp_suite.dsn import dsn_problem
from mcp_suite.settings import SOURCE_KEYS, SecretStr, Settings, SettingsError
from mcp_suite.settings.file import read_file, source_settings, variables_beside_file
from mcp_suite.tools.sql.curated.policy import CuratedTool, parse_tools
from mcp_suite.tools.sql.engine.identity import SUBJECT_KEY_BYTES, IdentityMap, parse_identity

__all__ = ["DEFAULT_SOURCE", "Source", "load_sources"]

DEFAULT_SOURCE: Final = "default"
_NAME: Final = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_DESCRIPTION_CHARS: Final = 200

# A source's keys: its own, and those of the settings it may set for itself (marked on their fields).
_KEYS: Final = frozenset(
    {
        "name",
        "description",
        "dsn",
        "password_file",
        "password_env",
        "identity",
        "tools",
        "free_sql",
        "schema",
        *SOURCE_KEYS,
    }
)


@dataclass(frozen=True, slots=True)
class Source:
    """One database the SQL tools read."""

    name: str
    description: str  # one line, for the model (the `initialize` instructions)
    dsn: SecretStr  # the connection string, password included
    settings: Settings  # the process's settings with this source's own values
    identity: IdentityMap | None = None  # who reads as which role over HTTP ([sources.identity])
    tools: tuple[CuratedTool, ...] = ()  # its curated tools ([[sources.tools]], issue 55)
    free_sql: bool = True  # false: read_only_sql and explain_sql refuse it (curated tools only)
    schema: bool = True  # false: sql_schema refuses it and its schema resource is not served


def load_sources(settings: Settings, environ: Mapping[str, str] | None = None) -> tuple[Source, ...]:
    """The sources this process serves: the file's, or `default` from `MCP_SQL_DSN`, or none.

    Raises `SettingsError` naming every problem of the file (unknown or missing keys, duplicate
    names, a password inline, a missing password file or variable, a value out of range), or a
    file set beside `MCP_SQL_DSN` or a per-source `MCP_SQL_*` variable.
    """
    env = os.environ if environ is None else environ
    if settings.config_file is None:
        if settings.sql_dsn is None:
            return ()
        return (Source(DEFAULT_SOURCE, "", settings.sql_dsn, settings),)
    path = settings.config_file
    beside = variables_beside_file(settings, env)
    if beside:
        raise SettingsError(
            f"{path}: a configuration file describes the sources, so {', '.join(beside)} may not be set "
            "beside it (each source's options go in the file)"
        )
    document = read_file(path)
    problems: list[str] = []
    unknown = sorted(set(document) - {"sources"})
    problems += [f"{path}: {key}: unknown key (the file holds [[sources]] tables)" for key in unknown]
    tables = document.get("sources")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        problems.append(f"{path}: no [[sources]] table: name at least one database")
        raise SettingsError("; ".join(problems))
    sources: list[Source] = []
    seen: set[str] = set()
    for index, table in enumerate(tables):
        # Counted from 1, as a reader counts the file's [[sources]] tables.
        where = f"{path}: source {index + 1}" + (
            f" ({table['name']})" if isinstance(table.get("name"), str) else ""
        )
        source = _source(table, settings, env, where, problems)
        if source is None:
            continue
        if source.name in seen:
            problems.append(f"{where}: name: another source has the name {source.name!r}")
            continue
        seen.add(source.name)
        sources.append(source)
    served: dict[str, str] = {}
    for source in sources:
        for tool in source.tools:
            other = served.setdefault(tool.served_name, source.name)
            if other != source.name:
                problems.append(
                    f"{path}: source {source.name}: tool {tool.name}: it would be served as "
                    f"{tool.served_name}, as a tool of the source {other!r} is: rename one"
                )
    if problems:
        raise SettingsError("; ".join(problems))
    return tuple(sources)


def _source(
    table: dict[str, Any], settings: Settings, env: Mapping[str, str], where: str, problems: list[str]
) -> Source | None:
    before = len(problems)
    for key in sorted(set(table) - _KEYS):
        close = difflib.get_close_matches(key, sorted(_KEYS), n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]}?)" if close else ""
        problems.append(f"{where}: {key}: unknown key{hint}")
    name = table.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        problems.append(f"{where}: name: required, lower-case letters, digits, - and _ (at most 40)")
    description = table.get("description")
    if not isinstance(description, str) or not description.strip() or "\n" in description:
        problems.append(f"{where}: description: required, one line for the model")
    elif len(description) > _DESCRIPTION_CHARS:
        problems.append(f"{where}: description: at most {_DESCRIPTION_CHARS} characters")
    dsn = _dsn(table, env, where, problems)
    identity = None
    if "identity" in table:
        identity = parse_identity(table["identity"], f"{where}: identity", problems)
        if identity is not None:
            identity = _with_subject_key(identity, f"{where}: identity", problems)
    own = source_settings(settings, table, dsn, where, problems)
    free_sql = table.get("free_sql", True)
    if not isinstance(free_sql, bool):
        problems.append(f"{where}: free_sql: true or false")
    schema = table.get("schema", True)
    if not isinstance(schema, bool):
        problems.append(f"{where}: schema: true or false")
    elif schema is False and free_sql is not False:
        problems.append(f"{where}: schema: false only with free_sql = false (free SQL needs the schema)")
    if len(problems) > before or own is None or dsn is None:
        return None
    if not isinstance(name, str) or not isinstance(description, str):
        return None
    tools: tuple[CuratedTool, ...] = ()
    if "tools" in table:
        tools = parse_tools(
            table["tools"],
            source=name,
            family_scope="sql:read",
            max_rows=own.sql_max_rows,
            max_result_bytes=own.sql_max_result_bytes,
            where=where,
            problems=problems,
        )
    if free_sql is False and not tools:
        problems.append(
            f"{where}: free_sql: false serves curated tools only; declare one ([[sources.tools]])"
        )
    if len(problems) > before:
        return None
    return Source(
        name, description.strip(), dsn, own, identity, tools, free_sql is not False, schema is not False
    )


def _dsn(table: dict[str, Any], env: Mapping[str, str], where: str, problems: list[str]) -> SecretStr | None:
    raw = table.get("dsn")
    if not isinstance(raw, str) or not raw.strip():
        problems.append(f"{where}: dsn: required, a libpq connection string without its password")
        return None
    problem = dsn_problem(raw)
    if problem is not None:
        problems.append(f"{where}: dsn: {problem}")
        return None
    from psycopg.conninfo import conninfo_to_dict, make_conninfo  # psycopg: the SQL tools need it anyway

    if "password" in conninfo_to_dict(raw):
        problems.append(f"{where}: dsn: holds a password; name a password_file or password_env instead")
        return None
    file, variable = table.get("password_file"), table.get("password_env")
    if file is not None and variable is not None:
        problems.append(f"{where}: password_file and password_env: one or the other")
        return None
    password: str | None = None
    if file is not None:
        if not isinstance(file, str):
            problems.append(f"{where}: password_file: a path")
            return None
        password = _read_password_file(Path(file), where, problems)
        if password is None:
            return None
    elif variable is not None:
        if not isinstance(variable, str):
            problems.append(f"{where}: password_env: the name of an environment variable")
            return None
        if not env.get(variable):
            problems.append(f"{where}: password_env: the environment variable {variable} is not set")
            return None
        password = env[variable]
    return SecretStr(make_conninfo(raw, password=password) if password is not None else raw)


def _read_password_file(path: Path, where: str, problems: list[str]) -> str | None:
    """The password a file holds (one trailing newline dropped), or None with the problem noted."""
    content = _read_private_file(path, f"{where}: password_file", problems)
    if content is None:
        return None
    try:
        return content.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError as exc:
        problems.append(f"{where}: password_file: cannot be read ({exc.reason})")
        return None


def _read_private_file(path: Path, where: str, problems: list[str]) -> bytes | None:
    """A secret file's bytes, or None with the problem noted (`where` names the file's key).

    Security: refused, as libpq refuses such a `.pgpass`, when its group or others may read or
    write it: a secret others can read is no longer a secret. The mode is checked on the file
    that is read (one descriptor), not on a name that could be swapped in between.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError as exc:
        problems.append(f"{where}: cannot be read ({exc.strerror})")
        return None
    with open(fd, "rb") as handle:
        mode = os.fstat(handle.fileno()).st_mode
        if mode & 0o077:
            problems.append(
                f"{where}: its group or others have access (mode {mode & 0o777:04o}); "
                "it should be readable by its owner alone: chmod 600"
            )
            return None
        try:
            return handle.read()
        except OSError as exc:
            problems.append(f"{where}: cannot be read ({exc.strerror})")
            return None


def _with_subject_key(identity: IdentityMap, where: str, problems: list[str]) -> IdentityMap:
    """`identity` with its `subject_key_file`'s key (at least SUBJECT_KEY_BYTES bytes, a trailing
    newline kept: it is bytes), or as it is (its key random for the process) without one."""
    if identity.subject_key_file is None:
        return identity
    key = _read_private_file(Path(identity.subject_key_file), f"{where}: subject_key_file", problems)
    if key is None:
        return identity
    if len(key) < SUBJECT_KEY_BYTES:
        problems.append(
            f"{where}: subject_key_file: at least {SUBJECT_KEY_BYTES} bytes "
            f"(head -c {SUBJECT_KEY_BYTES} /dev/urandom > FILE)"
        )
        return identity
    return dataclasses.replace(identity, subject_key=key)
